// Package bus is the plumbing every LangBot plugin service stands on: the
// NATS connection, the subjects and keys of the wire protocol (DESIGN 3-5),
// the request and reply envelopes, the one wire error type, the service
// runner on nats.go micro (bounded worker pool, binding refusal, authority
// view, invocation dedupe), the lifecycle stream and consumer, the authority
// store, scoped KV access, JetStream message schedules, the host-action
// client, sealing of secrets at rest, trace propagation through NATS headers,
// and an embedded NATS server for development and tests.
//
// A service never formats a subject or a key itself: it asks Subjects, and
// it reaches its state only through a Scope, so nothing of one installation
// can be addressed from another.
//
// The usual shape of a service:
//
//	r, err := bus.NewRunner(bus.RunnerConfig{Plugin: "schenotify", ...}, bus.RunnerDeps{Conn: nc, ...})
//	// r.KV(), r.Host(), r.Subjects() for the handlers and background work
//	err = r.Run(ctx) // serves until ctx is done, then drains
package bus
