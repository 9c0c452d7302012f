from __future__ import annotations

from typing import Any

from langbot_plugin.api.definition.components.tool.tool import Tool
from langbot_plugin.api.entities.builtin.provider import session as provider_session


class ProbeEcho(Tool):
    async def call(self, params: dict[str, Any], session: provider_session.Session, query_id: int) -> dict[str, Any]:
        return {"echo": params, "launcher_id": str(session.launcher_id)}
