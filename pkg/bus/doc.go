// Package bus is the plumbing every LangBot plugin service stands on, and
// only what every plugin shares, over the protocol of pkg/wire (its
// subjects, envelopes and wire error): the KV keys and bucket names
// (DESIGN 4), the encoding of the wire error into NATS replies, the
// service runner on nats.go micro (bounded worker pool, binding
// refusal, authority view, invocation dedupe), the lifecycle stream and
// consumer, the authority store, scoped KV access and the typed record
// store over it (Records: compare-and-set with retry and the re-read of an
// ambiguous write, DESIGN 4), JetStream message
// schedules and their fired-message consumer, the host-action client and
// the invoker the host side uses, sealing of secrets at rest, trace
// propagation through NATS headers, and tenant credentials: their records
// (Tenant, IssueTenant), the grants NATS enforces for them (Tenant.Grants)
// and the NATS auth callout responder every service runs (AuthCallout,
// KickUser for revocation).
//
// A service never formats a subject or a key itself: it declares its own
// kinds and asks wire.Subjects.Internal or Key to build them, and it reaches its
// state only through a Scope, so nothing of one installation can be
// addressed from another. What belongs to one service (its record kinds,
// its subject kinds, its storage helpers) lives in that service.
//
// The usual shape of a service: it declares, the runner runs.
//
//	r, err := bus.NewRunner(bus.RunnerConfig{
//		Plugin:    "schenotify",
//		Handlers:  h,                                     // command, event, tool, page
//		Streams:   []bus.StreamSpec{{Name: "LANGBOT_SCHENOTIFY", ...}},
//		Consumers: []bus.Consumer{{FiredConfig: ..., Handler: s.handleFired}},
//		Parts:     []bus.Part{janitor, bus.Loop(s.sweepLoop)}, // background work
//	}, deps) // bus.Deps: connection, subjects, keyring, clock, logger, tracing, metrics
//	if err != nil { ... }
//	// r.KV(), r.Host(), r.Stream(name) for the handlers and the parts
//	err = r.Run(ctx) // until ctx is done; nil for a requested stop
//
// Background work is a Part: bus.Loop for one loop, bus.Background for work
// started as the service goes (Go runs a function on the part's context;
// Stop drains, cancels after a grace and waits), so a service keeps no
// context, cancel func or wait group of its own.
//
// Run creates the streams and buckets, loads the authority view, starts
// the parts, opens intake (endpoints, lifecycle and fired-message
// consumers) and reports Ready; at the end intake drains first, then the
// parts stop in reverse order. Start and Shutdown are its two halves.
//
// ExampleRunner runs this against an embedded server.
//
// Imports: the standard library, pkg/binding, pkg/wire, pkg/settings (its
// config size cap, checked on every attach's config), the NATS client (nats.go,
// jetstream, micro), nats-io/jwt and nkeys (the auth callout's claims and
// issuer key), OpenTelemetry's API and Prometheus' client; nothing of
// services/ or cmd/, and no NATS server (pkg/natsembed starts one for
// lbctl and tests; pkg/bus/bustest is the test kit, pkg/busbench the bus
// floor).
package bus
