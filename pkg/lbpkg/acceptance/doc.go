// Package acceptance holds the acceptance tests of the LangBot packages
// (spec/langbot-packages.md section 9, PK-1 to PK-6) and their benchmark:
// the three built packages installed in LangBot's real plugin runtime,
// driven by pkg/lbpkg/runtimetest's fake LangBot, forwarding over an
// embedded NATS server to the real githubkit, takeover and schenotify
// services (githubkit against its fake GitHub).
//
// It has no code of its own besides this comment: everything is in its
// _test files. The package itself imports nothing; its tests may import
// the services, pkg/lbpkg (with builtin and runtimetest), pkg/bus and
// its test kit, and chromedp.
package acceptance
