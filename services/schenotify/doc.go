// Package schenotify is the reminder service: chat users (through an LLM tool
// or the !sche and !dsche commands) set reminders that the bot delivers into
// the chat at the due second, one-shot or recurring.
//
// Reminders live in JetStream: one KV record per reminder plus a per-scope
// index, and one NATS message schedule (@at) per reminder that fires a due
// message onto a durable pull consumer shared by all replicas. The record,
// not the fired message, decides what is due, so stale, early and duplicate
// fires do no harm; a compare-and-set claim makes exactly one replica send
// each occurrence, with an idempotency key that lets the host drop a resend.
//
// The pure parts (configuration normalisation, time forms and durations,
// zones and the DST policy, recurrence, command parsing, ids, the retry
// schedule and the rendering of replies) live in their own files and are
// tested without a server.
package schenotify
