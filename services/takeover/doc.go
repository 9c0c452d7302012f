// Package takeover lets a human operator take over a chat that a LangBot bot
// handles: while a chat is taken over the AI is blocked there, and the
// operator answers from a console (spec: shared/spec/takeover.md). It is a
// library package plus the binary cmd/takeover; lbctl dev runs it in
// process.
//
// The service answers the host's events (PersonMessageReceived,
// GroupMessageReceived, NormalMessageResponded) with a blocking decision that
// is made first, from an in-process view of the takeover records kept current
// by a JetStream consumer, and never waits on storage while that view is live.
// Asked for it, the reply also carries an event gate (gate.go; the watched
// chats from store/gate.go): the chats no human watches, whose messages the
// package lets pass at once and forwards with passed set; every replica's
// view revokes the gates of a scope when one of its chats becomes watched.
// Recording happens afterwards, within a small budget: session metadata is a
// KV record per session written by compare-and-set, the history is one stream
// subject per session, and attachments live in an object store. Takeovers
// expire by JetStream message schedules.
//
// # The map
//
// The root declares and wires; behaviour lives in three unexported parts,
// each holding exactly the fields it uses. The calls run one way: model,
// then store, then notices, then recording and ops, then the handlers.
//
//   - service.go: Plugin, Config, New (builds the parts and the
//     bus.RunnerConfig: streams, consumers, handlers, parts), Run, Ready.
//     build.go: Binary, Build (the binary's environment). manifest.go:
//     Declaration. catalog.go: Catalog, the message catalogue. metrics.go:
//     the Prometheus metrics. handlers.go: the invocation handlers, each
//     decoding, calling one part and encoding its answer.
//   - notices (notices.go, actions.go, alerts.go, expire.go, summary.go): the
//     bottom part. What follows a takeover or a release (the expiry
//     schedule, the live event, the user notice with its retries), the
//     operator alerts and "taken by" notes, the expiry consumer and the
//     resume sweep, the live publisher and the session summary. It is the
//     bus.Part of the background work (notice retries, bot info fetches).
//     One session value (scope, binding, settings, sid, record) is what
//     its follow-ups take.
//   - recording (recording.go, event.go, recorder.go, bots.go): the event
//     path. The blocking decision comes first, from the session view, else
//     a 250 ms direct read, else the view's last known entry. Recording
//     follows on a bounded pool whose workers take sessions from one line,
//     so a recording waits only for its own session's earlier ones, and one
//     installation's flood cannot refuse another's; the reply waits for the
//     entry's append up to 200 ms. When the append takes longer, the
//     sender's next message can be stored first by another replica, so
//     reads put an entry stored late back before the entries decided a
//     budget or more after it (store.InSendOrder; the console's page cursor
//     is a place in that order). It is the bus.Part of the recording pool
//     and the metadata writer, and reaches the alerts, the follow-ups and
//     the summary through notices.
//   - ops (ops.go, pages.go, page_request.go, console_*.go, reply.go,
//     commands.go, tool.go): the console operations. do(ctx, pageCall,
//     PageRequest) is the one handler layer, by group: sessions and
//     messages (console_sessions.go), take over, release and mark handled
//     (console_actions.go), reply (reply.go: the idempotency record, the
//     takeover first, the send, then the entry), user and group cards and
//     blobs (console_cards.go), export, delete and clear
//     (console_delete.go). The NATS page endpoint and the HTTP console
//     (package console, through Service.Console) sit on it. ParsePageRequest
//     validates every operation; the operator is always a parameter. Errors
//     are *wire.Error values (errors.go). Issue 31's operator tools are
//     ops' too: canned replies (canned.go: /canned, `ho canned`,
//     expandCanned for `ho reply N /name` and relay mode), internal notes
//     (notes.go: /notes, `ho note`, `ho show`) and the AI assist
//     (assist.go: the alert's summary, `ho suggest` and POST /suggest).
//   - satisfaction.go: the rating after a release, split by part: the
//     notices ask (askSatisfaction, after the release notice) and the
//     recording reads the answer from the session view's head
//     (surveyAnswer, on the decision path) and stores it (settleSurvey).
//
// The subpackages, none of which imports this one:
//
//   - model: the pure core (standard library and pkg/settings): records,
//     session identity, takeover timing, content, triggers, the recording
//     policy, settings.
//   - store: the state and the parts that keep it: records by CAS, the 16
//     history shards LANGBOT_TAKEOVER_HISTORY_0.._F (chosen by the sid's
//     first hex digit), blobs in langbot_takeover_blobs, expiry and alert
//     schedules in LANGBOT_TAKEOVER_TIMERS, canned replies, notes and the
//     AI call budget (extras.go), the session view (an ordered
//     consumer on KV_langbot_takeover), the metadata writer (at most one CAS
//     per session per 500 ms per replica), the trimmer (four workers per
//     replica) and the resource names. Store, View, Trimmer and MetaWriter
//     are bus.Parts the runner starts in that order and stops in reverse.
//   - batch: the group-commit publisher of the history appends.
//   - admin: the one-shot tools, not linked into the service: Import (lbctl
//     import takeover), GCBlobs (lbctl gc takeover-blobs), MigrateHistory
//     (lbctl migrate takeover-history, from the single history stream of
//     earlier versions).
//   - console: the HTTP console over the console operations.
//
// # Operators in their chat apps
//
// Alerts (alerts.go) go to the operator_chats setting's chats when a chat
// asks for a human (trigger word, request_human); a takeover an operator
// starts or claims sends the other operator chats one "taken by" note
// instead (noteTaken, gated by <scope>.claim.<sid>; the chat it came from
// is skipped: pageCall.Origin). Alerts are gated by one CAS on
// <scope>.alert.<sid> in the dedupe bucket (one per chat per
// Config.AlertInterval, default 60 s, and none while an earlier one is
// unanswered) and delivered from the timer stream by the takeover-alert
// consumer with scoped idempotency keys and the notice retries; the
// consumer re-reads the alert record and the session before each try, so
// an alert answered, superseded or of a session deleted meanwhile is
// dropped, not sent. The ho command (commands.go: list, take, reply,
// release, pause, resume) and the request_human tool (tool.go) run the
// console operations with the console's audit line. A taken-over chat lets
// its ho command messages through (prefix !, ！, / or the command_prefix
// setting; spec §3.1 blocks every other command there), so an admin can
// resume in a paused chat. Texts write the command as {prefix}ho: the typed
// prefix in an answer, the command_prefix setting in alerts and notes.
// Syntax and settings: docs/protocol.md (Names).
//
// Relay mode (relay.go): `!ho take N` or `!ho switch N` binds the operator
// chat to chat N (<scope>.relay.<hash> and <scope>.relayto.<sid> beside
// the session records, with no TTL: the relay lives as long as the
// takeover; relayto lists every operator chat relaying the chat, so a
// second operator chat's take joins the first instead of stealing it, and
// each is told of the other). The event handler hands a private operator chat's plain
// messages to ops (blocked, sent as replies off the event's path); the
// recording worker hands a relayed chat's user messages to notices after
// their append (forwarded with the notice retries). Escalation
// (escalation.go, model.Escalation): the queue and out-of-hours notices
// follow a raised alert, the re-alert and the idle return are one
// JetStream schedule per chat (consumer takeover-escalate), and a user's
// cancel word is answered by the handler through ops.
//
// # Environment
//
// The shared flags of pkg/svcmain (NATS_*, LANGBOT_SUBJECT_PREFIX,
// LANGBOT_HTTP_ADDR, LANGBOT_JS_REPLICAS, LANGBOT_STATE_KEY,
// LANGBOT_WORKERS, LANGBOT_LOG_LEVEL, OTEL_*), LANGBOT_CONSOLE_KEY for the
// HTTP console and LANGBOT_TAKEOVER_META_WRITE_RATE (Config.MetaWriteRate).
//
// Benchmark: TAKEOVER_BENCH_SECONDS=60 go test -run XXX -bench
// BenchmarkTakeoverDecision -benchtime 1x ./services/takeover/ (default 5 s
// per rate).
//
// # Imports
//
// This package may import pkg/bus, pkg/wire, pkg/binding, pkg/i18n, pkg/plugin,
// pkg/settings, pkg/svcmain, its own subpackages, the NATS client,
// OpenTelemetry's API and Prometheus' client; no other service. Its
// subpackages never import it.
package takeover
