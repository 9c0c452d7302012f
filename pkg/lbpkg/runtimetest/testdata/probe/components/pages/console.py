from __future__ import annotations

from langbot_plugin.api.definition.components.page import Page, PageRequest, PageResponse


class ProbePage(Page):
    async def handle_api(self, request: PageRequest) -> PageResponse:
        if request.endpoint == "/fail":
            return PageResponse.fail("400: refused")
        return PageResponse.ok({"endpoint": request.endpoint, "method": request.method, "body": request.body})
