package bus

// Bytes in flight per connection (docs/operations.md "Message
// sizes and slow consumers").
//
// The server queues the messages addressed to a connection in that
// connection's outbound buffer and closes the connection as a slow
// consumer once the buffer holds more than max_pending bytes (64 MiB by
// default). Messages of up to max_payload bytes published at once by
// several clients all land in the one buffer of the service connection
// serving them before its reader drains it, so with max_payload 32 MB
// three were enough: eight concurrent 25 MB events of one installation cut
// takeover off NATS seven times in two minutes, and requests of other
// installations in flight were lost. Replicas split the requests of a
// queue group between their connections only on average; one connection
// can receive them all.
//
// So a deployment's max_pending holds BodiesInFlight messages of
// max_payload bytes plus the default's 64 MiB for everything else
// (MaxPendingFor), and on the client side each endpoint subscription may
// hold as many bytes before its dispatcher sees them (pendingBytes), so
// that neither the server nor the client drops a request the runner would
// have answered: the runner's own bounds (BodyBudget, ScopeBytes, Queue)
// shed the excess with 503 unavailable at once.

// BodiesInFlight is the number of maximum-size messages in flight to one
// connection that a deployment must tolerate: the server's max_pending is
// at least MaxPendingFor(max_payload).
const BodiesInFlight = 8

// defaultMaxPending is the server's default max_pending, the room kept for
// the messages that are not maximum-size.
const defaultMaxPending = 64 << 20

// MaxPendingFor is the smallest max_pending (bytes) a server with the given
// max_payload needs for its service connections to survive BodiesInFlight
// maximum-size messages at once.
func MaxPendingFor(maxPayload int64) int64 {
	return BodiesInFlight*maxPayload + defaultMaxPending
}

// pendingBytes is the bytes an endpoint subscription holds before its
// dispatcher takes them: the runner's body budget plus BodiesInFlight
// bodies of the largest size it takes. Beyond it nats.go would drop a
// request silently (the requester's timeout) instead of the dispatcher
// answering 503; the dispatcher drains the subscription at memory speed,
// so the limit is reached only when the bounds behind it already shed.
func pendingBytes(cfg RunnerConfig) int {
	return cfg.BodyBudget + BodiesInFlight*cfg.MaxBody
}
