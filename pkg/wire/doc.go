// Package wire is the protocol both sides of the bus speak (DESIGN 3,
// docs/protocol.md), as data: the subjects and their templates, the
// header names, the invocation request and reply envelopes and the
// checks of DecodeRequest, the one wire error with its codes and reasons,
// the lifecycle attach and revoke bodies, the host actions with their data,
// and the names of a LangBot package's connection and inbox.
//
// It is named for what it holds, the bytes on the wire, and is kept apart
// from pkg/bus (the service runtime on NATS) as database/sql/driver is
// kept apart from database/sql: the LangBot package builder (pkg/lbpkg,
// which writes these names into the Python core's generated.json), the
// command-line host and the fake hosts need the protocol and nothing of
// the runtime, so they import this package and link no NATS micro,
// JetStream, Prometheus or OpenTelemetry.
//
// Imports: the standard library, pkg/binding and pkg/settings (the
// config size cap DecodeRequest checks) only; no NATS client, no metrics,
// no tracing. The NATS side (publishing, the trace carrier in headers,
// the runner that answers) is pkg/bus's.
package wire
