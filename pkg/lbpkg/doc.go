// Package lbpkg builds the LangBot plugin packages (.lbpkg) of the
// services: ordinary, unsigned LangBot plugins whose only code is a small
// Python forwarding core that maps every SDK call onto one NATS
// invocation, serves the installation's host actions and publishes its
// attach (spec/langbot-packages.md).
//
// Everything a package says about its plugin is generated from the
// service's plugin.Declaration; every subject, header and error word the
// core uses is written by the builder from pkg/wire into
// langbot_nats/generated.json, so nothing is typed twice.
//
// # Layout of a package
//
//	manifest.yaml                      apiVersion v1, kind Plugin; metadata (author, name,
//	                                   version, label/description in en_US and zh_Hans, icon);
//	                                   spec.config (PackageConfig, then the service's items);
//	                                   spec.components by fromDirs; execution.python main.py:Plugin
//	main.py                            class Plugin(langbot_nats.plugin.ForwardingPlugin)
//	components/commands/<name>.yaml    one Command per declared command (exact, case-sensitive name)
//	components/commands/<name>.py        class Command<Name>(ForwardingCommand)
//	components/tools/<name>.yaml       one Tool per declared tool: spec.parameters, spec.llm_prompt
//	components/tools/<name>.py           class Tool<Name>(ForwardingTool)
//	components/event_listener/default.yaml, default.py
//	                                   only when events are declared: DefaultEventListener
//	components/pages/<id>.yaml, <id>.py, <id>.html
//	                                   one Page per declared page (its HTML from the declaration)
//	langbot_nats/*.py                  the forwarding core (pycore/langbot_nats, embedded)
//	langbot_nats/generated.json        protocol constants, the plugin's names, texts, events
//	                                   and every config item's manifest default
//	nats/..., nats_py-<v>.dist-info/   nats-py, from the pinned wheel
//	assets/icon.svg                    the icon
//	README.md, readme/README_zh_Hans.md
//
// Archives are deterministic (sorted entries, fixed timestamps and modes),
// so the same inputs give the same sha256, which is LangBot's
// artifact_digest, and every archive is checked against LangBot's limits
// (CheckArchive) before it is returned.
//
// LangBot's runtime answers every chat message's event with the plugin's
// dump, its manifests as JSON (RuntimeDump); a dump over DumpBudget makes
// every answer travel in chunks, several milliseconds per message, so the
// declarations' texts are kept short (TestRuntimeDumpBudget).
//
// Tests of the Python core live in pycore/tests and are run by this
// package's Go tests (PK-8); they are never bundled.
//
// The package imports pkg/plugin, pkg/wire, pkg/binding and pkg/i18n: the
// protocol, not the service runtime, so a package build links no NATS
// micro, JetStream, Prometheus or OpenTelemetry (TestArchitectureRule).
package lbpkg
