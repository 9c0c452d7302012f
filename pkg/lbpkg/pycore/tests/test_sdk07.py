"""SDK 0.7 (LangBot 4.11 and 4.12) as the core meets it, faked from the facts.

Nothing here ran on SDK 0.7: no 0.7 runtime is readable on our machines.
Each fake is written from ../shared/research/langbot-4.11.md (issue 28):

- the events module gains ``MessageReceived``, which carries ``bot_uuid``,
  ``chat_type`` and ``chat_id``;
- a command context may lack ``query_uuid`` (test_core.CommandTest);
- a dedicated worker runs ``initialize`` in an invocation that ends when it
  returns: a later ``get_config()``, ``get_installation_binding()`` or read
  of ``config`` raises RuntimeError("Plugin invocation has ended").
"""

from __future__ import annotations

import asyncio
import json
import types
import typing
import unittest

from langbot_nats import components as c
from langbot_nats import protocol as p
from langbot_nats.plugin import ForwardingPlugin
from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.api.entities import events as sdk_events

from test_core import DECIDES, GEN, URL, Base, FakeEventContext, _async, config, execute_context, new_binding, ok


class MessageReceived:
    """0.7's MessageReceived as the facts describe it (an Agent route's only
    message event): the bot, the chat's type and id, and the message."""

    def __init__(self, bot_uuid: str, chat_type: str, chat_id: str, text: str) -> None:
        self.bot_uuid, self.chat_type, self.chat_id = bot_uuid, chat_type, chat_id
        self.message_chain = [{"type": "Plain", "text": text}]

    def model_dump(self, mode: str = "python") -> dict[str, typing.Any]:
        return {"bot_uuid": self.bot_uuid, "chat_type": self.chat_type, "chat_id": self.chat_id, "message_chain": self.message_chain}


# 0.7's events module: 0.5.5's classes plus MessageReceived.
SDK07_EVENTS = types.SimpleNamespace(
    PersonMessageReceived=sdk_events.PersonMessageReceived,
    GroupMessageReceived=sdk_events.GroupMessageReceived,
    NormalMessageResponded=sdk_events.NormalMessageResponded,
    MessageReceived=MessageReceived,
)


def generated(events: list[str], optional: list[str]) -> p.Generated:
    return p.Generated(protocol=GEN.protocol, plugin={**GEN.plugin, "events": events, "optional_events": optional})


class ListenerTest(unittest.TestCase):
    def test_message_received_only_where_the_sdk_has_it(self) -> None:
        gen = generated(["GroupMessageReceived", "MessageReceived"], ["MessageReceived"])
        with self.assertLogs("langbot_nats", "INFO") as logs:
            got = c.listened_events(gen, sdk_events)  # 0.5.5
        self.assertEqual(got, [sdk_events.GroupMessageReceived])
        self.assertFalse([r for r in logs.records if r.levelname == "ERROR"], "an optional event missing is no error")
        self.assertEqual(c.listened_events(gen, SDK07_EVENTS), [sdk_events.GroupMessageReceived, MessageReceived])

    def test_unknown_required_event_is_an_error(self) -> None:
        with self.assertLogs("langbot_nats", "ERROR"):
            self.assertEqual(c.listened_events(generated(["NoSuchEvent"], []), SDK07_EVENTS), [])

    def test_builder_marks_optional_events(self) -> None:
        self.assertLessEqual(set(GEN.plugin["optional_events"]), set(GEN.plugin["events"]))


class MessageReceivedContext(FakeEventContext):
    """A 0.7 event context of MessageReceived, without query_uuid."""

    def __init__(self) -> None:
        super().__init__()
        del self.query_uuid
        self.event_name = "MessageReceived"
        self.event = MessageReceived("bot-7", "group", "g1", "hello")  # type: ignore[assignment]


class MessageReceivedTest(Base):
    async def test_forwarded_as_today_with_the_bot_it_carries(self) -> None:
        seen = await self.serve("event", lambda m: _async(ok({"prevent_default": True})))
        ctx = MessageReceivedContext()
        await c.forward_event(self.fw, DECIDES, ctx)
        self.assertEqual(ctx.bot_asked, 0, "the event carries its bot: LangBot is not asked")
        self.assertTrue(ctx.is_prevent_default)
        body = json.loads(seen[0].data)["event"]
        self.assertEqual((body["name"], body["bot_uuid"]), ("MessageReceived", "bot-7"))
        self.assertEqual((body["data"]["chat_type"], body["data"]["chat_id"]), ("group", "g1"))
        self.assertNotIn("query_uuid", body)


class Handler:
    """The worker's runtime connection: the trusted binding and host actions."""

    def __init__(self, plugin: "Guarded", binding: dict[str, typing.Any]) -> None:
        self._plugin, self._binding = plugin, binding
        self.actions: list[str] = []

    @property
    def bound_action_context(self) -> typing.Any:
        self._plugin.check("bound_action_context")
        binding = self._binding

        class Bound:
            def model_dump(self) -> dict[str, typing.Any]:
                return dict(binding)

        return Bound()

    async def call_action(self, action: typing.Any, data: dict[str, typing.Any], timeout: float = 0) -> dict[str, typing.Any]:
        self.actions.append(str(getattr(action, "value", action)))
        return {}


class Guarded(ForwardingPlugin):
    """A plugin whose invocation-scoped APIs raise, as 0.7's do, once the
    invocation that ran initialize has ended."""

    def __init__(self, cfg: dict[str, typing.Any], binding: dict[str, typing.Any]) -> None:
        self._cfg, self._binding = cfg, binding
        self.in_invocation = True
        self.violations: list[str] = []
        super().__init__()
        self.plugin_runtime_handler = Handler(self, binding)

    def check(self, what: str) -> None:
        if not self.in_invocation:
            self.violations.append(what)
            raise RuntimeError("Plugin invocation has ended")

    @property  # type: ignore[override]
    def config(self) -> dict[str, typing.Any]:
        self.check("config")
        return self._cfg

    @config.setter
    def config(self, value: dict[str, typing.Any]) -> None:
        self._cfg = value

    def get_config(self) -> dict[str, typing.Any]:
        self.check("get_config")
        return dict(self._cfg)

    def get_installation_binding(self) -> dict[str, typing.Any]:
        self.check("get_installation_binding")
        return dict(self._binding)


class InvocationScopeTest(unittest.IsolatedAsyncioTestCase):
    """Guard: after initialize returns, the core never calls an API that SDK
    0.7 scopes to an invocation: not from its background task (connect,
    attach, host actions) and not while forwarding."""

    async def test_nothing_invocation_scoped_after_initialize(self) -> None:
        if not URL:
            self.skipTest("LANGBOT_NATS_TEST_URL not set")
        import nats

        binding = new_binding()
        plugin = Guarded(config(), binding)
        await plugin.initialize()
        plugin.in_invocation = False  # 0.7 ends the invocation here
        fw = plugin.forwarder
        self.assertIsNotNone(fw)
        try:
            for _ in range(400):  # connected and attached, in the background
                if fw.attach_acks >= 1:
                    break
                await asyncio.sleep(0.025)
            self.assertGreaterEqual(fw.attach_acks, 1)
            nc = await nats.connect(URL)
            try:
                subj = p.subject(GEN, "host", prefix="langbot", action="send_message", scope=fw.scope)
                body = {"binding": binding, "plugin": GEN.name, "data": {"bot_uuid": "b", "target_type": "group", "target_id": "1", "message_chain": []}}
                for _ in range(200):
                    try:
                        reply = await nc.request(subj, json.dumps(body).encode(), timeout=5)
                        break
                    except nats.errors.NoRespondersError:
                        await asyncio.sleep(0.01)
                self.assertEqual(json.loads(reply.data), {})
                self.assertEqual(plugin.plugin_runtime_handler.actions, ["send_message"])
            finally:
                await nc.close()
            cmd = c.ForwardingCommand()
            cmd.command_name = "x"
            cmd.plugin = plugin  # type: ignore[assignment]
            [r async for r in cmd._execute(execute_context("!x"))]
            await c.forward_tool(fw, GEN, "t", {}, execute_context("!x").session, None)
            await c.forward_page(fw, GEN, "console", PageRequest(endpoint="/info", method="GET"))
            await c.forward_event(fw, GEN, FakeEventContext())
            self.assertEqual(plugin.violations, [])
        finally:
            await fw.close()
