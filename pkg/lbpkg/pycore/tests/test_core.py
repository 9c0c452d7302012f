"""Unit tests of the forwarding core (PK-8), run by pkg/lbpkg's Go tests.

They run against a built package (its generated.json, its bundled nats-py)
and a real NATS server (LANGBOT_NATS_TEST_URL); the service side is played
by NATS responders in the test and LangBot's runtime by a recording object.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import time
import typing
import unittest

import nats
import nats.errors

from langbot_nats import protocol as p
from langbot_nats import components as c
from langbot_nats import forwarder as f
from langbot_nats.forwarder import Forwarder, HostCallFailed, HostTimeout
from langbot_nats.plugin import ForwardingPlugin
from langbot_plugin.api.definition.components.page import PageRequest
from langbot_plugin.api.entities.builtin.command.context import ExecuteContext

URL = os.environ.get("LANGBOT_NATS_TEST_URL", "")
GEN = p.load()
# The package's generated.json as a service that decides its events
# (HumanTakeover) and as one that only observes them (observe_events).
DECIDES = p.Generated(protocol=GEN.protocol, plugin={**GEN.plugin, "observe_events": False})
OBSERVES = p.Generated(protocol=GEN.protocol, plugin={**GEN.plugin, "observe_events": True})
# ... and as one that gives an event gate (HumanTakeover's declaration).
GATED = p.Generated(protocol=GEN.protocol, plugin={**GEN.plugin, "observe_events": False, "event_gate": True})
PKG_KEYS = GEN.protocol["package_config_keys"]


def new_binding(**over: typing.Any) -> dict[str, typing.Any]:
    b = {
        "instance_uuid": "inst-" + secrets.token_hex(4),
        "workspace_uuid": "ws-" + secrets.token_hex(4),
        "placement_generation": 1,
        "installation_uuid": "inst_" + secrets.token_hex(6),
        "runtime_revision": 1,
        "artifact_digest": "a" * 64,
    }
    b.update(over)
    return b


def config(**over: typing.Any) -> dict[str, typing.Any]:
    cfg = {
        "nats_url": URL,
        "nats_user": "",
        "nats_password": "marker-password-1",
        "nats_token": "",
        "nats_tls_ca": "",
        "subject_prefix": "langbot",
        "language": "en_US",
        "some_service_item": 7,
    }
    cfg.update(over)
    return cfg


def forwarded() -> dict[str, typing.Any]:
    """The config config() forwards: the service's items as given."""
    return {"language": "en_US", "some_service_item": 7}


class Recorder:
    """LangBot's runtime as the host-action server sees it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, typing.Any]]] = []
        self.fail: Exception | None = None
        self.models: list[str] = ["model-a", "model-b"]

    async def call(self, action: str, data: dict[str, typing.Any], timeout: float) -> dict[str, typing.Any]:
        self.calls.append((action, data))
        if self.fail is not None:
            raise self.fail
        if action == "get_bots":
            return {"bots": [{"uuid": "b1"}]}
        if action == "get_llm_models":
            return {"llm_models": list(self.models)}
        if action == "invoke_llm":
            return {"message": {"role": "assistant", "content": [{"type": "text", "text": "answer to "}, {"type": "text", "text": data["messages"][-1]["content"]}]}}
        return {}


class Base(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        if not URL:
            self.skipTest("LANGBOT_NATS_TEST_URL not set")
        self.nc = await nats.connect(URL)
        self.binding = new_binding()
        self.runtime = Recorder()
        self.fw = Forwarder(GEN, self.binding, config(), self.runtime)
        self.fw.start()
        await asyncio.wait_for(self.fw._connected.wait(), 5)

    async def asyncTearDown(self) -> None:
        await self.fw.close()
        await self.nc.close()

    async def until(self, cond: typing.Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 10
        while not cond():
            if time.monotonic() > deadline:
                self.fail("never: " + what)
            await asyncio.sleep(0.01)

    def subject(self, endpoint: str) -> str:
        return p.subject(GEN, "invocation", prefix="langbot", plugin=GEN.name, endpoint=endpoint, scope=self.fw.scope)

    async def serve(self, endpoint: str, reply: typing.Callable[[typing.Any], typing.Awaitable[tuple[dict[str, str], bytes] | None]]):
        """A service stand-in: records each request and answers with reply(msg)."""
        seen: list[typing.Any] = []

        async def cb(msg: typing.Any) -> None:
            if msg.headers and msg.headers.get("Test-Probe"):
                await self.nc.publish(msg.reply, b"{}")
                return
            seen.append(msg)
            out = await reply(msg)
            if out is not None:
                await self.nc.publish(msg.reply, out[1], headers=out[0])

        await self.nc.subscribe(self.subject(endpoint), cb=cb)
        await self.nc.flush()
        # A flushed subscription can still be unseen by another connection
        # for a moment (no responders): probe until the forwarder's
        # connection reaches it.
        for _ in range(100):
            try:
                await self.fw._nc.request(self.subject(endpoint), b"", timeout=1, headers={"Test-Probe": "1"})
                break
            except nats.errors.NoRespondersError:
                await asyncio.sleep(0.01)
        return seen


def ok(body: typing.Any) -> tuple[dict[str, str], bytes]:
    return {"Content-Type": "application/json"}, json.dumps(body).encode()


def fail(code: int, message: str, reason: str = "") -> tuple[dict[str, str], bytes]:
    return p.encode_error(GEN, p.make_error(GEN, code, message, reason))


class Plugin:
    """What a component sees of its plugin."""

    def __init__(self, fw: Forwarder | None) -> None:
        self.forwarder = fw
        self.generated = GEN


def execute_context(text: str) -> ExecuteContext:
    words = text[1:].split()
    return ExecuteContext.model_validate({
        "query_id": 1, "query_uuid": "q-1",
        "session": {"launcher_type": "group", "launcher_id": 123456, "sender_id": "42", "bot_uuid": "bot-1"},
        "command_text": text[1:], "full_command_text": text, "command": words[0], "crt_command": words[0],
        "params": words, "crt_params": words[1:], "privilege": 1,
    })


class ProtocolTest(unittest.TestCase):
    def test_binding_tokens_refused_not_rewritten(self) -> None:
        for bad in ["a.b", "*", ">", "", "x" * 65, "sp ace"]:
            with self.subTest(token=bad), self.assertRaises(p.BindingError):
                p.check_binding(GEN, new_binding(installation_uuid=bad))
        for field in ["placement_generation", "runtime_revision"]:
            with self.assertRaises(p.BindingError):
                p.check_binding(GEN, new_binding(**{field: 0}))
        b = new_binding()
        self.assertEqual(p.check_binding(GEN, {**b, "extra": 1}), b)

    def test_config_hygiene(self) -> None:
        out = p.forwarded_config(GEN, config())
        for k in PKG_KEYS:
            self.assertNotIn(k, out)
        self.assertEqual(out["some_service_item"], 7)
        self.assertEqual(set(PKG_KEYS), {"nats_url", "nats_user", "nats_password", "nats_token", "nats_tls_ca", "subject_prefix"})

    def test_missing_items_take_the_manifest_default(self) -> None:
        defaults = GEN.plugin["config_defaults"]
        self.assertEqual(set(defaults) >= set(PKG_KEYS), True)
        for given in ({}, {k: None for k in defaults}):
            with self.subTest(given=given):
                fw = Forwarder(GEN, new_binding(), given, None)
                self.assertEqual(fw.problem, "")
                self.assertEqual(fw.config, defaults)
                self.assertEqual(fw.defaulted, sorted(defaults))
                self.assertEqual(fw._opts["servers"], [defaults["nats_url"]])
                self.assertEqual(fw.prefix, defaults["subject_prefix"])
        fw = Forwarder(GEN, new_binding(), {}, None)
        self.assertEqual(fw.forward_config, {}, "the service applies its own defaults")
        fw = Forwarder(GEN, new_binding(), {"nats_url": URL or "nats://x:1", "language": "zh_Hans"}, None)
        self.assertEqual((fw.problem, fw.language), ("", "zh_Hans"))
        self.assertNotIn("nats_url", fw.defaulted)
        self.assertIn("subject_prefix", fw.defaulted)

    def test_unusable_config_is_not_configured(self) -> None:
        cases = [
            ("nats_url", {"nats_url": ""}),
            ("nats_url", {"nats_url": "http://marker-host-1:4222"}),
            ("subject_prefix", {"subject_prefix": "a.b"}),
            ("nats_tls_ca", {"nats_tls_ca": "-----BEGIN CERTIFICATE-----\nmarker-ca-1\n-----END CERTIFICATE-----"}),
        ]
        for item, over in cases:
            with self.subTest(item=item, over=over):
                fw = Forwarder(GEN, new_binding(), config(**over), None)
                self.assertEqual(fw.problem, item)


    def test_generated_subjects(self) -> None:
        s = p.subject(GEN, "invocation", prefix="langbot", plugin="x", endpoint="command", scope="i.w.n")
        self.assertEqual(s, "langbot.plugin.x.command.i.w.n")
        self.assertEqual(p.subject(GEN, "host_serve", prefix="langbot", scope="i.w.n"), "langbot.host.*.i.w.n")
        self.assertEqual(p.subject(GEN, "lifecycle", prefix="lb", plugin="x", kind="attach", scope="i.w.n"), "lb.lifecycle.x.attach.i.w.n")


def handler_of(binding: dict[str, typing.Any]) -> typing.Any:
    class Bound:
        def model_dump(self) -> dict[str, typing.Any]:
            return binding

    class Handler:
        bound_action_context = Bound()

    return Handler()


class InitializeTest(unittest.IsolatedAsyncioTestCase):
    async def test_invalid_binding_is_refused_without_raising(self) -> None:
        plugin = ForwardingPlugin()
        plugin.config = config()
        plugin.plugin_runtime_handler = handler_of(new_binding(workspace_uuid="ws.evil"))
        with self.assertLogs("langbot_nats", "ERROR") as logs:
            await plugin.initialize()  # never raises
        self.assertIsNone(plugin.forwarder)
        self.assertIn("workspace_uuid", "\n".join(logs.output))
        self.assertNotIn("ws.evil", "\n".join(logs.output))
        texts = await c.forward_command(None, GEN, "x", execute_context("!x"))
        self.assertEqual(texts, [GEN.text("unavailable", GEN.plugin["default_language"])])

    async def test_unusable_config_answers_not_configured(self) -> None:
        # LangBot 4.10.8 gives a new installation {}; a cleared or wrong
        # address must leave the worker up and say what to fix, in the
        # user's language, with the installation's instance and workspace.
        for lang in ("en_US", "zh_Hans"):
            binding = new_binding()
            plugin = ForwardingPlugin()
            plugin.config = config(nats_url="", nats_user="marker-user-1", language=lang)
            plugin.plugin_runtime_handler = handler_of(binding)
            with self.assertLogs("langbot_nats", "ERROR") as logs:
                await plugin.initialize()
            fw = plugin.forwarder
            self.assertIsNotNone(fw)
            self.assertIsNone(fw._task, "nothing connects")
            log_text = "\n".join(logs.output)
            for want in ("nats_url", binding["instance_uuid"], binding["workspace_uuid"]):
                self.assertIn(want, log_text)
            want = GEN.not_configured(lang, "nats_url", binding)
            self.assertIn(binding["instance_uuid"], want)
            self.assertIn(binding["workspace_uuid"], want)
            self.assertIn("nats_url", want)
            self.assertTrue(want.startswith(GEN.plugin["texts"]["not_configured"][lang].split("{")[0]), want)
            t0 = time.monotonic()
            self.assertEqual(await c.forward_command(fw, GEN, "x", execute_context("!x")), [want])
            got = await c.forward_tool(fw, GEN, "t", {}, execute_context("!x").session, None)
            self.assertEqual(got, {"error": {"code": "not_configured", "message": want}})
            page = await c.forward_page(fw, GEN, "console", PageRequest(endpoint="/info", method="GET"))
            self.assertEqual(page.error, "503 not_configured: " + want)
            ctx = FakeEventContext()
            await c.forward_event(fw, GEN, ctx)
            self.assertFalse(ctx.is_prevent_default)
            self.assertEqual(ctx.bot_asked, 0, "an event of an unconfigured worker asks LangBot nothing")
            self.assertLess(time.monotonic() - t0, GEN.timeout("event"), "nothing waited for a timeout")
            for secret in ("marker-user-1", "marker-password-1"):
                self.assertNotIn(secret, log_text + want)
            await fw.close()

    async def test_initialize_never_raises(self) -> None:
        bad = [config(nats_url="http://x"), config(subject_prefix="*"), config(nats_tls_ca="not a pem"), {}, {"nats_url": 7}]
        for cfg in bad:
            with self.subTest(cfg=cfg):
                plugin = ForwardingPlugin()
                plugin.config = cfg
                plugin.plugin_runtime_handler = handler_of(new_binding())
                await plugin.initialize()
                self.assertIsNotNone(plugin.forwarder)
                await plugin.forwarder.close()
        plugin = ForwardingPlugin()
        plugin.config = config()
        plugin.plugin_runtime_handler = None  # no binding at all
        await plugin.initialize()
        self.assertIsNone(plugin.forwarder)

    async def test_start_never_waits_for_nats(self) -> None:
        fw = Forwarder(GEN, new_binding(), config(nats_url="nats://127.0.0.1:1"), Recorder())
        t0 = time.monotonic()
        fw.start()
        self.assertLess(time.monotonic() - t0, 0.5)
        self.assertFalse(fw.connected)
        with self.assertRaises(p.Unavailable):
            await fw.request("command", {"name": "x"}, 30)
        texts = await c.forward_command(fw, GEN, "x", execute_context("!x y"))
        self.assertEqual(texts, [GEN.text("unavailable", "en_US")])
        await fw.close()


    async def test_close_ends_a_task_that_dropped_its_cancel(self) -> None:
        # Python 3.11's wait_for can drop a cancel that arrives as the
        # attach is acknowledged; the worker then sleeps for the refresh
        # period. close must still end it.
        swallowed = asyncio.Event()

        async def stubborn() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                swallowed.set()
            await asyncio.sleep(3600)

        fw = Forwarder(GEN, new_binding(), config(nats_url="nats://127.0.0.1:1"), Recorder())
        fw._task = asyncio.get_running_loop().create_task(stubborn())
        await asyncio.sleep(0)
        closing = asyncio.get_running_loop().create_task(fw.close())
        done, _ = await asyncio.wait({closing}, timeout=10)
        if not done:
            closing.cancel()
            fw._task.cancel()
            self.fail("close waits for a task that dropped its cancel")
        self.assertTrue(swallowed.is_set())
        self.assertTrue(fw._task.done())


    async def test_close_ends_an_observed_event_that_dropped_its_cancel(self) -> None:
        swallowed = asyncio.Event()

        async def stubborn() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                swallowed.set()
            await asyncio.sleep(3600)

        fw = Forwarder(GEN, new_binding(), config(nats_url="nats://127.0.0.1:1"), Recorder())
        task = fw.observe(stubborn())
        self.assertIsNotNone(task)
        await asyncio.sleep(0)
        closing = asyncio.get_running_loop().create_task(fw.close())
        done, _ = await asyncio.wait({closing}, timeout=10)
        if not done:
            closing.cancel()
            task.cancel()  # type: ignore[union-attr]
            self.fail("close waits for an observed event that dropped its cancel")
        self.assertTrue(swallowed.is_set())
        self.assertTrue(task.done())  # type: ignore[union-attr]


class CommandTest(Base):
    async def test_every_return_streamed_in_order(self) -> None:
        seen = await self.serve("command", lambda m: _async(ok({"returns": [{"text": "one"}, {"text": "two\nlines"}, {"text": "three"}]})))
        cmd = c.ForwardingCommand()
        cmd.command_name = "sche"
        cmd.plugin = Plugin(self.fw)  # type: ignore[assignment]
        got = [r async for r in cmd._execute(execute_context("!sche add in 2s x"))]
        self.assertEqual([r.text for r in got], ["one", "two\nlines", "three"])
        self.assertTrue(all(r.error is None for r in got))
        body = json.loads(seen[0].data)
        self.assertEqual(body["command"]["name"], "sche")
        self.assertEqual(body["command"]["params"], ["add", "in", "2s", "x"])
        self.assertEqual(body["command"]["prefix"], "!")
        self.assertEqual(body["command"]["full_text"], "!sche add in 2s x")
        self.assertEqual(body["command"]["session"], {"launcher_type": "group", "launcher_id": 123456, "sender_id": "42", "bot_uuid": "bot-1"})
        self.assertEqual(body["binding"], self.binding)
        self.assertEqual(body["config"], forwarded())
        self.assertNotIn("marker-password-1", seen[0].data.decode())
        self.assertRegex(seen[0].headers["traceparent"], r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")
        await cmd._execute(execute_context("!sche")).__anext__()
        ids = {m.headers[GEN.header("invocation_id")] for m in seen}
        self.assertEqual(len(ids), 2, "each call has its own invocation id")
        # A LangBot 4.12 bot's prefix is `/`: forwarded as typed.
        await cmd._execute(execute_context("/sche add in 2s x")).__anext__()
        body = json.loads(seen[-1].data)
        self.assertEqual((body["command"]["prefix"], body["command"]["full_text"]), ("/", "/sche add in 2s x"))

    async def test_not_attached_is_asked_again(self) -> None:
        # Right after a worker starts, the service may not have applied its
        # attach yet: the request is sent again (same invocation id) until
        # it is served, within the request's own deadline.
        reason = GEN.protocol["binding_reasons"]["not_attached"]
        refusals = [2]

        async def reply(m: typing.Any) -> tuple[dict[str, str], bytes]:
            if refusals[0] > 0:
                refusals[0] -= 1
                return fail(403, "not attached", reason)
            return ok({"returns": [{"text": "served"}]})

        seen = await self.serve("command", reply)
        texts = await c.forward_command(self.fw, GEN, "sche", execute_context("!sche"))
        self.assertEqual(texts, ["served"])
        self.assertEqual(len(seen), 3)
        self.assertEqual(len({m.headers[GEN.header("invocation_id")] for m in seen}), 1)

    async def test_not_attached_until_the_deadline_is_the_refusal(self) -> None:
        reason = GEN.protocol["binding_reasons"]["not_attached"]
        seen = await self.serve("command", lambda m: _async(fail(403, "not attached", reason)))
        with self.assertRaises(p.ServiceError) as caught:
            await self.fw.request("command", {"name": "sche"}, 0.5)
        self.assertEqual(caught.exception.reason, reason)
        self.assertGreater(len(seen), 1)
        # another refusal is not asked again
        other = await self.serve("tool", lambda m: _async(fail(403, "stale", "stale_binding")))
        with self.assertRaises(p.ServiceError):
            await self.fw.request("tool", {"name": "t"}, 2)
        self.assertEqual(len(other), 1)

    async def test_context_without_query_uuid(self) -> None:
        # SDK 0.7's command context may lack query_uuid (issue 28).
        seen = await self.serve("command", lambda m: _async(ok({"returns": [{"text": "ok"}]})))

        class NoQueryUUID:
            def __init__(self, ctx: ExecuteContext) -> None:
                self._ctx = ctx

            def __getattr__(self, name: str) -> typing.Any:
                if name == "query_uuid":
                    raise AttributeError(name)
                return getattr(self._ctx, name)

        ctx = NoQueryUUID(execute_context("!sche"))
        self.assertEqual(await c.forward_command(self.fw, GEN, "sche", ctx), ["ok"])  # type: ignore[arg-type]
        self.assertNotIn("query_uuid", json.loads(seen[0].data)["command"])

    async def test_errors_are_text(self) -> None:
        await self.serve("command", lambda m: _async(fail(403, "binding refused")))
        texts = await c.forward_command(self.fw, GEN, "sche", execute_context("!sche"))
        self.assertEqual(len(texts), 1)
        self.assertIn(GEN.text("failed", "en_US"), texts[0])
        self.assertIn("403", texts[0])

    async def test_no_service_is_one_unavailable_line(self) -> None:
        texts = await c.forward_command(self.fw, GEN, "sche", execute_context("!sche"))
        self.assertEqual(texts, [GEN.text("unavailable", "en_US")])

    async def test_language_from_config(self) -> None:
        fw = Forwarder(GEN, new_binding(), config(language="zh_Hans"), None)
        self.assertEqual(await c.forward_command(fw, GEN, "x", execute_context("!x")), [GEN.text("unavailable", "zh_Hans")])


class ToolTest(Base):
    async def test_result_and_structured_errors(self) -> None:
        seen = await self.serve("tool", lambda m: _async(ok({"result": {"now": "2030-01-01T00:00:00Z"}})))
        tool = c.ForwardingTool()
        tool.tool_name = "get_current_time_str"
        tool.plugin = Plugin(self.fw)  # type: ignore[assignment]
        session = execute_context("!x").session
        got = await tool.call({"a": 1}, session, 1, "q-9")
        self.assertEqual(got, {"now": "2030-01-01T00:00:00Z"})
        body = json.loads(seen[0].data)["tool"]
        self.assertEqual((body["name"], body["parameters"], body["query_uuid"]), ("get_current_time_str", {"a": 1}, "q-9"))

    async def test_error_reply_and_unavailable(self) -> None:
        got = await c.forward_tool(self.fw, GEN, "nobody_serves_this", {}, execute_context("!x").session, None)
        self.assertEqual(got["error"]["code"], "unavailable")
        await self.serve("tool", lambda m: _async(fail(400, "bad params")))
        got = await c.forward_tool(self.fw, GEN, "t", {}, execute_context("!x").session, None)
        self.assertEqual(got, {"error": {"code": "bad_request", "message": "bad params"}})


class FakeEventContext:
    """The part of LangBot's EventContext a listener uses."""

    def __init__(self, bot_uuid: str | None = "bot-1", fail: bool = False) -> None:
        self.event_name = "GroupMessageReceived"
        self.bot_asked = 0
        self.query_uuid = "q-7"
        self.is_prevent_default = False
        self.is_prevent_postorder = False
        self._bot, self._fail = bot_uuid, fail

        class Ev:
            def model_dump(self, mode: str = "python") -> dict[str, typing.Any]:
                return {"launcher_type": "group", "launcher_id": "g1", "sender_id": "u1", "message_chain": [{"type": "Plain", "text": "hi"}]}

        self.event = Ev()

    async def get_bot_uuid(self) -> str | None:
        self.bot_asked += 1
        if self._fail:
            raise RuntimeError("no query")
        return self._bot

    def prevent_default(self) -> None:
        self.is_prevent_default = True

    def prevent_postorder(self) -> None:
        self.is_prevent_postorder = True


class EventTest(Base):
    async def test_decision_applied(self) -> None:
        seen = await self.serve("event", lambda m: _async(ok({"prevent_default": True, "prevent_postorder": True})))
        ctx = FakeEventContext()
        await c.forward_event(self.fw, DECIDES, ctx)
        self.assertTrue(ctx.is_prevent_default and ctx.is_prevent_postorder)
        body = json.loads(seen[0].data)["event"]
        self.assertEqual((body["name"], body["bot_uuid"], body["query_uuid"]), ("GroupMessageReceived", "bot-1", "q-7"))
        self.assertEqual(body["data"]["launcher_id"], "g1")

    async def test_bot_uuid_the_event_carries_is_not_asked(self) -> None:
        seen = await self.serve("event", lambda m: _async(ok({"prevent_default": False})))
        ctx = FakeEventContext()
        await c.forward_event(self.fw, DECIDES, ctx)
        self.assertEqual(ctx.bot_asked, 1, "0.5.5's MessageReceived events carry no bot: asked")
        for name, attach in [
            ("NormalMessageResponded", lambda ev: setattr(ev, "session", execute_context("!x").session)),
            ("MessageReceived", lambda ev: setattr(ev, "bot_uuid", "bot-1")),  # SDK 0.7
        ]:
            with self.subTest(name):
                ctx = FakeEventContext()
                ctx.event_name = name
                attach(ctx.event)
                await c.forward_event(self.fw, DECIDES, ctx)
                self.assertEqual(ctx.bot_asked, 0)
                self.assertEqual(json.loads(seen[-1].data)["event"]["bot_uuid"], "bot-1")

    async def test_reply_chain_only_where_the_event_has_one(self) -> None:
        await self.serve("event", lambda m: _async(ok({"prevent_default": False, "prevent_postorder": False,
                                                       "reply_message_chain": [{"type": "Plain", "text": "from service"}]})))
        ctx = FakeEventContext()
        await c.forward_event(self.fw, DECIDES, ctx)  # GroupMessageReceived-like: no reply field
        self.assertFalse(hasattr(ctx.event, "reply_message_chain"))
        ctx = FakeEventContext()
        ctx.event.reply_message_chain = None  # type: ignore[attr-defined]
        await c.forward_event(self.fw, DECIDES, ctx)
        chain = ctx.event.reply_message_chain  # type: ignore[attr-defined]
        self.assertEqual([cmp.text for cmp in chain], ["from service"])
        self.assertFalse(ctx.is_prevent_default)

    async def test_fail_open(self) -> None:
        ctx = FakeEventContext(fail=True)
        await c.forward_event(self.fw, DECIDES, ctx)  # nobody serves: unchanged, no exception
        self.assertFalse(ctx.is_prevent_default or ctx.is_prevent_postorder)

        delay = GEN.timeout("event") * 2

        async def slow(m: typing.Any) -> tuple[dict[str, str], bytes]:
            await asyncio.sleep(delay)
            return ok({"prevent_default": True})

        await self.serve("event", slow)
        t0 = time.monotonic()
        ctx = FakeEventContext()
        await c.forward_event(self.fw, DECIDES, ctx)
        self.assertLess(time.monotonic() - t0, delay, "the event timeout cut the slow service")
        self.assertFalse(ctx.is_prevent_default)


class ObservedEventTest(Base):
    """An event of a service that only observes (observe_events) passes at
    once; the package forwards it in the background, bounded."""

    async def test_the_event_returns_before_the_service_answers(self) -> None:
        release = asyncio.Event()

        async def held(m: typing.Any) -> tuple[dict[str, str], bytes]:
            await release.wait()
            return ok({"prevent_default": True, "prevent_postorder": True})

        seen = await self.serve("event", held)
        ctx = FakeEventContext()
        await asyncio.wait_for(c.forward_event(self.fw, OBSERVES, ctx), 1)
        self.assertEqual(ctx.bot_asked, 1, "LangBot is asked for the bot before the event returns")
        self.assertEqual(len(self.fw._observed), 1)
        await self.until(lambda: len(seen) == 1, "the service got the event")
        body = json.loads(seen[0].data)["event"]
        self.assertEqual((body["name"], body["bot_uuid"], body["query_uuid"]), ("GroupMessageReceived", "bot-1", "q-7"))
        self.assertEqual(body["data"]["launcher_id"], "g1")
        release.set()
        await self.until(lambda: not self.fw._observed, "the background forwarding ended")
        self.assertFalse(ctx.is_prevent_default or ctx.is_prevent_postorder, "an observed event's answer is not applied")

    async def test_bounded_dropped_and_closed(self) -> None:
        seen = await self.serve("event", lambda m: _async(None))  # never answers
        ctxs = [FakeEventContext() for _ in range(f.OBSERVE_IN_FLIGHT + 5)]
        with self.assertLogs("langbot_nats", "WARNING") as logs:
            for ctx in ctxs:
                await asyncio.wait_for(c.forward_event(self.fw, OBSERVES, ctx), 1)
        self.assertEqual(len(self.fw._observed), f.OBSERVE_IN_FLIGHT)
        self.assertEqual(self.fw.observe_dropped, 5)
        self.assertEqual([ctx.bot_asked for ctx in ctxs[f.OBSERVE_IN_FLIGHT:]], [0] * 5, "a dropped event asks nothing")
        self.assertEqual(len([r for r in logs.output if "not forwarded" in r]), 1, "drops are reported once per interval")
        await self.until(lambda: len(seen) == f.OBSERVE_IN_FLIGHT, "the service got every event in flight")
        tasks = list(self.fw._observed)
        await asyncio.wait_for(self.fw.close(), 10)
        self.assertTrue(all(t.done() for t in tasks), "close ends the events in flight")
        self.assertFalse(self.fw._observed)
        self.assertIsNone(self.fw.observe(_async(None)), "nothing starts while closing")

    async def test_nats_down_passes_at_once_without_asking(self) -> None:
        fw = Forwarder(GEN, new_binding(), config(nats_url="nats://127.0.0.1:1"), Recorder())
        fw._tried.set()
        ctx = FakeEventContext()
        await c.forward_event(fw, OBSERVES, ctx)
        self.assertEqual((ctx.bot_asked, len(fw._observed)), (0, 0))
        await fw.close()


def gated_context(chat: str = "g1", text: str = "hi", name: str = "GroupMessageReceived") -> FakeEventContext:
    """An event context whose event has the fields an event gate reads,
    with the SDK's own message chain."""
    from langbot_plugin.api.entities.builtin.platform.message import MessageChain, Plain

    class Ev:
        launcher_type, launcher_id = "group", chat
        message_chain = MessageChain([Plain(text=text)])

        def model_dump(self, mode: str = "python") -> dict[str, typing.Any]:
            return {"launcher_type": "group", "launcher_id": chat, "sender_id": "u1", "message_chain": [{"type": "Plain", "text": text}]}

    ctx = FakeEventContext()
    ctx.event_name = name
    ctx.event = Ev()  # type: ignore[assignment]
    return ctx


def gate(loud: list[list[str]] | None = None, words: str = "", ttl_ms: int = 60000) -> dict[str, typing.Any]:
    return {"ttl_ms": ttl_ms, "events": ["GroupMessageReceived", "NormalMessageResponded"], "loud": loud or [], "words": words}


class EventGateTest(Base):
    """A service's event gate (docs/protocol.md, "Event gate"): the events
    it covers pass at once and go to the service in the background; a
    watched chat, a trigger word, a revocation or a lost connection make
    an event wait for its decision again."""

    async def asyncSetUp(self) -> None:
        await super().asyncSetUp()
        await self.fw.close()
        self.fw = Forwarder(GATED, self.binding, config(), self.runtime)
        self.fw.start()
        await asyncio.wait_for(self.fw._connected.wait(), 5)
        # the service's answers, in order; then the last one again. Each
        # request is answered by its own task, so a held one holds no other.
        self.answers: list[dict[str, typing.Any]] = []
        self.hold: asyncio.Event | None = None
        self.tasks: set[asyncio.Task[None]] = set()

        async def respond(m: typing.Any, hold: asyncio.Event | None, answer: dict[str, typing.Any]) -> None:
            if hold is not None:
                await hold.wait()
            headers, body = ok(answer)
            await self.nc.publish(m.reply, body, headers=headers)

        async def answer(m: typing.Any) -> None:
            a = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            t = asyncio.get_running_loop().create_task(respond(m, self.hold, a))
            self.tasks.add(t)
            t.add_done_callback(self.tasks.discard)

        self.seen = await self.serve("event", answer)

    def event_of(self, i: int) -> dict[str, typing.Any]:
        return json.loads(self.seen[i].data)["event"]

    async def gated(self, **g: typing.Any) -> None:
        """Give the forwarder a gate through a first, waited-for event."""
        self.answers = [{"prevent_default": False, "prevent_postorder": False, "gate": gate(**g)}]
        n = len(self.seen)
        await c.forward_event(self.fw, GATED, gated_context(chat="first"))
        self.assertTrue(self.event_of(n).get("want_gate"), "an event without a gate asks for one")
        self.assertIsNotNone(self.fw.gate())

    async def test_covered_event_passes_before_the_service_answers(self) -> None:
        await self.gated()
        self.answers = [{"prevent_default": True, "prevent_postorder": True}]
        self.hold = asyncio.Event()
        ctx = gated_context()
        await asyncio.wait_for(c.forward_event(self.fw, GATED, ctx), 1)
        self.assertEqual(ctx.bot_asked, 1, "LangBot is asked for the bot before the event returns")
        await self.until(lambda: len(self.seen) == 2, "the service got the event")
        body = self.event_of(1)
        self.assertTrue(body.get("passed"), "the service is told the event already passed")
        self.assertNotIn("want_gate", body, "a fresh gate is not asked for again")
        self.assertEqual(body["data"]["launcher_id"], "g1")
        self.hold.set()
        await self.until(lambda: not self.fw._observed, "the background forwarding ended")
        self.assertFalse(ctx.is_prevent_default or ctx.is_prevent_postorder, "a passed event's answer is not applied")

    async def test_watched_chat_uncovered_event_and_trigger_word_wait(self) -> None:
        # "help" in any case, as the service writes a word's rune classes
        await self.gated(loud=[["group", "held"]], words=r"[\u0068\u0048][\u0065\u0045][\u006c\u004c][\u0070\u0050]")
        self.answers = [{"prevent_default": True, "prevent_postorder": True}]
        for what, ctx in [
            ("watched chat", gated_context(chat="held")),
            ("trigger word", gated_context(text="I need HeLp now")),
            ("event the gate does not cover", gated_context(name="PersonMessageReceived")),
        ]:
            with self.subTest(what):
                await c.forward_event(self.fw, GATED, ctx)
                self.assertTrue(ctx.is_prevent_default and ctx.is_prevent_postorder, "waited for and applied the decision")
                self.assertNotIn("passed", self.event_of(-1))
        ctx = gated_context(chat="other", text="hel p")
        await c.forward_event(self.fw, GATED, ctx)
        self.assertFalse(ctx.is_prevent_default, "another chat without a trigger word passes")

    async def test_revocation_and_disconnect_drop_the_gate(self) -> None:
        await self.gated()
        await self.nc.publish(p.subject(GEN, "host", prefix="langbot", action=GEN.protocol["gate_revoke_action"], scope=self.fw.scope), b"")
        await self.until(lambda: self.fw.gate() is None, "the revocation dropped the gate")
        self.assertEqual(self.fw.gate_revokes, 1)
        await self.gated()
        await self.fw._on_disconnected()
        self.assertIsNone(self.fw.gate(), "a disconnect drops the gate")
        await self.gated()
        await self.fw._on_error(nats.errors.SlowConsumerError("x", "", 1, None))
        self.assertIsNone(self.fw.gate(), "a connection error (a lost revocation) drops the gate")
        await self.gated()
        revoke = p.subject(GEN, "host", prefix="langbot", action=GEN.protocol["gate_revoke_action"], scope=self.fw.scope)
        with self.assertLogs("langbot_nats", "ERROR"):
            await self.fw._on_error(nats.errors.Error(f"nats: permissions violation for subscription to {revoke!r}"))
        self.answers = [{"prevent_default": False, "prevent_postorder": False, "gate": gate()}]
        await c.forward_event(self.fw, GATED, gated_context())
        self.assertIsNone(self.fw.gate(), "a gate that cannot be revoked is not used")

    async def test_gate_of_a_request_older_than_a_revocation_is_ignored(self) -> None:
        self.answers = [{"prevent_default": False, "prevent_postorder": False, "gate": gate()}]
        self.hold = asyncio.Event()
        pending = asyncio.get_running_loop().create_task(c.forward_event(self.fw, GATED, gated_context()))
        await self.until(lambda: len(self.seen) == 1, "the service got the event")
        await self.fw._on_revoke(None)
        self.hold.set()
        await pending
        self.assertIsNone(self.fw.gate(), "the gate was decided before the revocation")

    async def test_expired_or_malformed_gate_is_not_used(self) -> None:
        await self.gated(ttl_ms=1)
        await asyncio.sleep(0.01)
        self.assertIsNone(self.fw.gate(), "expired")
        for bad in [{**gate(), "ttl_ms": 0}, {**gate(), "words": "("}, {**gate(), "loud": [["group"]]}, "gate"]:
            with self.subTest(bad=bad):
                self.fw.drop_gate()
                self.answers = [{"prevent_default": False, "gate": bad}]
                with self.assertLogs("langbot_nats", "WARNING"):
                    await c.forward_event(self.fw, GATED, gated_context())
                self.assertIsNone(self.fw.gate())

    async def test_a_chat_is_forwarded_in_order(self) -> None:
        await self.gated()
        self.answers = [{"prevent_default": False}]
        self.hold = asyncio.Event()
        await c.forward_event(self.fw, GATED, gated_context(text="one"))
        await self.until(lambda: len(self.seen) == 2, "the service got the first event")
        await c.forward_event(self.fw, GATED, gated_context(text="two"))
        await c.forward_event(self.fw, GATED, gated_context(chat="g2", text="other chat"))
        await self.until(lambda: len(self.seen) == 3, "the other chat's event went at once")
        self.assertEqual(self.event_of(2)["data"]["launcher_id"], "g2")
        self.hold.set()
        await self.until(lambda: len(self.seen) == 4, "the chat's second event followed its first")
        await self.until(lambda: not self.fw._observed, "the background forwarding ended")

    async def test_full_background_waits_instead_of_dropping(self) -> None:
        await self.gated()
        self.answers = [{"prevent_default": False}]
        self.hold = asyncio.Event()
        for i in range(f.OBSERVE_IN_FLIGHT):
            await c.forward_event(self.fw, GATED, gated_context(chat=f"c{i}"))
        waited = asyncio.get_running_loop().create_task(c.forward_event(self.fw, GATED, gated_context(chat="last")))
        await asyncio.sleep(0.05)
        self.assertFalse(waited.done(), "beyond the bound an event waits for its decision")
        self.hold.set()
        await asyncio.wait_for(waited, 5)
        self.assertEqual(self.fw.observe_dropped, 0)
        await self.until(lambda: not self.fw._observed, "the background forwarding ended")


class PageTest(Base):
    async def test_ok_and_fail(self) -> None:
        async def reply(m: typing.Any) -> tuple[dict[str, str], bytes]:
            page = json.loads(m.data)["page"]
            if page["endpoint"] == "/info":
                return ok({"data": {"echo": page["body"], "method": page["method"], "id": page["page_id"]}})
            if page["endpoint"] == "/reply":
                return fail(503, "the send's outcome is unknown", "outcome_unknown")
            return fail(404, "no such endpoint")

        await self.serve("page", reply)
        got = await c.forward_page(self.fw, GEN, "console", PageRequest(endpoint="/info", method="GET", body={"x": 1}))
        self.assertIsNone(got.error)
        self.assertEqual(got.data, {"echo": {"x": 1}, "method": "GET", "id": "console"})
        got = await c.forward_page(self.fw, GEN, "console", PageRequest(endpoint="/nope", method="GET"))
        self.assertEqual(got.error, "404: no such endpoint")
        got = await c.forward_page(self.fw, GEN, "console", PageRequest(endpoint="/reply", method="POST"))
        self.assertEqual(got.error, "503 outcome_unknown: the send's outcome is unknown")

    async def test_unavailable(self) -> None:
        got = await c.forward_page(self.fw, GEN, "console", PageRequest(endpoint="/info", method="GET"))
        self.assertTrue(got.error and got.error.startswith("503: "))


class HostActionTest(Base):
    async def asyncSetUp(self) -> None:
        await super().asyncSetUp()
        # The forwarder's flushed host subscription can still be unseen by
        # this connection for a moment on a loaded machine (no responders):
        # probe with a body it refuses, which never reaches the runtime.
        for _ in range(500):
            try:
                await self.nc.request(self.host_subject("send_message"), b"probe", timeout=5)
                return
            except nats.errors.NoRespondersError:
                await asyncio.sleep(0.01)
        self.fail("the forwarder's host subscription never became reachable")

    def host_subject(self, action: str) -> str:
        return p.subject(GEN, "host", prefix="langbot", action=action, scope=self.fw.scope)

    async def call(self, action: str, body: typing.Any, key: str = "") -> tuple[dict[str, str], typing.Any]:
        headers = {GEN.header("idempotency_key"): key} if key else {}
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        msg = await self.nc.request(self.host_subject(action), raw, timeout=5, headers=headers or None)
        return msg.headers or {}, json.loads(msg.data)

    def body(self, **over: typing.Any) -> dict[str, typing.Any]:
        b = {"binding": self.binding, "plugin": GEN.name, "data": {"bot_uuid": "bot-1", "target_type": "group", "target_id": "1", "message_chain": []}}
        b.update(over)
        return b

    def code(self, headers: dict[str, str]) -> str:
        return headers.get(GEN.header("service_code"), "")

    async def test_send_and_refusals(self) -> None:
        h, out = await self.call("send_message", self.body())
        self.assertEqual((self.code(h), out), ("", {}))
        self.assertEqual(self.runtime.calls, [("send_message", self.body()["data"])])
        h, out = await self.call("get_bots", self.body(data={}))
        self.assertEqual(out, {"bots": [{"uuid": "b1"}]})

        cases = [
            ("malformed", "send_message", b"not json", "400"),
            ("no data", "send_message", {"binding": self.binding, "plugin": GEN.name}, "400"),
            ("foreign plugin", "send_message", self.body(plugin="someoneelse"), "403"),
            ("older binding", "send_message", self.body(binding={**self.binding, "runtime_revision": 0}), "403"),
            ("unknown action", "delete_everything", self.body(), "404"),
        ]
        before = len(self.runtime.calls)
        for name, action, body, want in cases:
            with self.subTest(name):
                h, out = await self.call(action, body)
                self.assertEqual(self.code(h), want)
                self.assertEqual(out["error"]["code"], GEN.protocol["error_words"][want])
        self.assertEqual(len(self.runtime.calls), before, "refused actions never reach the runtime")

    async def test_idempotency_key_sends_once(self) -> None:
        key = self.fw.scope + ":delivery-1"
        for _ in range(3):
            h, out = await self.call("send_message", self.body(), key=key)
            self.assertEqual((self.code(h), out), ("", {}))
        self.assertEqual(len(self.runtime.calls), 1)
        await self.call("send_message", self.body(), key=key + "-other")
        self.assertEqual(len(self.runtime.calls), 2)

    async def test_runtime_errors_mapped(self) -> None:
        cases = [
            (HostCallFailed("Bot with bot_uuid x not found"), "404", ""),
            (HostCallFailed("Plugin installation revision or artifact is stale"), "403", ""),
            (HostCallFailed("Runtime connection is busy (max 128 concurrent actions)"), "429", ""),
            (HostTimeout("Action send_message call timed out"), "503", "timeout"),
            (HostCallFailed("Action send_message call timed out"), "503", "timeout"),
            (HostCallFailed("adapter exploded: secret detail"), "500", ""),
            (HostCallFailed("WeCom customer service only supports sending messages to person targets"), "400", "unsupported_target"),
            (HostCallFailed("Forbidden: bot was blocked by the user"), "400", "not_permitted"),
            (HostCallFailed("{'errcode': 45015, 'errmsg': 'response out of time limit or subscription is canceled'}"), "400", "outside_reply_window"),
        ]
        for exc, want, reason in cases:
            with self.subTest(want + reason):
                self.runtime.fail = exc
                h, out = await self.call("send_message", self.body(), key="k-" + want + reason + str(exc.__class__.__name__))
                self.assertEqual(self.code(h), want)
                self.assertEqual(out["error"].get("reason", ""), reason)
                self.assertNotIn("secret detail", json.dumps(out))
        # A failed send is not recorded: the retry sends again.
        self.runtime.fail = None
        n = len(self.runtime.calls)
        h, out = await self.call("send_message", self.body(), key="k-503HostTimeout")
        self.assertEqual((self.code(h), len(self.runtime.calls)), ("", n + 1))

    def llm(self, **over: typing.Any) -> dict[str, typing.Any]:
        data = {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "marker-prompt-1"}], "timeout_ms": 30000}
        data.update(over)
        return self.body(data=data)

    async def test_first_model_and_answer_text(self) -> None:
        h, out = await self.call("invoke_llm", self.llm())
        self.assertEqual((self.code(h), out), ("", {"text": "answer to marker-prompt-1", "llm_model_uuid": "model-a"}))
        self.assertEqual([a for a, _ in self.runtime.calls], ["get_llm_models", "invoke_llm"])
        sent = self.runtime.calls[1][1]
        self.assertEqual(sent["llm_model_uuid"], "model-a")
        self.assertEqual(sent["messages"][1], {"role": "user", "content": "marker-prompt-1"})
        self.assertEqual((sent["funcs"], sent["extra_args"]), ([], {}))
        self.assertLessEqual(sent["timeout"], 30.0)

    async def test_named_model_is_not_looked_up(self) -> None:
        h, out = await self.call("invoke_llm", self.llm(llm_model_uuid="model-b"))
        self.assertEqual(out["llm_model_uuid"], "model-b")
        self.assertEqual([a for a, _ in self.runtime.calls], ["invoke_llm"])

    async def test_no_model_and_failures(self) -> None:
        self.runtime.models = []
        h, out = await self.call("invoke_llm", self.llm())
        self.assertEqual((self.code(h), out["error"].get("reason")), ("404", GEN.protocol["llm_no_model_reason"]))
        self.assertEqual([a for a, _ in self.runtime.calls], ["get_llm_models"])
        self.runtime.fail = HostCallFailed("LLM model with llm_model_uuid gone not found")
        h, out = await self.call("invoke_llm", self.llm(llm_model_uuid="gone"))
        self.assertEqual((self.code(h), out["error"].get("reason")), ("404", GEN.protocol["llm_no_model_reason"]))
        self.runtime.fail = HostCallFailed("provider said: marker-prompt-1 is rude")
        with self.assertLogs("langbot_nats", "ERROR") as logs:
            h, out = await self.call("invoke_llm", self.llm(llm_model_uuid="m"))
        self.assertEqual(self.code(h), "500")
        self.assertNotIn("marker-prompt-1", json.dumps(out) + "".join(logs.output))
        self.runtime.fail = HostTimeout("Action invoke_llm call timed out")
        h, out = await self.call("invoke_llm", self.llm(llm_model_uuid="m"))
        self.assertEqual((self.code(h), out["error"].get("reason")), ("503", "timeout"))
        for bad in ({"messages": []}, {"messages": [{"role": "user"}]}, {"llm_model_uuid": 3, "messages": [{"role": "user", "content": "x"}]}):
            h, out = await self.call("invoke_llm", self.body(data=bad))
            self.assertEqual(self.code(h), "400")


class AttachTest(Base):
    async def last_attach(self, binding: dict[str, typing.Any]) -> typing.Any:
        js = self.nc.jetstream()
        subj = p.subject(GEN, "lifecycle", prefix="langbot", plugin=GEN.name, kind="attach", scope=p.scope_of(binding))
        return await js.get_last_msg(GEN.protocol["lifecycle_stream"], subj)

    async def wait_acks(self, fw: Forwarder, n: int) -> None:
        for _ in range(200):
            if fw.attach_acks >= n:
                return
            await asyncio.sleep(0.025)
        self.fail("attach never acknowledged")

    async def test_attach_published_and_deduplicated(self) -> None:
        await self.wait_acks(self.fw, 1)
        msg = await self.last_attach(self.binding)
        body = json.loads(msg.data)
        self.assertEqual(body, {"binding": self.binding, "config": forwarded(), "enabled": True})
        self.assertEqual(msg.headers[GEN.header("msg_id")], f"{self.binding['installation_uuid']}.1")
        first = msg.seq
        # A restart with the same revision is deduplicated by the stream.
        again = Forwarder(GEN, self.binding, config(), None)
        again.start()
        await self.wait_acks(again, 1)
        self.assertEqual((await self.last_attach(self.binding)).seq, first)
        await again.close()
        # A config change (revision + 1) is a new attach.
        newer = {**self.binding, "runtime_revision": 2}
        third = Forwarder(GEN, newer, config(), None)
        third.start()
        await self.wait_acks(third, 1)
        msg = await self.last_attach(newer)
        self.assertGreater(msg.seq, first)
        self.assertEqual(json.loads(msg.data)["binding"]["runtime_revision"], 2)
        await third.close()


async def _async(v: typing.Any) -> typing.Any:
    return v


if __name__ == "__main__":
    unittest.main()
