from __future__ import annotations

import asyncio

from langbot_plugin.api.definition.components.common.event_listener import EventListener
from langbot_plugin.api.entities import context, events


class ProbeListener(EventListener):
    """Blocks a group message whose text contains "block" once LangBot
    has told it the query's bot (get_bot_uuid) is "bot-1". For "ask" it
    sends get_bot_uuid and returns without its answer (what asking costs
    the event when nothing waits for it)."""

    def __init__(self):
        super().__init__()
        self.asked = set()

        @self.handler(events.GroupMessageReceived)
        async def on_group(ctx: context.EventContext):
            text = "".join(getattr(c, "text", "") or "" for c in ctx.event.message_chain)
            if text == "ask":
                task = asyncio.get_running_loop().create_task(ctx.get_bot_uuid())
                self.asked.add(task)
                task.add_done_callback(self.asked.discard)
                await asyncio.sleep(0)  # the request is written
                return
            if "block" in text and await ctx.get_bot_uuid() == "bot-1":
                ctx.prevent_default()
                ctx.prevent_postorder()
