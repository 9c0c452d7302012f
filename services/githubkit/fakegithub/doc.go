// Package fakegithub is a GitHub REST API double for tests and for the dev
// stack (lbctl dev --fake-github).
//
// It is a real HTTP server (net/http/httptest) that answers the endpoints the
// githubkit service uses, with realistic JSON fixtures embedded from
// testdata/:
//
//	GET /repos/{o}/{r}                          repository
//	GET /repos/{o}/{r}/issues, /issues/{n}      issues (PRs included, as GitHub does)
//	GET /repos/{o}/{r}/pulls, /pulls/{n}        pull requests
//	GET /repos/{o}/{r}/releases                 releases
//	GET /repos/{o}/{r}/releases/tags/{tag}      one release
//	GET /repos/{o}/{r}/commits/{sha}            one commit
//	GET /repos/{o}/{r}/events                   events, newest first, ETag/304, X-Poll-Interval, Link pagination
//	GET /repos/{o}/{r}/compare/{base}...{head}  compare
//	GET /users/{u}                              user
//	GET /search/repositories                    repository search
//	GET /repositories/{id}/...                  the same, by repository id (target of rename redirects)
//
// The single-item answers (a repository, an issue or pull request, a
// release, a commit) carry an ETag and answer a matching If-None-Match
// with 304. Every response carries rate-limit headers. A renamed repository answers
// its old path with a 301 to /repositories/{id}/..., as GitHub does. The
// whole API can live under a base path such as /api/v3 (GitHub Enterprise
// Server). Faults (statuses with headers and bodies, delays, connection
// resets, off-host redirects, oversize bodies) are injected per path prefix.
// Every request is recorded with its method, path, query, Authorization and
// If-None-Match headers.
//
// A Server owns no goroutine besides the HTTP server's own; Close stops it.
//
// It imports only the standard library; tests and lbctl import it, the
// service never does.
package fakegithub
