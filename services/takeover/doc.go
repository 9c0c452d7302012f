// Package takeover lets a human operator take over a chat that a LangBot bot
// handles: while a chat is taken over the AI is blocked there, and the
// operator answers from a console.
//
// The service answers the host's events (PersonMessageReceived,
// GroupMessageReceived, NormalMessageResponded) with a blocking decision that
// is made first, from an in-process view of the takeover records kept current
// by a JetStream consumer, and never waits on storage while that view is live.
// Recording happens afterwards, within a small budget: session metadata is a
// KV record per session written by compare-and-set, the history is one stream
// subject per session, and attachments live in an object store. Takeovers
// expire by JetStream message schedules.
//
// The console operations (list, open, take over, release, reply, cards,
// export, delete, clear, mark handled) form one handler layer (Service.Do),
// reachable through the NATS page endpoint; an HTTP console can sit on the
// same functions. The operator's identity is always a parameter.
//
// The parts live in subpackages, none of which imports this one: model (the
// pure core: settings, content, triggers, the recording policy, session
// identity, stored shapes, takeover timing), store (records, history,
// blobs, timers, the session view, the metadata writer, the trimmer), batch
// (the history's group commit) and admin (import, migrate and gc, run by
// lbctl; the service does not link it). This package holds the event path,
// the recording, the expiry, the console operations by group and the
// service's life. Console request parsing (page_request.go) needs only
// pkg/bus's wire errors.
//
// # Imports
//
// This package may import pkg/bus, pkg/binding, pkg/i18n, pkg/plugin,
// pkg/svcmain, its own subpackages, the NATS client, OpenTelemetry's API
// and Prometheus' client; no other service. Its subpackages never import it.
package takeover
