from __future__ import annotations

import json
from typing import AsyncGenerator

from langbot_plugin.api.definition.components.command.command import Command
from langbot_plugin.api.entities.builtin.command.context import CommandReturn, ExecuteContext
from langbot_plugin.api.entities.builtin.platform import message as platform_message


class ProbeCommand(Command):
    """!probe w1 w2 ... answers one return per word (so a stream has several
    chunks); !probe send <group> <text>, !probe bots and !probe bot <uuid>
    call LangBot back through the runtime."""

    async def _execute(self, context: ExecuteContext) -> AsyncGenerator[CommandReturn, None]:
        words = list(context.crt_params)
        if words[:1] == ["send"] and len(words) >= 3:
            chain = platform_message.MessageChain([platform_message.Plain(text=" ".join(words[2:]))])
            await self.plugin.send_message(context.session.bot_uuid, "group", words[1], chain)
            yield CommandReturn(text="sent")
            return
        if words[:1] == ["bots"]:
            yield CommandReturn(text=json.dumps(await self.plugin.get_bots()))
            return
        if words[:1] == ["bot"] and len(words) == 2:
            yield CommandReturn(text=json.dumps(await self.plugin.get_bot_info(words[1])))
            return
        if words[:1] == ["config"]:
            yield CommandReturn(text=json.dumps(self.plugin.get_config(), sort_keys=True))
            return
        for w in words:
            yield CommandReturn(text=w)
