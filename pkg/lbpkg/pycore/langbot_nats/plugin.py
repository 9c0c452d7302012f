"""The SDK plugin class: starts one Forwarder per worker, never blocking start."""

from __future__ import annotations

import logging
import typing

from langbot_plugin.api.definition.plugin import BasePlugin
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction
from langbot_plugin.entities.io.errors import ActionCallError, ActionCallTimeoutError, ConnectionClosedError

from . import protocol as p
from .forwarder import Forwarder, HostCallFailed, HostTimeout

log = logging.getLogger("langbot_nats")


class SDKRuntime:
    """Host actions through the worker's runtime connection.

    The runtime attaches the connection's trusted binding to every call, so
    data never carries scope fields of its own.
    """

    def __init__(self, handler: typing.Any) -> None:
        self._handler = handler

    async def call(self, action: str, data: dict[str, typing.Any], timeout: float) -> dict[str, typing.Any]:
        try:
            return await self._handler.call_action(PluginToRuntimeAction(action), data, timeout=timeout)
        except ActionCallTimeoutError as exc:
            raise HostTimeout(str(exc)) from None
        except (ActionCallError, ConnectionClosedError) as exc:
            raise HostCallFailed(str(exc)) from None


def binding_of(handler: typing.Any) -> dict[str, typing.Any]:
    """The worker's trusted InstallationBinding as a plain dict."""
    bound = getattr(handler, "bound_action_context", None)
    if bound is None:
        raise p.BindingError("the worker has no installation binding")
    return bound.model_dump() if hasattr(bound, "model_dump") else dict(bound)


class ForwardingPlugin(BasePlugin):
    """Forwards every call of this installation to the service over NATS.

    ``initialize`` never raises (LangBot 4.10.8 gives a new installation
    config ``{}``, and a worker that fails to start is never listed, so its
    form could not be reached). Missing items take their manifest default;
    an unusable config leaves the worker running and every command, tool
    and page answers "not configured: <item>"; a binding whose tokens are
    not valid scope tokens (refused, never rewritten) leaves it answering
    "unavailable". Otherwise the forwarder starts in the background and
    ``initialize`` returns at once.

    The config and binding are read here and nowhere else: SDK 0.7 runs
    ``initialize`` in an invocation that ends when it returns.
    """

    forwarder: Forwarder | None = None
    generated: p.Generated | None = None

    async def initialize(self) -> None:
        gen = self.generated = p.load()
        try:
            handler = getattr(self, "plugin_runtime_handler", None)
            fw = Forwarder(gen, binding_of(handler), self.get_config(), SDKRuntime(handler))
        except p.BindingError as exc:
            log.error("%s cannot forward: %s", gen.name, exc)  # names the field only
            return
        except Exception as exc:  # never raise out of initialize
            log.error("%s cannot forward: %s", gen.name, type(exc).__name__)
            return
        self.forwarder = fw
        if fw.defaulted:
            log.info("%s for %s: %d config items missing, manifest defaults used: %s",
                     gen.name, fw.scope, len(fw.defaulted), ", ".join(fw.defaulted))
        if fw.problem:
            b = fw.binding
            log.error("%s for %s (instance %s, workspace %s) is not configured: %s; every call answers so",
                      gen.name, fw.scope, b["instance_uuid"], b["workspace_uuid"], fw.problem)
            return
        fw.start()
        b = fw.binding
        log.info("%s forwarding for %s (instance %s, workspace %s)", gen.name, fw.scope, b["instance_uuid"], b["workspace_uuid"])
