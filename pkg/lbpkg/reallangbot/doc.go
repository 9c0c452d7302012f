// Package reallangbot boots a real LangBot 4.10.8 from its source for an
// end-to-end test of the three plugin packages: LangBot's own HTTP API
// installs and configures them, its pipeline runs the chat, its embed web
// chat (adapter web_page_bot, over a WebSocket) carries the user's
// messages, the answers and whatever the services push.
//
// Nothing of LangBot is copied into the project. Find locates:
//
//   - LangBot's source, LANGBOT_SOURCE (default
//     ../shared/vendor/langbot-4.10.8 from the repository root);
//   - its plugin SDK and runtime, the vendored SDK 0.5.5 that
//     pkg/lbpkg/runtimetest finds through LANGBOT_VENDOR;
//   - the Debian packages that boot it on Debian 12's CPython 3.11,
//     unpacked by scripts/test-deps.sh into LANGBOT_REAL_DEPS (default
//     .data/langbot-deps): Debian 13's pure-Python SQLAlchemy 2 stack,
//     quart, hypercorn, openai and friends, and Debian 12's compiled
//     modules, never installed system-wide;
//   - the interpreter, LANGBOT_PYTHON or python3 (3.11, with pydantic 2:
//     its own site-packages come first on the path).
//
// What LangBot imports but a test never uses is served by stand-ins,
// listed with the reason for each in one place (Standins), generated into
// the test's temporary directory with a metadata-only dist-info for
// `langbot` (LangBot reads its own version from it). A virtual
// environment whose .pth lists these folders runs both LangBot and its
// plugin runtime; the runtime starts each plugin worker on the same
// interpreter, so the workers see the same path.
//
// Boot starts the runtime as a process of its own on loopback WebSocket
// ports and LangBot with --standalone-runtime pointing at it (what LangBot
// does in a container, and the same on any machine), with
// plugin.enable_marketplace false, Box off and no LangBot Space URL.
//
// When a part is missing the test is skipped saying which and how to get
// it (scripts/test-deps.sh), or failed when LANGBOT_REAL_REQUIRED=1 (what
// CI sets).
package reallangbot
