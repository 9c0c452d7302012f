// Package githubkit is the GitHubKit plugin service (spec/githubkit.md):
// read-only GitHub lookups for chat users (the gh command and the
// github_repo, github_issue and github_search tools) and repository event
// push into chats (gh sub, unsub, subs), shared by every installation.
//
// # Shape
//
// New(Config, Deps) builds a Service without I/O; Run starts the runner of
// pkg/bus (endpoints, authority view, lifecycle consumer, dedupe), ensures
// the LANGBOT_GITHUBKIT stream, consumes fired polls from the durable
// githubkit-poll consumer on a bounded pool, and stops everything when its
// context ends. Main and Build are what the binary (cmd/githubkit) and
// lbctl dev use.
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
package githubkit
