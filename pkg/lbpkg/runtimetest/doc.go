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
// The Python environment comes from FindPython: a pip-installed
// langbot-plugin when the interpreter has one, otherwise the vendored SDK
// found through LANGBOT_VENDOR (default ../shared/vendor from the
// repository root) in a virtual environment this package creates in the
// user cache directory. When neither is usable the test is skipped with the
// reason, or failed when LANGBOT_PACKAGES_REQUIRED=1 (what CI sets).
//
// It may import pkg/binding and the standard library only.
package runtimetest
