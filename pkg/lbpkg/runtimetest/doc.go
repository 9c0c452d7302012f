// Package runtimetest drives LangBot's real plugin runtime (the Python SDK
// runtime, 0.5.5) from Go tests by playing LangBot's side of the runtime
// protocol over stdio: it starts `python -m langbot_plugin.cli.__init__ rt
// -s` as LangBot does on Linux without Docker, speaks the line-delimited
// JSON envelope (with the runtime's chunking of large messages), performs
// LangBot's handshake, uploads and applies plugin packages, lists them,
// runs commands, tools, events and page calls, and answers the runtime's
// calls back into LangBot (get_plugin_settings, get_bot_uuid, send_message,
// get_bot_info, get_bots), recording them for assertions.
//
// The protocol side is written from the project's research notes on the
// runtime (../shared/research/langbot-plugin-runtime.md) and the recorded
// frames next to it, never from the runtime's own code.
//
// The Python environment comes from FindPython. The interpreter is
// LANGBOT_PYTHON, default python3 on PATH (3.11, with pydantic 2 and
// PyYAML). When it has langbot-plugin and nats-py pip-installed, those are
// used. Otherwise the vendored SDK is found through LANGBOT_VENDOR (default
// ../shared/vendor from the repository root) and run from a virtual
// environment this package creates in the user cache directory, whose .pth
// lists the SDK's src/, the interpreter's site-packages and
// /usr/lib/python3/dist-packages, where the Debian packages of
// DebianPackages live (a .pth, because the runtime starts each plugin
// worker with an environment of its own). The nats-py wheel the package
// builder bundles is looked up in the same vendor folder (Python.NatsWheel).
// When none of this is usable the test is skipped with the reason, or
// failed when LANGBOT_PACKAGES_REQUIRED=1 (what CI sets).
//
// It may import pkg/binding, pkg/testskip and the standard library only.
package runtimetest
