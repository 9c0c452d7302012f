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

    ``initialize`` refuses a binding whose tokens are not valid scope tokens
    (a clear error, never a rewritten scope) and an unusable NATS config;
    otherwise it starts the forwarder in the background and returns at once.
    """

    forwarder: Forwarder | None = None
    generated: p.Generated | None = None

    async def initialize(self) -> None:
        self.generated = p.load()
        handler = getattr(self, "plugin_runtime_handler", None)
        self.forwarder = Forwarder(self.generated, binding_of(handler), self.get_config(), SDKRuntime(handler))
        self.forwarder.start()
        log.info("%s forwarding for %s", self.generated.name, self.forwarder.scope)
