from __future__ import annotations

from langbot_plugin.api.definition.components.common.event_listener import EventListener
from langbot_plugin.api.entities import context, events


class ProbeListener(EventListener):
    """Blocks a group message whose text contains "block" once LangBot
    has told it the query's bot (get_bot_uuid) is "bot-1"."""

    def __init__(self):
        super().__init__()

        @self.handler(events.GroupMessageReceived)
        async def on_group(ctx: context.EventContext):
            text = "".join(getattr(c, "text", "") or "" for c in ctx.event.message_chain)
            if "block" in text and await ctx.get_bot_uuid() == "bot-1":
                ctx.prevent_default()
                ctx.prevent_postorder()
