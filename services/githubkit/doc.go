// Package githubkit is the GitHubKit plugin service (spec/githubkit.md):
// read-only GitHub lookups for chat users (the gh command and the
// github_repo, github_issue and github_search tools) and repository event
// push into chats (gh sub, unsub, subs), shared by every installation.
//
// # Shape
//
// New(Config, bus.Deps) builds a Service without I/O. The service
// declares and the runner of pkg/bus runs: New hands the runner its
// handlers, the LANGBOT_GITHUBKIT stream, the durable githubkit-poll
// consumer (fired polls on a bounded pool) and its parts; Run is the
// runner's Run (endpoints, authority view, lifecycle consumer, dedupe,
// then everything stopped in order when its context ends). Binary is what
// the binary (cmd/githubkit) runs; Flags.Build is what it and lbctl dev
// build.
//
// # State
//
// Per installation (scope) the bucket langbot_githubkit holds the authority
// (the host's config with github_token sealed) and one record per
// subscribed repository, <scope>.repo.<repo-key>, where repo-key is the
// token of the lower-cased full name (RepoRecord). Each record has one
// "@every <interval>" schedule on <prefix>.githubkit.sched.<scope>.<key>
// firing onto <prefix>.githubkit.poll.<scope>.<key>. There is no
// per-installation goroutine, timer or registry: a poll reads the authority
// and the record when it fires, so replicas share the work and everything
// resumes after a restart.
//
// # GitHub
//
// All calls go through GitHub: a go-github client per call (the
// installation's token, its API root) over one pooled HTTP client built by
// NewHTTPClient (SSRF-guarded dialer, same-host redirects, 5 MiB body cap,
// client spans, metrics). Failures are classified into *APIError per spec
// §3.3-3.4. The events feed is read with If-None-Match, so an unchanged
// repository costs one 304 per interval.
//
// # Formatting
//
// Every text comes from the embedded catalogues messages/en_US.json and
// messages/zh_Hans.json; the formatters are covered by golden files in
// testdata/golden (go test -run Golden -update rewrites them).
//
// The fake GitHub used by the tests and by lbctl dev --fake-github lives in
// the fakegithub subpackage.
//
// # Imports
//
// This package may import pkg/bus, pkg/binding, pkg/i18n, pkg/plugin,
// pkg/settings, pkg/svcmain, go-github, the NATS client, OpenTelemetry's
// API and Prometheus' client; no other service. fakegithub never imports it.
package githubkit
