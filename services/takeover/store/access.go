package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// New returns a store over js with subjects subj; it does no I/O. fault,
// when non-nil (tests only), is consulted before each storage call: a
// non-nil error fails the call as if JetStream had. The service starts it
// as a bus.Part (Serve, then Start); tools call Open instead.
func New(js jetstream.JetStream, subj wire.Subjects, fault func(op string, sc binding.Scope) error) *Store {
	return &Store{js: js, subj: subj, fault: fault}
}

// Serving is what the service's store needs to start as a bus.Part.
type Serving struct {
	// Replicas of the streams, the object store and the session bucket.
	Replicas int
	// Dedupe returns the runner's dedupe bucket (it holds the reply
	// idempotency records, 24 h TTL); the runner has made it before any
	// part starts.
	Dedupe func() *bus.KV
}

// Serve sets what Start needs; call it before the runner starts.
func (st *Store) Serve(s Serving) { st.serving = s }

// setupTimeout bounds the setup a part does when it starts.
const setupTimeout = time.Minute

// Start creates the streams, the blob store and the session bucket (after
// the runner made its buckets, before any intake opens): Store is a
// bus.Part of the service, closed last.
func (st *Store) Start(parent context.Context) (err error) {
	ctx, cancel := context.WithTimeout(parent, setupTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			st.Close()
		}
	}()
	if err := st.Ensure(ctx, st.serving.Replicas); err != nil {
		return err
	}
	mainKV, err := bus.EnsureBucket(ctx, st.js, bus.Bucket(Plugin), bus.BucketSpec{Replicas: st.serving.Replicas})
	if err != nil {
		return err
	}
	st.UseKV(bus.NewKV(st.js.Conn(), mainKV))
	if st.serving.Dedupe != nil {
		st.UseDedupe(st.serving.Dedupe())
	}
	return nil
}

// Stop closes the store (bus.Part).
func (st *Store) Stop(context.Context) error { st.Close(); return nil }

// UseKV sets the session bucket (the service ensures it beside the runner's).
func (st *Store) UseKV(kv *bus.KV) { st.kv, st.records = kv, st.sessionRecords(kv) }

// UseDedupe sets the bucket of reply idempotency records (the runner's
// dedupe bucket, 24 h TTL).
func (st *Store) UseDedupe(kv *bus.KV) { st.dedupe = kv }

// Dedupe is the bucket of reply idempotency records.
func (st *Store) Dedupe() *bus.KV { return st.dedupe }

// Subjects are the subjects the store builds its names with.
func (st *Store) Subjects() wire.Subjects { return st.subj }

// ErrNotSetUp is returned by Open when a resource the service creates is
// not there.
var ErrNotSetUp = errors.New("takeover store: not set up")

// Open opens the service's existing resources (the session bucket, the
// history shards, the blob store) for tools that run outside the service.
// It creates nothing.
func Open(ctx context.Context, js jetstream.JetStream, subj wire.Subjects) (*Store, error) {
	st := New(js, subj, nil)
	kv, err := js.KeyValue(ctx, bus.Bucket(Plugin))
	if err != nil {
		return nil, fmt.Errorf("%w: the takeover bucket is not there (has the service run?): %w", ErrNotSetUp, err)
	}
	st.UseKV(bus.NewKV(js.Conn(), kv))
	if err := st.OpenHistory(ctx); err != nil {
		return nil, err
	}
	if st.blobs, err = js.ObjectStore(ctx, BlobBucket); err != nil {
		return nil, fmt.Errorf("%w: blob store: %w", ErrNotSetUp, err)
	}
	return st, nil
}

// PurgeRecord removes a session's record key (and its history of values).
func (st *Store) PurgeRecord(ctx context.Context, sc binding.Scope, sid string) error {
	if err := st.Check("kv.purge", sc); err != nil {
		return err
	}
	return st.kv.Purge(ctx, sc, KeySession, sid)
}

// SessionIDs lists the sids of a scope's records; none is not an error.
func (st *Store) SessionIDs(ctx context.Context, sc binding.Scope) ([]string, error) {
	sids, err := st.kv.Keys(ctx, sc, KeySession)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, err
	}
	return sids, nil
}

// PurgeRecords removes the record keys sids of a scope, checking the fault
// seam once for all of them.
func (st *Store) PurgeRecords(ctx context.Context, sc binding.Scope, sids []string) error {
	if err := st.Check("kv.purge", sc); err != nil {
		return err
	}
	for _, sid := range sids {
		if err := st.kv.Purge(ctx, sc, KeySession, sid); err != nil {
			return err
		}
	}
	return nil
}

// PurgeTimers removes a scope's expiry schedules, fired expiries,
// undelivered operator alerts and escalations: every timer stream kind.
func (st *Store) PurgeTimers(ctx context.Context, sc binding.Scope) error {
	return bus.PurgeSubjects(ctx, st.timers, st.timerSubjects(func(kind string) string { return st.subj.InternalScope(Plugin, kind, sc) })...)
}

// timerSubjects is subject(kind) of every kind on the timer stream.
func (st *Store) timerSubjects(subject func(kind string) string) []string {
	var out []string
	for _, k := range SubjectKinds() {
		if k.Timer {
			out = append(out, subject(k.Kind))
		}
	}
	return out
}

// ListBlobs lists every object of the blob store (gc).
func (st *Store) ListBlobs(ctx context.Context) ([]*jetstream.ObjectInfo, error) {
	return st.blobs.List(ctx)
}

// DeleteBlob deletes one object by its full name; a missing one is not an
// error (gc).
func (st *Store) DeleteBlob(ctx context.Context, name string) error {
	if err := st.blobs.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return err
	}
	return nil
}

// HistorySubject is the subject of a session's history in its shard.
func (st *Store) HistorySubject(sc binding.Scope, sid string) string {
	_, subject := st.history(sc, sid)
	return subject
}

// CreateRecord writes a session's first record value; it fails when the
// key exists.
func (st *Store) CreateRecord(ctx context.Context, sc binding.Scope, sid string, value []byte) error {
	_, err := st.kv.Create(ctx, sc, KeySession, value, sid)
	return err
}

// JetStream is the context the store writes through (migration publishes
// the copied history with it).
func (st *Store) JetStream() jetstream.JetStream { return st.js }

// RemoveSession purges a session's key (when it exists), then collects the
// blob names of its history, deletes them, and removes the history up to the
// last sequence read and the timer. It reports whether any history was left.
func (st *Store) RemoveSession(ctx context.Context, sc binding.Scope, sid string, purgeKey bool) (bool, error) {
	if purgeKey {
		if err := st.PurgeRecord(ctx, sc, sid); err != nil {
			return false, err
		}
	}
	entries, last, err := st.ReadHistory(ctx, sc, sid)
	if err != nil {
		return false, err
	}
	var blobs []string
	for _, e := range entries {
		blobs = append(blobs, e.Blobs()...)
	}
	if err := st.DeleteBlobs(ctx, sc, blobs); err != nil {
		return false, err
	}
	if last > 0 {
		if err := st.PurgeHistory(ctx, sc, sid, last+1); err != nil {
			return false, err
		}
	}
	if err := st.CancelSchedule(ctx, sc, sid); err != nil {
		return false, err
	}
	return len(entries) > 0, nil
}

// SweepScope removes the scope's history with the blobs its entries name,
// and its timers. Appends racing it survive; their sessions were purged, so
// they start afresh.
func (st *Store) SweepScope(ctx context.Context, sc binding.Scope) error {
	if err := st.SweepHistory(ctx, sc); err != nil {
		return err
	}
	return st.PurgeTimers(ctx, sc)
}
