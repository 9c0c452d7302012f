// Package store is takeover's state and the parts that keep it: the
// session records (compare-and-set, with the ambiguous-write re-read), the
// sharded chat history written through the batcher, the attachment blobs,
// the expiry timers, the in-process session view the decisions read, the
// coalescing metadata writer (MetaWriter), the history trimmer (Trimmer)
// and the per-session write locks. It also owns the names of the service's
// JetStream resources, subjects and keys (names.go).
//
// Each constructor takes the parts it uses (a JetStream context, the
// subjects, the view, a metric, a logger), never the service. Store, View,
// Trimmer and MetaWriter are bus.Parts: the service's runner starts and
// stops them. It may import pkg/bus, pkg/wire, pkg/binding, pkg/settings, nats.go,
// prometheus and takeover's model and batch packages; it must not import package takeover, its console or its
// admin tools.
package store
