"""Forwarding core of the LangBot packages of the langbot-nats plugins.

Every package built by ``lbctl package`` carries this core unchanged; what
differs between packages (plugin name, commands, tools, events, pages,
texts) and every protocol constant (subjects, headers, error words) is in
``generated.json``, written by the Go builder from the service's
declaration and from ``pkg/bus``.

Modules:

- ``protocol``: the generated constants, scope checks, config hygiene;
- ``forwarder``: one worker's NATS side (invocations, host actions,
  attach), independent of the SDK so it can be tested alone;
- ``components``: the SDK component classes the generated files subclass;
- ``plugin``: the SDK plugin class that starts the forwarder.

Imports: the standard library, nats-py and (components, plugin) the
LangBot plugin SDK.
"""
