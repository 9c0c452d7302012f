"""One worker's NATS side: invocations out, host actions in, attach.

The forwarder knows nothing of the SDK: the runtime it calls for host
actions is any object with an async ``call(action, data, timeout)`` that
raises HostTimeout or HostCallFailed, so it is tested against a real NATS
server without a LangBot.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import random
import re
import ssl
import typing

import nats
import nats.errors

from . import protocol as p

log = logging.getLogger("langbot_nats")


class HostTimeout(Exception):
    """The runtime did not answer a host action in time: outcome unknown."""


class HostCallFailed(Exception):
    """The runtime answered a host action with an error; the text is LangBot's."""


class Runtime(typing.Protocol):
    async def call(self, action: str, data: dict[str, typing.Any], timeout: float) -> dict[str, typing.Any]: ...


# NOT_ATTACHED_PAUSE is the first pause before a request refused as
# not_attached is sent again (doubling until the request's deadline): the
# service applies an acknowledged attach within milliseconds.
NOT_ATTACHED_PAUSE = 0.05

# CLOSE_DRAIN_TIMEOUT bounds how long close waits for the connection to
# drain; the runtime stops a plugin within seconds.
CLOSE_DRAIN_TIMEOUT = 5.0


async def _stop(task: asyncio.Task[typing.Any]) -> None:
    """Cancel task until it ends.

    One cancel is not enough: before Python 3.12, asyncio.wait_for returns
    the result and drops a cancel that arrives as its future completes (an
    attach acknowledged at the moment of shutdown), and the task then sleeps
    for the attach refresh period. Repeating the cancel ends it.
    """
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=0.5)
    if not task.cancelled():
        task.exception()  # retrieved; _run logs its own failures


# OBSERVE_IN_FLIGHT bounds the observed events (components.observe_event)
# one installation forwards at once in the background: beyond it an event
# is dropped, never waited for, so a slow or stuck service costs the chat
# nothing and the worker's memory stays bounded.
OBSERVE_IN_FLIGHT = 64

# OBSERVE_DROP_LOG_INTERVAL is how often dropped observed events are
# reported again (with how many since the last report).
OBSERVE_DROP_LOG_INTERVAL = 60.0

# GATE_TTL_MAX caps the life of a service's event gate whatever it says:
# a lost revocation is outlived by at most this.
GATE_TTL_MAX = 60.0


class Gate:
    """A service's event gate (docs/protocol.md, "Event gate"), as received.

    ``passes`` tells whether an event may pass at once: its name is
    covered, its chat is not watched, and its text matches no trigger.
    """

    def __init__(self, raw: typing.Any, now: float) -> None:
        if not isinstance(raw, dict):
            raise ValueError("gate is not an object")
        ttl, events, loud, words = raw.get("ttl_ms"), raw.get("events"), raw.get("loud"), raw.get("words")
        if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
            raise ValueError("gate ttl_ms is not a positive integer")
        if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
            raise ValueError("gate events is not a list of names")
        if not isinstance(loud, list) or not all(
            isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c) for c in loud
        ):
            raise ValueError("gate loud is not a list of [type, id]")
        if not isinstance(words, str):
            raise ValueError("gate words is not a string")
        self.ttl = min(ttl / 1000.0, GATE_TTL_MAX)
        self.until = now + self.ttl
        self.events = frozenset(events)
        self.loud = frozenset((c[0], c[1]) for c in loud)
        self.words = re.compile(words) if words else None

    def passes(self, name: str, chat: tuple[str, str], text: str | None) -> bool:
        """Whether an event named name of chat, whose trigger text is text
        (None: it cannot be read), may pass without a decision."""
        if name not in self.events or chat in self.loud:
            return False
        if self.words is None:
            return True
        return text is not None and self.words.search(text) is None


# ERROR_LOG_INTERVAL is how often a repeated connection error (a wrong
# password, NATS down) is logged again: the client retries every second,
# and a log line a second tells the operator nothing new.
ERROR_LOG_INTERVAL = 300.0


class ConfigError(ValueError):
    """The package config cannot be used; ``item`` names the setting, never its value."""

    def __init__(self, item: str, why: str) -> None:
        super().__init__(f"{item} {why}")
        self.item = item


def _auth_reason(exc: BaseException) -> str:
    """The server's reason when exc is an authorization failure, else ""."""
    if isinstance(exc, nats.errors.AuthorizationError):
        return "Authorization Violation"
    text = str(exc)
    low = text.lower()
    if isinstance(exc, nats.errors.Error) and low.startswith("nats: ") and ("authorization" in low or "authentication" in low):
        # The server's -ERR text ('Authorization Violation', 'User
        # Authentication Expired'): a fixed phrase, never a credential.
        return text[6:].strip().strip("'")[:200]
    return ""


def _connect_options(gen: p.Generated, config: typing.Mapping[str, typing.Any], name: str) -> dict[str, typing.Any]:
    raw = str(config.get("nats_url") or "").strip()
    servers = [s.strip() for s in raw.split(",") if s.strip()]
    if not servers:
        raise ConfigError("nats_url", "is empty")
    for s in servers:
        if not (s.startswith("nats://") or s.startswith("tls://")):
            raise ConfigError("nats_url", "must use nats:// or tls://")
    opts: dict[str, typing.Any] = {
        "servers": servers,
        "name": name,
        "allow_reconnect": True,
        "max_reconnect_attempts": -1,
        "reconnect_time_wait": 1,
        "connect_timeout": 2,
    }
    user = str(config.get("nats_user") or "")
    if user:
        opts["user"] = user
        opts["password"] = str(config.get("nats_password") or "")
        opts["inbox_prefix"] = gen.protocol["inbox_prefix"]["user"].format(user=user)
    token = str(config.get("nats_token") or "")
    if token:
        opts["token"] = token
    ca = str(config.get("nats_tls_ca") or "").strip()
    if ca or any(s.startswith("tls://") for s in servers):
        try:
            opts["tls"] = ssl.create_default_context(cadata=ca or None)
        except (ssl.SSLError, ValueError):
            raise ConfigError("nats_tls_ca", "is not a PEM certificate") from None
    return opts


class Forwarder:
    """Forwards one installation's calls to its service over one NATS connection.

    ``start`` returns at once; a background task connects (retrying with
    backoff), serves ``<prefix>.host.*.<scope>`` in a queue group of the
    installation, and publishes the attach until it is acknowledged, then
    again every refresh period.

    Missing config items take their manifest default. A config that still
    cannot be used (no or a bad nats_url, a bad prefix or CA) does not
    raise: ``problem`` names the item, nothing connects, and every request
    raises NotConfigured at once. The binding must be valid (BindingError).
    Everything the forwarder needs is read here, once: SDK 0.7 ends the
    invocation that runs ``initialize``, and its background tasks may not
    read the config or binding again.
    """

    def __init__(
        self,
        gen: p.Generated,
        binding: typing.Mapping[str, typing.Any],
        config: typing.Mapping[str, typing.Any] | None,
        runtime: Runtime | None,
    ) -> None:
        self.gen = gen
        self.binding = p.check_binding(gen, binding)
        self.scope = p.scope_of(self.binding)
        self.config, self.defaulted = p.with_defaults(gen, config)
        # The service's items go as LangBot gave them: the service applies
        # its own defaults (pkg/settings), which a deployment may set apart
        # from the manifest's (githubkit's API URL).
        self.forward_config = p.forwarded_config(gen, config)
        self.language = p.language(gen, self.config)
        self.runtime = runtime
        self.problem = ""
        self.prefix = str(self.config.get("subject_prefix") or gen.protocol["default_prefix"])
        self._opts: dict[str, typing.Any] = {}
        try:
            if re.fullmatch(gen.protocol["scope_token_pattern"], self.prefix) is None:
                raise ConfigError("subject_prefix", "is not a valid subject token")
            self._opts = _connect_options(gen, self.config, gen.protocol["connect_name"].format(plugin=gen.name, scope=self.scope))
        except ConfigError as exc:
            self.problem = exc.item
        self._nc: typing.Any = None
        self._connected = asyncio.Event()
        # Set once the first connection attempt has ended either way: until
        # then a call may wait (ConnectGrace) for it; afterwards a call
        # while disconnected fails at once (issue 32 D3).
        self._tried = asyncio.Event()
        # Set once an attach of this worker is acknowledged by the stream.
        self._attach_acked = asyncio.Event()
        self._err_kind = ""
        self._err_logged = 0.0
        self._err_repeats = 0
        self._task: asyncio.Task[None] | None = None
        self._host_tasks: set[asyncio.Task[None]] = set()
        self._host_slots = asyncio.Semaphore(64)
        self._observed: set[asyncio.Task[None]] = set()
        self.observe_dropped = 0
        self._drop_logged = -OBSERVE_DROP_LOG_INTERVAL
        self._drop_repeats = 0
        self._idem: collections.OrderedDict[str, asyncio.Future[typing.Any]] = collections.OrderedDict()
        self.attach_acks = 0
        self._closing = False
        # The event gate and its epoch: every revocation, disconnect or
        # connection error drops the gate and moves the epoch on, and a
        # gate is taken from a reply only if the epoch did not move while
        # its request was out (it may predate the revocation).
        self._gate: Gate | None = None
        self._gate_epoch = 0
        self.gate_revokes = 0
        # Set when the server refused the revocation subscription: a gate
        # that cannot be revoked is never used.
        self.gate_refused = False
        # The last background forwarding of each chat, which the chat's
        # next event waits for: its history keeps the order of the chat.
        self._chains: dict[tuple[str, str], asyncio.Task[typing.Any]] = {}

    # ----- lifecycle

    def start(self) -> None:
        """Start connecting, serving and attaching in the background."""
        if self._task is None and not self.problem:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        """Stop the background work and drain the connection, in bounded time."""
        self._closing = True
        if self._task is not None:
            await _stop(self._task)
        for t in list(self._host_tasks):
            t.cancel()
        # Observed events still in flight are cancelled and waited for
        # (each until it ends, as _stop does), before the connection drains.
        if self._observed:
            await asyncio.gather(*(_stop(t) for t in list(self._observed)))
        if self._nc is not None:
            try:
                await asyncio.wait_for(self._nc.drain(), CLOSE_DRAIN_TIMEOUT)
            except (asyncio.TimeoutError, Exception):
                pass
            if not self._nc.is_closed:
                try:
                    await self._nc.close()
                except Exception:
                    pass

    @property
    def connected(self) -> bool:
        return self._connected.is_set() and self._nc is not None and self._nc.is_connected

    async def _run(self) -> None:
        try:
            await self._serve_and_attach()
        except asyncio.CancelledError:
            raise
        except Exception:
            # A bug, not an outage: log it (no values) rather than die silently.
            log.exception("forwarder for %s stopped", self.scope)

    async def _serve_and_attach(self) -> None:
        backoff = 0.2
        while True:
            try:
                # nats-py retries a failed first connect by itself (every
                # reconnect_time_wait, reporting each to error_cb) until it
                # succeeds; this loop only sees what it gives up on.
                nc = await nats.connect(
                    **self._opts, error_cb=self._on_error,
                    disconnected_cb=self._on_disconnected, reconnected_cb=self._on_reconnected,
                )
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._tried.set()
                await self._on_error(exc)
                await asyncio.sleep(backoff * (1 + random.random() / 2))
                backoff = min(backoff * 2, self.gen.timeout("attach_backoff_max"))
        self._nc = nc
        self._err_kind, self._err_logged, self._err_repeats = "", 0.0, 0
        serve = p.subject(self.gen, "host_serve", prefix=self.prefix, scope=self.scope)
        await nc.subscribe(serve, queue=f"{self.gen.name}-{self.binding['installation_uuid']}", cb=self._on_host)
        if self.gen.plugin.get("event_gate") is True:
            # Every worker of the installation must hear a revocation: no
            # queue group.
            await nc.subscribe(self._revoke_subject, cb=self._on_revoke)
        await nc.flush()
        self._connected.set()
        self._tried.set()
        log.info("connected to nats for %s", self.scope)
        await self._attach_loop()

    async def _on_error(self, exc: Exception) -> None:
        """Log a connection error once, then at most every ERROR_LOG_INTERVAL.

        An authorization failure is an ERROR with the server's reason and
        the installation's instance and workspace (the tenant whose
        credential is wrong); anything else a WARNING with its type only,
        since its text may carry the address.
        """
        self._tried.set()
        # a revocation may have been lost with it (a slow consumer)
        self.drop_gate()
        if "permissions violation" in str(exc).lower() and self.gen.protocol["gate_revoke_action"] in str(exc):
            if not self.gate_refused:
                log.error("nats refused %s the event gate's revocations: every event waits for its decision", self.scope)
            self.gate_refused = True
        reason = _auth_reason(exc)
        kind = "auth" if reason else type(exc).__name__
        now = asyncio.get_running_loop().time()
        # One report per interval whatever the kind: a refused login is
        # followed by the server closing the socket (a reset), and the two
        # alternate on every retry. Only an authorization failure, the
        # more useful of the two, may replace a report of another kind.
        if now - self._err_logged < ERROR_LOG_INTERVAL and (kind != "auth" or self._err_kind == "auth"):
            self._err_repeats += 1
            return
        again = f" ({self._err_repeats} more since the last report)" if self._err_repeats else ""
        self._err_kind, self._err_logged, self._err_repeats = kind, now, 0
        b = self.binding
        if reason:
            log.error(
                "nats authorization failure for %s (instance %s, workspace %s): %s; check nats_user, nats_password "
                "and nats_token (a tenant credential for this instance: lbctl tenant issue --instance %s); retrying, "
                "next report in %ds at the earliest%s",
                self.scope, b["instance_uuid"], b["workspace_uuid"], reason, b["instance_uuid"], ERROR_LOG_INTERVAL, again,
            )
        else:
            log.warning(
                "nats connection error for %s: %s; retrying, next report in %ds at the earliest%s",
                self.scope, kind, ERROR_LOG_INTERVAL, again,
            )

    async def _on_disconnected(self) -> None:
        self.drop_gate()
        if not self._closing:
            log.warning("disconnected from nats for %s; calls answer unavailable until reconnected", self.scope)

    async def _on_reconnected(self) -> None:
        self._err_kind, self._err_logged, self._err_repeats = "", 0.0, 0
        log.info("reconnected to nats for %s", self.scope)

    async def _attach_loop(self) -> None:
        js = self._nc.jetstream()
        subj = p.subject(
            self.gen, "lifecycle", prefix=self.prefix, plugin=self.gen.name,
            kind=self.gen.protocol["attach_kind"], scope=self.scope,
        )
        body = json.dumps({"binding": self.binding, "config": self.forward_config, "enabled": True}).encode()
        msg_id = self.gen.protocol["attach_msg_id"].format(**self.binding)
        while True:
            backoff = 0.2
            while True:
                headers = {
                    self.gen.header("msg_id"): msg_id,
                    self.gen.header("content_type"): "application/json",
                    self.gen.header("traceparent"): p.new_traceparent(),
                }
                try:
                    await js.publish(subj, body, timeout=5, headers=headers)
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning("attach of %s not acknowledged (%s); retrying", self.scope, type(exc).__name__)
                    await asyncio.sleep(backoff * (1 + random.random() / 2))
                    backoff = min(backoff * 2, self.gen.timeout("attach_backoff_max"))
            self.attach_acks += 1
            self._attach_acked.set()
            log.info("attach of %s acknowledged", self.scope)
            if self._closing:
                return
            await asyncio.sleep(self.gen.timeout("attach_refresh"))

    # ----- event gate

    @property
    def _revoke_subject(self) -> str:
        return p.subject(self.gen, "host", prefix=self.prefix, action=self.gen.protocol["gate_revoke_action"], scope=self.scope)

    async def _on_revoke(self, msg: typing.Any) -> None:
        self.gate_revokes += 1
        self.drop_gate()

    def drop_gate(self) -> None:
        """Forget the event gate; replies to requests already out bring none."""
        self._gate = None
        self._gate_epoch += 1

    def gate(self) -> Gate | None:
        """The event gate while it may be used: received, not expired, connected."""
        g = self._gate
        if g is None or not self.connected or asyncio.get_running_loop().time() >= g.until:
            return None
        return g

    def gate_epoch(self) -> int:
        """The epoch to pass to take_gate for a request sent now."""
        return self._gate_epoch

    def wants_gate(self) -> bool:
        """Whether the next event should ask for a gate: none, or half its life gone."""
        g = self._gate
        return g is None or asyncio.get_running_loop().time() >= g.until - g.ttl / 2

    def take_gate(self, epoch: int, raw: typing.Any) -> None:
        """Keep a reply's gate, if any, unless the epoch moved since its
        request was sent (a revocation or disconnect came meanwhile)."""
        if raw is None or epoch != self._gate_epoch or not self.connected or self.gate_refused:
            return
        try:
            self._gate = Gate(raw, asyncio.get_running_loop().time())
        except (ValueError, re.error) as exc:
            log.warning("event gate for %s ignored: %s", self.scope, type(exc).__name__)

    def last_forward(self, chat: tuple[str, str]) -> asyncio.Task[typing.Any] | None:
        """The chat's last background forwarding, while it runs."""
        prev = self._chains.get(chat)
        return prev if prev is not None and not prev.done() else None

    def chain(self, chat: tuple[str, str], task: asyncio.Task[typing.Any]) -> None:
        """Make task the chat's last background forwarding."""
        self._chains[chat] = task

        def done(t: asyncio.Task[typing.Any]) -> None:
            if self._chains.get(chat) is t:
                del self._chains[chat]

        task.add_done_callback(done)

    async def after(self, chat: tuple[str, str], timeout: float) -> None:
        """Wait, at most timeout, for the chat's last background forwarding."""
        prev = self.last_forward(chat)
        if prev is not None:
            await asyncio.wait({prev}, timeout=timeout)

    # ----- observed events

    def can_observe(self) -> bool:
        """Whether observe would take one more event now."""
        return not self._closing and len(self._observed) < OBSERVE_IN_FLIGHT

    def observe(self, work: typing.Coroutine[typing.Any, typing.Any, None]) -> asyncio.Task[None] | None:
        """Run work (one observed event's forwarding) in the background.

        Returns its task, or None when it was dropped: while closing, or
        with OBSERVE_IN_FLIGHT already running (then counted in
        ``observe_dropped`` and logged at most every
        OBSERVE_DROP_LOG_INTERVAL).
        It never waits. close cancels what is still running.
        """
        if self._closing:
            work.close()
            return None
        if len(self._observed) >= OBSERVE_IN_FLIGHT:
            work.close()
            self.observe_dropped += 1
            now = asyncio.get_running_loop().time()
            if now - self._drop_logged < OBSERVE_DROP_LOG_INTERVAL:
                self._drop_repeats += 1
            else:
                again = f" ({self._drop_repeats} more since the last report)" if self._drop_repeats else ""
                self._drop_logged, self._drop_repeats = now, 0
                log.warning("event for %s not forwarded: %d already in flight%s; next report in %ds at the earliest",
                            self.scope, OBSERVE_IN_FLIGHT, again, OBSERVE_DROP_LOG_INTERVAL)
            return None
        task = asyncio.get_running_loop().create_task(work)
        self._observed.add(task)
        task.add_done_callback(self._observed.discard)
        return task

    # ----- invocations

    async def ready(self, grace: float = 0.0) -> None:
        """Return when a request can be sent now; raise at once otherwise.

        NotConfigured while the config is unusable; Unavailable while NATS
        is disconnected (nats-py would hold the request in its reconnect
        buffer until the timeout). Only before the first connection attempt
        has ended does it wait, at most grace.
        """
        if self.problem:
            raise p.NotConfigured(self.problem)
        if not self.connected and grace > 0 and not self._tried.is_set():
            try:
                await asyncio.wait_for(self._tried.wait(), grace)
            except asyncio.TimeoutError:
                pass
        if not self.connected:
            raise p.Unavailable("not connected")

    async def request(self, endpoint: str, field: typing.Any, timeout: float) -> typing.Any:
        """Invoke the service's endpoint with the body field ``{endpoint: field}``.

        Returns the decoded reply; raises ServiceError for an error reply and
        Unavailable when NATS or the service does not answer within timeout.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await self.ready(min(timeout, self.gen.timeout("connect_grace")))
        body = json.dumps({"binding": self.binding, "config": self.forward_config, endpoint: field}).encode()
        headers = {
            self.gen.header("invocation_id"): p.new_invocation_id(),
            self.gen.header("traceparent"): p.new_traceparent(),
            self.gen.header("content_type"): "application/json",
        }
        subj = p.subject(
            self.gen, "invocation", prefix=self.prefix, plugin=self.gen.name,
            endpoint=self.gen.protocol["endpoints"][endpoint], scope=self.scope,
        )
        not_attached = self.gen.protocol["binding_reasons"]["not_attached"]
        pause = NOT_ATTACHED_PAUSE
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise p.Unavailable("timeout")
            try:
                msg = await self._nc.request(subj, body, timeout=remaining, headers=headers)
            except asyncio.CancelledError:
                raise
            except (nats.errors.Error, asyncio.TimeoutError, OSError) as exc:
                raise p.Unavailable(type(exc).__name__) from exc
            try:
                return p.decode_reply(self.gen, msg.headers, msg.data)
            except p.ServiceError as err:
                # Right after the worker starts its attach may not be
                # applied yet (the service refuses a scope it has no attach
                # of, issue 26): wait for the attach's acknowledgement and
                # ask again, with short pauses, until the deadline.
                if err.code != 403 or err.reason != not_attached or deadline - loop.time() <= pause:
                    raise
            if not self._attach_acked.is_set():
                try:
                    await asyncio.wait_for(self._attach_acked.wait(), max(deadline - loop.time() - pause, 0.001))
                except asyncio.TimeoutError:
                    pass
            await asyncio.sleep(pause)
            pause *= 2

    # ----- host actions

    async def _on_host(self, msg: typing.Any) -> None:
        if msg.subject == self._revoke_subject:
            return  # served by _on_revoke, in every worker
        # nats-py runs a subscription's callbacks one after another; a send
        # may take seconds, so each request gets its own task, bounded.
        if self._host_slots.locked():
            await self._reply(msg, p.make_error(self.gen, 429, "too many host actions in flight"))
            return
        task = asyncio.get_running_loop().create_task(self._host_task(msg))
        self._host_tasks.add(task)
        task.add_done_callback(self._host_tasks.discard)

    async def _host_task(self, msg: typing.Any) -> None:
        async with self._host_slots:
            try:
                result: typing.Any = await self.serve_host(msg.subject, msg.headers or {}, msg.data)
            except p.ServiceError as err:
                result = err
            except Exception as exc:
                log.error("host action for %s failed: %s", self.scope, type(exc).__name__)
                result = p.make_error(self.gen, 500, "internal error")
            await self._reply(msg, result)

    async def _reply(self, msg: typing.Any, result: typing.Any) -> None:
        if not msg.reply:
            return
        if isinstance(result, p.ServiceError):
            headers, body = p.encode_error(self.gen, result)
        else:
            headers, body = {self.gen.header("content_type"): "application/json"}, json.dumps(result).encode()
        try:
            await self._nc.publish(msg.reply, body, headers=headers)
        except Exception as exc:
            log.warning("host action reply for %s lost: %s", self.scope, type(exc).__name__)

    async def serve_host(self, subject: str, headers: typing.Mapping[str, str], data: bytes) -> typing.Any:
        """Check and perform one host action (spec 5); raises ServiceError."""
        err = lambda code, msg, reason="": p.make_error(self.gen, code, msg, reason)  # noqa: E731
        head = f"{self.prefix}.host."
        tail = "." + self.scope
        if not subject.startswith(head) or not subject.endswith(tail):
            raise err(400, "subject is not a host action of this installation")
        action = subject[len(head) : -len(tail)]
        try:
            body = json.loads(data)
        except ValueError:
            raise err(400, "body is not JSON") from None
        if (
            not isinstance(body, dict)
            or not isinstance(body.get("binding"), dict)
            or not isinstance(body.get("plugin"), str)
            or not isinstance(body.get("data"), dict)
        ):
            raise err(400, "body must be {binding, plugin, data}")
        if body["plugin"] != self.gen.name:
            raise err(403, "plugin is not this package's")
        b = body["binding"]
        if any(b.get(f) != self.binding[f] for f in p.BINDING_FIELDS):
            raise err(403, "binding is not this worker's")
        if action not in self.gen.protocol["host_actions"]:
            raise err(404, "unknown host action")
        if action == "invoke_llm":
            return await self._invoke_llm(body["data"])
        key = headers.get(self.gen.header("idempotency_key")) or ""
        if not key:
            return await self._call_runtime(action, body["data"])
        fut = self._idem.get(key)
        if fut is not None:
            # A repeat: answer what the first attempt answered, without
            # sending again (the first may still be running).
            return await asyncio.shield(fut)
        fut = asyncio.get_running_loop().create_future()
        self._idem[key] = fut
        while len(self._idem) > self.gen.protocol["idempotency_keys"]:
            self._idem.popitem(last=False)
        try:
            result = await self._call_runtime(action, body["data"])
        except BaseException as exc:
            # A failed send is not recorded: a retry sends again.
            self._idem.pop(key, None)
            if not fut.done():
                fut.set_exception(exc)
                fut.exception()  # retrieved, so an unawaited future does not warn
            raise
        fut.set_result(result)
        return result

    async def _invoke_llm(self, data: dict[str, typing.Any]) -> dict[str, typing.Any]:
        """One completion through the SDK (docs/protocol.md, invoke_llm).

        The model is the one the service names, else the first the
        workspace lists; none answers 404 with the no-model reason. The
        messages are chat text: never logged.
        """
        err = lambda code, msg, reason="": p.make_error(self.gen, code, msg, reason)  # noqa: E731
        model = data.get("llm_model_uuid") or ""
        messages = data.get("messages")
        if (
            not isinstance(model, str)
            or not isinstance(messages, list)
            or not messages
            or not all(isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages)
        ):
            raise err(400, "invoke_llm data must be {llm_model_uuid?, messages: [{role, content}], timeout_ms?}")
        timeout = self.gen.timeout("llm_call")
        ms = data.get("timeout_ms")
        if isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms > 0:
            timeout = min(timeout, ms / 1000.0)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if not model:
            listed = await self._call_runtime("get_llm_models", {}, min(timeout, self.gen.timeout("host_call")))
            models = listed.get("llm_models") if isinstance(listed, dict) else None
            ids = [m if isinstance(m, str) else m.get("uuid") for m in models or [] if isinstance(m, (str, dict))]
            ids = [i for i in ids if isinstance(i, str) and i]
            if not ids:
                raise err(404, "the workspace has no LLM model", self.gen.protocol["llm_no_model_reason"])
            model = ids[0]
        left = deadline - loop.time()
        if left <= 0:
            raise err(503, "the runtime did not answer in time; outcome unknown", "timeout")
        result = await self._call_runtime(
            "invoke_llm",
            {
                "llm_model_uuid": model,
                "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
                "funcs": [],
                "extra_args": {},
                "timeout": left,
            },
            left,
        )
        text = _message_text(result.get("message") if isinstance(result, dict) else None)
        if not text:
            raise err(500, "the model answered without text")
        return {"text": text, "llm_model_uuid": model}

    async def _call_runtime(self, action: str, data: dict[str, typing.Any], timeout: float = 0.0) -> typing.Any:
        err = lambda code, msg, reason="": p.make_error(self.gen, code, msg, reason)  # noqa: E731
        if self.runtime is None:
            raise err(503, "runtime not connected")
        try:
            return await self.runtime.call(action, data, timeout or self.gen.timeout("host_call"))
        except HostTimeout:
            raise err(503, "the runtime did not answer in time; outcome unknown", "timeout") from None
        except HostCallFailed as exc:
            text = str(exc).lower()
            if "timed out" in text:
                # The runtime's own call to LangBot timed out: as ambiguous as ours.
                raise err(503, "the runtime did not answer in time; outcome unknown", "timeout") from None
            if "stale" in text or "not registered" in text or "binding" in text or "does not match" in text:
                raise err(403, "the runtime refused this installation's binding") from None
            for reason, phrases in self.gen.protocol["refusals"].items():
                if any(ph in text for ph in phrases):
                    # The platform refused for good: a retry is refused again.
                    raise err(400, "the platform refused the message", reason) from None
            if action == "invoke_llm" and "llm model" in text and "not found" in text:
                raise err(404, "no such LLM model in this workspace", self.gen.protocol["llm_no_model_reason"]) from None
            if "not found" in text:
                raise err(404, "bot or query not found") from None
            if "busy" in text:
                raise err(429, "the runtime is busy") from None
            if action in ("invoke_llm", "get_llm_models"):
                # A provider's error text may quote the prompt: not logged.
                log.error("host action %s for %s failed in the runtime", action, self.scope)
                raise err(500, "the LLM call failed") from None
            log.error("host action %s for %s failed in the runtime: %s", action, self.scope, exc)
            raise err(500, "host action failed") from None


def _message_text(message: typing.Any) -> str:
    """The text of LangBot's provider Message: its content string, or its
    text elements joined."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [e.get("text") for e in content if isinstance(e, dict) and e.get("type") == "text"]
        return "".join(t for t in parts if isinstance(t, str)).strip()
    return ""
