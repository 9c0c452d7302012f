from __future__ import annotations

from langbot_plugin.api.definition.plugin import BasePlugin


class Probe(BasePlugin):
    """Fixture: every component answers from what it was given."""
