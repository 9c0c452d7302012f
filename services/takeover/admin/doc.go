// Package admin holds takeover's one-shot operator tools, which run from
// lbctl with the service stopped or beside it, never on its hot path:
// Import (the original plugin's exported sessions), MigrateHistory (the
// single history stream of an earlier version into the shards) and GCBlobs
// (attachments no entry names any more).
//
// It may import pkg/bus, pkg/wire, pkg/binding, pkg/settings, nats.go and takeover's
// model and store packages; package takeover does not import it, so the service
// binary does not link it.
package admin
