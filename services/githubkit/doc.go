// Package githubkit is the GitHubKit plugin service (spec/githubkit.md):
// read-only GitHub lookups for chat users (the gh command and the
// github_repo, github_issue and github_search tools) and repository event
// push into chats (gh sub, unsub, subs), shared by every installation.
//
// # Shape
//
// The root declares and wires; behaviour lives in a few parts, and the two
// pure halves are packages of their own:
//
//   - service.go: Config, Service, New (builds the parts and the runner's
//     config: handlers, the LANGBOT_GITHUBKIT stream, the durable
//     githubkit-poll consumer on a bounded pool, the hook stream and
//     consumer, the parts), Run and Ready. Run is the runner's Run
//     (endpoints, authority view, lifecycle consumer, dedupe, then
//     everything stopped in order when its context ends).
//   - build.go: Binary, what cmd/githubkit runs, and Flags.Build, what it
//     and lbctl dev build. manifest.go: Declaration. catalog.go: Catalog,
//     the embedded message catalogues. metrics.go: the service's metrics.
//   - handlers.go: the command, tool, event and webhook HTTP handlers; each
//     decodes, calls one part and encodes.
//   - parts, each holding shared (config, runner, clock, logger, tracer,
//     catalogue, subjects, metrics) and what it alone uses:
//     poller (poll.go: pollRun, one method per step of spec §7.2; ci.go:
//     the Actions step; ci_fixed.go: the "fixed again" line), webhooks (webhook_cmd.go: "gh hook";
//     webhook_verify.go: signature and mapping; webhook_consume.go: the
//     hook consumer; pushbudget.go), hookReceiver (webhook_http.go: the
//     HTTP receiver, receive one method per step, and its listener),
//     subscriptions (commands.go: sub, unsub, subs; lifecycle.go),
//     cards (cards*.go: link cards, a bus.Part), noise (noise.go: quiet
//     hours and digests hold pushes per chat, a summary when a one-shot
//     schedule fires; noise_cmd.go: "gh quiet", "gh digest"), and:
//     reviewReminders (reviews.go: "gh reviews", per-minute slots
//     <scope>.rslot.<HHMM> fired by "@at" schedules, one pulls request per
//     repository per fire), personal (personal.go: "gh me", links
//     <scope>.me.<login>, private pushes from the events the poller and
//     the webhook consumer already read), orgs (orgs.go: "gh sub <org>",
//     <scope>.org.<org>, polled by /orgs/{org}/events through the
//     poller's pollRun over orgFeed, the feed interface of poll.go;
//     orgs_hook.go: the organisation's webhook) and summaries (summary.go: "gh summary",
//     invoke_llm within <scope>.aibudget). settings_feat.go reads their
//     settings. seen.go's recent-event sets and the record schedules
//     (arm, disarm) are shared's.
//   - record.go, store.go, settings.go, kinds.go: the stored records, their
//     keys and the installation settings. query.go and tools.go: the
//     read-only lookups. import.go, importdoc.go: the one-shot import.
//   - ghclient/: the GitHub client (no bus). events/: formatting, filters
//     and parsing (no bus).
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
// All calls go through ghclient.GitHub: a go-github client per call (the
// installation's token, its API root) over one pooled HTTP client built by
// ghclient.NewHTTPClient (SSRF-guarded dialer, same-host redirects, 5 MiB
// body cap, client spans, metrics). Failures are classified into
// *ghclient.APIError per spec §3.3-3.4. The events feed is read with
// If-None-Match, so an unchanged repository costs one 304 per interval.
//
// # Formatting
//
// Every text comes from the embedded catalogues messages/en_US.json and
// messages/zh_Hans.json (Catalog), rendered by events.Texts; the
// formatters are covered by golden files in testdata/golden (go test -run
// Golden -update rewrites them).
//
// The fake GitHub used by the tests and by lbctl dev --fake-github lives in
// the fakegithub subpackage.
//
// # Imports
//
// This package may import pkg/bus, pkg/wire, pkg/binding, pkg/httpserve, pkg/i18n,
// pkg/plugin, pkg/settings, pkg/svcmain, its own ghclient and events,
// go-github, the NATS client, OpenTelemetry's API and Prometheus' client;
// no other service. ghclient, events and fakegithub never import it.
package githubkit
