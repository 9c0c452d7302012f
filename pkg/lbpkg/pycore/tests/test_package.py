"""The built package loads as LangBot's worker loads it (PK-8).

The Go test runs this suite with the unpacked package as the working
directory, as the runtime does.
"""

from __future__ import annotations

import os
import unittest

from langbot_nats import protocol as p
from langbot_plugin.api.definition.components.command.command import Command
from langbot_plugin.api.definition.components.common.event_listener import EventListener
from langbot_plugin.api.definition.components.page import Page
from langbot_plugin.api.definition.components.tool.tool import Tool
from langbot_plugin.api.definition.plugin import BasePlugin
from langbot_plugin.api.entities import events as sdk_events
from langbot_plugin.cli.commands.runplugin import discover_plugin_components
from langbot_plugin.utils.discover.engine import ComponentDiscoveryEngine

GEN = p.load()
KINDS = {"Command": Command, "Tool": Tool, "EventListener": EventListener, "Page": Page}


@unittest.skipUnless(os.path.exists("manifest.yaml"), "not run from an unpacked package")
class PackageLoadTest(unittest.TestCase):
    def test_components_match_declaration(self) -> None:
        engine = ComponentDiscoveryEngine()
        manifest = engine.load_component_manifest(path="manifest.yaml")
        self.assertIsNotNone(manifest)
        self.assertEqual((manifest.metadata.author, manifest.metadata.name), (GEN.plugin["author"], GEN.plugin["name"]))
        self.assertTrue(manifest.metadata.label.en_US and manifest.metadata.label.zh_Hans)
        self.assertTrue(os.path.isfile(manifest.icon_rel_path))
        self.assertTrue(issubclass(manifest.get_python_component_class(), BasePlugin))
        components = discover_plugin_components(manifest, engine)
        names: dict[str, list[str]] = {}
        for comp in components:
            names.setdefault(comp.kind, []).append(comp.metadata.name)
            self.assertTrue(comp.metadata.label.en_US and comp.metadata.label.zh_Hans, comp.metadata.name)
            cls = comp.get_python_component_class()
            self.assertTrue(issubclass(cls, KINDS[comp.kind]), cls)
            instance = cls()  # as the worker does, with no arguments
            if comp.kind == "EventListener":
                # an optional event (SDK 0.7) is listened to only where the SDK has it
                want = {getattr(sdk_events, e) for e in GEN.plugin["events"] if hasattr(sdk_events, e)}
                self.assertLessEqual({e for e in GEN.plugin["events"] if not hasattr(sdk_events, e)}, set(GEN.plugin["optional_events"]))
                self.assertEqual(set(instance.registered_handlers), want)
            if comp.kind == "Tool":
                self.assertEqual(instance.tool_name, comp.metadata.name)
                self.assertEqual(comp.spec["parameters"]["type"], "object")
                self.assertTrue(comp.spec["llm_prompt"])
        self.assertEqual(sorted(names.get("Command", [])), sorted(GEN.plugin["commands"]))
        self.assertEqual(sorted(names.get("Tool", [])), sorted(GEN.plugin["tools"]))
        self.assertEqual(sorted(names.get("Page", [])), sorted(GEN.plugin["pages"]))
        self.assertEqual("EventListener" in names, bool(GEN.plugin["events"]))

    def test_config_schema(self) -> None:
        import yaml

        with open("manifest.yaml", encoding="utf-8") as f:
            m = yaml.safe_load(f)
        items = {c["name"]: c for c in m["spec"]["config"]}
        for key in GEN.protocol["package_config_keys"]:
            self.assertIn(key, items)
        for name, item in items.items():
            self.assertIn(item["type"], {"integer", "float", "boolean", "string", "text", "array[string]", "select", "file", "array[file]"})
            self.assertTrue(item["label"]["en_US"] and item["label"]["zh_Hans"], name)
        for secret in GEN.plugin["secret_config_keys"]:
            self.assertTrue(any(w in secret for w in ("token", "secret", "password")), secret)
        self.assertLessEqual({"nats_password", "nats_token"}, set(GEN.plugin["secret_config_keys"]))
