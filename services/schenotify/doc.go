// Package schenotify is the reminder service: chat users (through an LLM tool
// or the !sche and !dsche commands) set reminders that the bot delivers into
// the chat at the due second, one-shot or recurring. The behaviour is
// specified in spec/schenotify.md; this comment is the map of the code.
//
// # Layout
//
// The root declares and wires: service.go (Plugin, Config, New, which
// builds the parts below and the bus.RunnerConfig; Run, Ready), build.go
// (Binary, Build), manifest.go (Declaration), catalog.go (Catalog),
// metrics.go, and handlers.go, whose handlers decode, call one part and
// encode. The behaviour lives in three unexported parts, each holding
// exactly what it uses:
//
//   - reminders (reminders.go, store.go, change.go, lifecycle.go): the
//     records, the scope indexes and their per-scope lock, the schedules,
//     the chats' last deliveries and refusal marks; adds, deletes,
//     changes, the resume of an attach and the recovery sweep (its
//     background work, as a bus.Part).
//   - delivery (deliver.go, hold.go, janitor.go, waiting.go,
//     nextmessage.go, ai.go): a fired reminder is claimed into one claimed
//     value that the hold, the send and the outcome pass on; its janitor,
//     held deliveries and next-message sends start and stop with it
//     (bus.Part). An AI-written reminder's budget is decided when its
//     message is rendered and its text asked of the host's LLM
//     (invoke_llm) just before the send (ai.go); the answer is kept in
//     the record for its occurrence, so a retry sends the same text.
//   - replies (commands.go, tools.go): the command and tool answers.
//
// # State
//
// One KV record per reminder (<scope>.reminder.<id>, Record) and one index
// per scope (<scope>.index, Index) in the bucket langbot_schenotify, with
// the day's count of AI-written deliveries (<scope>.aibudget); every
// write is a compare-and-set on the revision. Adds write the index entry
// first (which keeps the per-installation and per-chat caps exact under
// concurrency), then the record, then the schedule. Ids (6 characters, no
// look-alikes) derive from the scope and the invocation id, so a retried
// invocation finds its own reminder.
//
// # Timers
//
// Each reminder has one NATS message schedule on
// <prefix>.schenotify.sched.<scope>.<id>, always "@at <UTC instant>" with
// rollup, firing onto <prefix>.schenotify.due.<scope>.<id> in the stream
// LANGBOT_SCHENOTIFY. Recurring reminders (cron via robfig/cron/v3 over
// naive wall time plus the DST policy of Resolve, or @every) are armed one
// occurrence at a time, so the server runs no cron and needs no zone data.
//
// # Delivery
//
// The durable pull consumer schenotify-due is shared by all replicas. A
// fired message is only a wake-up: the handler reads the record, naks or
// re-arms an early or stale fire, pauses under an inactive authority, and
// otherwise claims the occurrence by compare-and-set (the linearisation
// point against deletes) before calling the host's send_message with the
// idempotency key <scope>:<id>:<occurrence>. Failures retry with backoff
// (RetryPolicy) and end in the failed state; a 403 pauses the reminder.
// Lifecycle transitions resume paused reminders; removal purges the scope's
// subjects (the runner purges its keys). A recovery sweep re-arms reminders
// left unarmed by a crash. A working-day series whose next day lies past
// the working calendar the library covers is paused, not deleted (Pause
// calendar_end; its last delivery says so), and the sweep re-arms it once
// a newer calendar covers that day. In a group the chain starts with At components
// for the creator (setting mention_creator) and the members the reminder
// names (mention.go); each successful send records the chat's last
// delivery (<scope>.last.<session token>) for snooze.
//
// # Changes
//
// Snooze, edit, pause and resume (change.go) are compare-and-set updates of
// the record that re-arm or cancel its @at as add and delete
// do. A user's pause (state paused, Held) outlasts the installation's: an
// attach resumes only the latter.
//
// # Pure parts
//
// Time is package when: time forms, durations, zones and the DST policy,
// recurrence, and the validation of a schedule into a plan (PlanTool,
// PlanAdd). Here: configuration normalisation (NormalizeConfig), command
// parsing (ParseSche, ParseDsche in parse_command.go), ids, the retry schedule and the rendering
// of replies (Renderer). They are tested without a server; the acceptance
// tests of spec section 10 run the service against an embedded NATS server.
//
// # Imports
//
// This package may import pkg/bus, pkg/wire, pkg/binding, pkg/i18n, pkg/plugin,
// pkg/settings, pkg/svcmain, its own subpackages, the NATS client,
// OpenTelemetry's API and Prometheus' client; no other service. Its
// subpackages never import it.
package schenotify
