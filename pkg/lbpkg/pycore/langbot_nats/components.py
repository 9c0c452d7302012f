"""SDK component classes that forward to the service; generated files subclass them.

None of them raises out of a component (LangBot calls each installation's
listeners in one loop, and an exception there drops the user's message):
every failure becomes a text, a structured error, an unchanged event or a
page error.
"""

from __future__ import annotations

import asyncio
import logging
import typing

from langbot_plugin.api.definition.components.command.command import Command
from langbot_plugin.api.definition.components.common.event_listener import EventListener
from langbot_plugin.api.definition.components.page import Page, PageRequest, PageResponse
from langbot_plugin.api.definition.components.tool.tool import Tool
from langbot_plugin.api.entities import events as sdk_events
from langbot_plugin.api.entities.builtin.command.context import CommandReturn, ExecuteContext
from langbot_plugin.api.entities.builtin.platform.message import MessageChain

from . import protocol as p
from .forwarder import Forwarder

log = logging.getLogger("langbot_nats")


def _forwarder(component: typing.Any) -> Forwarder | None:
    plugin = getattr(component, "plugin", None)
    return getattr(plugin, "forwarder", None)


def _gen(component: typing.Any) -> p.Generated:
    plugin = getattr(component, "plugin", None)
    return getattr(plugin, "generated", None) or p.load()


def session_of(session: typing.Any) -> dict[str, typing.Any]:
    """LangBot's Session as the protocol carries it (ids kept as sent)."""
    lt = getattr(session, "launcher_type", "")
    return {
        "launcher_type": getattr(lt, "value", lt),
        "launcher_id": getattr(session, "launcher_id", ""),
        "sender_id": getattr(session, "sender_id", ""),
        "bot_uuid": getattr(session, "bot_uuid", None) or "",
    }


def command_body(name: str, ctx: ExecuteContext) -> dict[str, typing.Any]:
    """The ``command`` field: params are the words after the command word."""
    full = ctx.full_command_text or ""
    stripped = ctx.command_text or ""
    prefix = full[: len(full) - len(stripped)] if full.endswith(stripped) else ""
    body: dict[str, typing.Any] = {
        "name": name,
        "params": list(ctx.crt_params),
        "full_text": full,
        "session": session_of(ctx.session),
        "privilege": ctx.privilege,
    }
    if prefix:
        body["prefix"] = prefix
    # 0.5.5's ExecuteContext has query_uuid; SDK 0.7's may not (issue 28).
    query_uuid = getattr(ctx, "query_uuid", None)
    if query_uuid:
        body["query_uuid"] = query_uuid
    return body


async def forward_command(fw: Forwarder | None, gen: p.Generated, name: str, ctx: ExecuteContext) -> list[str]:
    """The texts a command answers: each of the service's returns, or one error line."""
    lang = fw.language if fw is not None else gen.plugin["default_language"]
    if fw is None:
        return [gen.text("unavailable", lang)]
    try:
        reply = await fw.request("command", command_body(name, ctx), gen.timeout("command"))
    except p.NotConfigured as exc:
        return [gen.not_configured(lang, exc.item, fw.binding)]
    except p.Unavailable:
        return [gen.text("unavailable", lang)]
    except p.ServiceError as err:
        if err.code == 503:
            return [gen.text("unavailable", lang)]
        return [f"{gen.text('failed', lang)} ({err.code} {err.word})"]
    except Exception as exc:  # never raise out of a component
        log.error("command %s failed: %s", name, type(exc).__name__)
        return [gen.text("unavailable", lang)]
    returns = reply.get("returns") if isinstance(reply, dict) else None
    if not isinstance(returns, list):
        return [f"{gen.text('failed', lang)} (500 internal)"]
    return [str(r.get("text", "")) if isinstance(r, dict) else str(r) for r in returns]


class ForwardingCommand(Command):
    """A command whose every reply comes from the service, streamed in order.

    It overrides ``_execute``: the SDK's catch-all subcommand would yield only
    the first return, and a string in ``CommandReturn.error`` crashes LangBot,
    so errors are texts.
    """

    command_name: typing.ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__()

    async def _execute(self, context: ExecuteContext) -> typing.AsyncGenerator[CommandReturn, None]:
        for text in await forward_command(_forwarder(self), _gen(self), self.command_name, context):
            yield CommandReturn(text=text)


async def forward_tool(
    fw: Forwarder | None, gen: p.Generated, name: str, params: typing.Any, session: typing.Any, query_uuid: str | None
) -> typing.Any:
    """The tool response: the service's result, or ``{"error": {...}}``."""
    lang = fw.language if fw is not None else gen.plugin["default_language"]
    unavailable = {"error": {"code": "unavailable", "message": gen.text("unavailable", lang)}}
    if fw is None:
        return unavailable
    body: dict[str, typing.Any] = {"name": name, "parameters": params if isinstance(params, dict) else {}, "session": session_of(session)}
    if query_uuid:
        body["query_uuid"] = query_uuid
    try:
        reply = await fw.request("tool", body, gen.timeout("tool"))
    except p.NotConfigured as exc:
        return {"error": {"code": "not_configured", "message": gen.not_configured(lang, exc.item, fw.binding)}}
    except p.Unavailable:
        return unavailable
    except p.ServiceError as err:
        if err.code == 503:
            return {"error": {**err.to_dict(), "code": "unavailable"}}
        return {"error": err.to_dict()}
    except Exception as exc:
        log.error("tool %s failed: %s", name, type(exc).__name__)
        return unavailable
    if not isinstance(reply, dict) or "result" not in reply:
        return {"error": {"code": "internal", "message": "malformed reply"}}
    return reply["result"]


class ForwardingTool(Tool):
    """A tool answered by the service."""

    tool_name: typing.ClassVar[str] = ""

    async def call(  # type: ignore[override]
        self, params: dict[str, typing.Any], session: typing.Any, query_id: int, query_uuid: str | None = None
    ) -> typing.Any:
        return await forward_tool(_forwarder(self), _gen(self), self.tool_name, params, session, query_uuid)


def carried_bot_uuid(event: typing.Any) -> str:
    """The bot uuid an event carries itself: SDK 0.7's MessageReceived has
    ``bot_uuid``, NormalMessageResponded its ``session``; "" otherwise."""
    bot = getattr(event, "bot_uuid", None) or getattr(getattr(event, "session", None), "bot_uuid", None)
    return bot if isinstance(bot, str) else ""


async def _bot_uuid(ask: asyncio.Task[typing.Any] | None, carried: str) -> str:
    """The event's bot: carried, else what the get_bot_uuid ask answers ("" on failure)."""
    if ask is None:
        return carried
    try:
        return await ask or ""
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.warning("get_bot_uuid failed: %s", type(exc).__name__)
        return ""


async def _ask_bot_uuid(ctx: typing.Any) -> tuple[asyncio.Task[typing.Any] | None, str]:
    """Start LangBot's get_bot_uuid for an event that does not carry its bot
    (0.5.5's *MessageReceived), and return once its request is written.

    The runtime's get_bot_uuid is a round trip to LangBot (about a
    millisecond): the caller prepares its body meanwhile. One yield lets
    the new task run up to its first real wait: the SDK serialises and
    writes the request without yielding before that (Handler.call_action).
    """
    carried = carried_bot_uuid(ctx.event)
    if carried:
        return None, carried
    ask = asyncio.get_running_loop().create_task(ctx.get_bot_uuid())
    await asyncio.sleep(0)
    return ask, ""


def _drop(task: asyncio.Task[typing.Any]) -> None:
    """End task if it still runs, and retrieve its failure if it had one."""
    if not task.done():
        task.cancel()
    elif not task.cancelled():
        task.exception()


def event_body(ctx: typing.Any, bot_uuid: str, data: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """The ``event`` field of an event invocation."""
    body: dict[str, typing.Any] = {"name": ctx.event_name, "bot_uuid": bot_uuid, "data": data}
    if getattr(ctx, "query_uuid", None):
        body["query_uuid"] = ctx.query_uuid
    return body


async def observe_event(
    fw: Forwarder, gen: p.Generated, ctx: typing.Any, gated: tuple[str, str] | None = None
) -> asyncio.Task[None] | None:
    """Forward an event the service only observes (observe_events), or one
    its event gate let pass (gated: the event's chat), off the chat's
    critical path: the returned task (None when dropped, see
    Forwarder.observe) asks the bot, sends the event and, for a gated one,
    keeps the gate of its reply; the caller returns at once. Only the
    get_bot_uuid request is written before this returns, so it leaves the
    worker before the event's answer: LangBot 4.10.8 finds the query
    (pipeline/pool.py) only until its pipeline ends, which may be right
    after the answer. Each task is bounded by the event timeout, their
    number by Forwarder.observe; a gated event waits first for its chat's
    previous one, so the service records a chat in order."""
    carried = carried_bot_uuid(ctx.event)
    name = getattr(ctx, "event_name", "?")
    loop = asyncio.get_running_loop()
    ask = None if carried else loop.create_task(ctx.get_bot_uuid())
    epoch, want = fw.gate_epoch(), fw.wants_gate()
    # the chat's forwarding before this one, which this one waits for
    prev = fw.last_forward(gated) if gated is not None else None

    async def run() -> None:
        deadline = loop.time() + gen.timeout("event")
        try:
            # The bot first: this task's first step runs before the
            # listener returns (see below), and the event's answer must
            # not wait for the serialisation.
            bot_uuid = await asyncio.wait_for(_bot_uuid(ask, carried), gen.timeout("event"))
            if ask is None:
                await asyncio.sleep(0)
            data = ctx.event.model_dump(mode="json")
            body = event_body(ctx, bot_uuid, data)
            if gated is not None:
                body["passed"] = True
                if want:
                    body["want_gate"] = True
                if prev is not None and not prev.done():
                    await asyncio.wait({prev}, timeout=max(deadline - loop.time(), 0.001))
            reply = await fw.request("event", body, max(deadline - loop.time(), 0.001))
            if gated is not None and isinstance(reply, dict):
                fw.take_gate(epoch, reply.get("gate"))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # nothing waits for it: logged, never raised
            log.warning("event %s not delivered: %s", name, type(exc).__name__)

    task = fw.observe(run())
    if task is not None and gated is not None:
        fw.chain(gated, task)
    if ask is not None:
        if task is None:
            ask.cancel()  # dropped: never asked
        else:
            # However the forwarding ends (close may cancel it before it
            # awaits the ask), the ask ends with it.
            task.add_done_callback(lambda _: _drop(ask))
            # The ask's first step writes the get_bot_uuid request (see
            # _ask_bot_uuid): before the event's answer, while LangBot
            # still holds the query.
            await asyncio.sleep(0)
    return task


def event_chat(event: typing.Any) -> tuple[str, str] | None:
    """The event's chat as an event gate names it (launcher type and id,
    the id as the service keeps it: a number's digits), or None."""
    lt = getattr(event, "launcher_type", None)
    lt = getattr(lt, "value", lt)
    lid = getattr(event, "launcher_id", None)
    if not isinstance(lt, str) or isinstance(lid, bool) or not isinstance(lid, (int, str)):
        return None
    return lt, str(lid)


def trigger_text(event: typing.Any) -> str | None:
    """The text an event gate's words are matched against: the Plain
    components of the event's message chain joined in order, as the
    service reads them; "" without a chain, None when it cannot be read."""
    chain = getattr(event, "message_chain", None)
    if chain is None:
        return ""
    comps = getattr(chain, "root", chain)
    if not isinstance(comps, list):
        return None
    parts = []
    for c in comps:
        if getattr(c, "type", None) == "Plain":
            text = getattr(c, "text", None)
            if not isinstance(text, str):
                return None
            parts.append(text)
    return "".join(parts)


async def forward_event(fw: Forwarder | None, gen: p.Generated, ctx: typing.Any) -> None:
    """Forward one event and apply the service's decision; unchanged on any failure.

    While NATS is disconnected or the config unusable the event passes at
    once, before anything else is asked (issue 32 D3). An event of a
    service that only observes (generated.json's observe_events) is
    forwarded in the background (observe_event) and passes at once; so is
    one the service's event gate covers (event_gate: its chat unwatched,
    its text without a trigger word; docs/protocol.md, "Event gate").
    Every other event waits for the decision, asking for a gate when the
    forwarder has none or it is half spent.
    """
    if fw is None:
        return
    try:
        await fw.ready()
    except (p.NotConfigured, p.Unavailable):
        return
    if gen.plugin.get("observe_events") is True:
        await observe_event(fw, gen, ctx)
        return
    chat = event_chat(ctx.event) if gen.plugin.get("event_gate") is True else None
    if chat is not None:
        gate = fw.gate()
        name = getattr(ctx, "event_name", "")
        # Beyond the background bound the event waits for its decision
        # instead: a gated event is never dropped unrecorded.
        if gate is not None and fw.can_observe() and gate.passes(name, chat, trigger_text(ctx.event)):
            await observe_event(fw, gen, ctx, gated=chat)
            return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + gen.timeout("event")
    epoch, want = fw.gate_epoch(), chat is not None and fw.wants_gate()

    async def run() -> dict[str, typing.Any]:
        ask, carried = await _ask_bot_uuid(ctx)
        try:
            data = ctx.event.model_dump(mode="json")  # while LangBot answers
            bot_uuid = await _bot_uuid(ask, carried)
        finally:
            if ask is not None and not ask.done():
                ask.cancel()  # the event timeout ended the wait
        body = event_body(ctx, bot_uuid, data)
        if want:
            body["want_gate"] = True
        if chat is not None:
            await fw.after(chat, max(deadline - loop.time(), 0.001))
        return await fw.request("event", body, max(deadline - loop.time(), 0.001))

    try:
        reply = await asyncio.wait_for(run(), gen.timeout("event"))
    except Exception as exc:  # fail open: the event passes unchanged
        log.warning("event %s passed unchanged: %s", getattr(ctx, "event_name", "?"), type(exc).__name__)
        return
    if not isinstance(reply, dict):
        return
    if chat is not None:
        fw.take_gate(epoch, reply.get("gate"))
    if reply.get("prevent_default") is True:
        ctx.prevent_default()
    if reply.get("prevent_postorder") is True:
        ctx.prevent_postorder()
    chain = reply.get("reply_message_chain")
    if isinstance(chain, list) and hasattr(ctx.event, "reply_message_chain"):
        # Only events that carry a reply (NormalMessageResponded, ...) take one.
        try:
            ctx.event.reply_message_chain = MessageChain.model_validate(chain)
        except Exception as exc:
            log.warning("event %s: reply_message_chain ignored: %s", ctx.event_name, type(exc).__name__)


def listened_events(gen: p.Generated, events: typing.Any) -> list[typing.Any]:
    """The SDK event classes to listen to: each declared event that the
    SDK's events module has. An optional one (SDK 0.7's MessageReceived)
    missing from an older SDK is skipped quietly; any other is an error."""
    optional = set(gen.plugin.get("optional_events") or [])
    out = []
    for name in gen.plugin["events"]:
        event_type = getattr(events, name, None)
        if event_type is None:
            if name in optional:
                log.info("event %s is not in this SDK; not listened to", name)
            else:
                log.error("event %s is not known to this SDK; not listened to", name)
            continue
        out.append(event_type)
    return out


class ForwardingEventListener(EventListener):
    """Registers one forwarding handler for each declared event the SDK has."""

    def __init__(self) -> None:
        super().__init__()
        for event_type in listened_events(p.load(), sdk_events):
            self.handler(event_type)(self._forward)

    async def _forward(self, ctx: typing.Any) -> None:
        await forward_event(_forwarder(self), _gen(self), ctx)


async def forward_page(fw: Forwarder | None, gen: p.Generated, page_id: str, request: PageRequest) -> PageResponse:
    """The page answer: the service's data, or ``"<code>[ <reason>]: <message>"``.

    The reason (e.g. ``outcome_unknown``) is what the console needs to
    decide whether a reply may be retried with the same key.
    """
    lang = fw.language if fw is not None else gen.plugin["default_language"]
    if fw is None:
        return PageResponse.fail(f"503: {gen.text('unavailable', lang)}")
    body: dict[str, typing.Any] = {"page_id": page_id, "endpoint": request.endpoint, "method": request.method}
    if request.body is not None:
        body["body"] = request.body
    try:
        reply = await fw.request("page", body, gen.timeout("page"))
    except p.NotConfigured as exc:
        return PageResponse.fail(f"503 not_configured: {gen.not_configured(lang, exc.item, fw.binding)}")
    except p.Unavailable:
        return PageResponse.fail(f"503: {gen.text('unavailable', lang)}")
    except p.ServiceError as err:
        head = f"{err.code} {err.reason}" if err.reason else str(err.code)
        return PageResponse.fail(f"{head}: {err.message or err.word}")
    except Exception as exc:
        log.error("page %s failed: %s", page_id, type(exc).__name__)
        return PageResponse.fail(f"503: {gen.text('unavailable', lang)}")
    return PageResponse.ok(reply.get("data") if isinstance(reply, dict) else None)


class ForwardingPage(Page):
    """A page whose API calls the service answers."""

    page_id: typing.ClassVar[str] = ""

    async def handle_api(self, request: PageRequest) -> PageResponse:
        return await forward_page(_forwarder(self), _gen(self), self.page_id, request)
