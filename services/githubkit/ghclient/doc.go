// Package ghclient is githubkit's GitHub client: typed calls over
// go-github (repositories, issues, pulls, releases, users, search, the
// events feed, workflow runs, compare, commits), one pooled HTTP client
// (NewHTTPClient: the SSRF-guarded dialer of ssrf.go, same-host redirects,
// a 5 MiB body cap, client spans and metrics), conditional requests
// (If-None-Match through WithConditional), the per-installation and
// per-host limits with the host circuit breaker (limits.go), and the
// classification of every failure into *APIError (spec §3.3-3.4).
//
// It knows nothing of installations' storage, chats or the bus: a call gets
// a Target (API root and token) and the installation's name on its context
// (WithInstallation), and returns GitHub's data or an *APIError.
//
// # Imports
//
// This package may import go-github, OpenTelemetry's API, Prometheus'
// client and the standard library; never pkg/bus, NATS or the service
// root (TestImportsAsDocumented). The formatting core (../events) and the
// service root import it.
package ghclient
