package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/batch"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// HistoryStream returns the name of history shard k (0 to HistoryShards-1),
// LANGBOT_TAKEOVER_HISTORY_0 to LANGBOT_TAKEOVER_HISTORY_F.
//
// The history is sharded because trimming one subject of a stream costs the
// server a walk over every message the stream holds between that subject's
// first entry and the trim point, with appends to the stream waiting: on a
// single stream that interleaves every session the cost grows with the
// number of sessions (docs/benchmarks.md, the trim floor).
func HistoryStream(k int) string { return fmt.Sprintf("LANGBOT_TAKEOVER_HISTORY_%X", k) }

// HistoryOf returns the shard, stream and subject that hold a session's
// history: langbot.takeover.history.<scope>.<shard>.<sid>, the shard being
// the sid's first hex digit.
func HistoryOf(subj wire.Subjects, sc binding.Scope, sid string) (shard int, stream, subject string) {
	shard = shardOf(sid)
	subject, _ = subj.Internal(Plugin, KindHistory, sc, shardToken(shard), sid)
	return shard, HistoryStream(shard), subject
}

// shardOf is the value of a sid's first hex digit; sids are validated
// before they reach the store (model.ValidSID), and anything else maps to 0.
func shardOf(sid string) int {
	if sid == "" {
		return 0
	}
	switch c := sid[0]; {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return 0
}

// shardToken is shard k's subject token, one lowercase hex digit as in
// the sid.
func shardToken(k int) string { return strconv.FormatInt(int64(k), 16) }

// historyShard is one history stream with its writer and reader.
type historyShard struct {
	stream jetstream.Stream
	batch  *batch.Batcher    // group-commits appends; nil outside the service
	direct *bus.DirectReader // batched reads; nil outside the service
}

// ErrCorrupt marks a stored record that does not decode.
var ErrCorrupt = errors.New("takeover: stored record is unreadable")

// ErrBlobTooLarge is a blob over the size its reader accepts; none of its
// bytes were read.
var ErrBlobTooLarge = errors.New("takeover: blob over the size limit")

// Store is the service's state: the session bucket, the dedupe bucket, the
// history and timer streams and the blob store. Every name it touches is
// built from a Scope.
type Store struct {
	js      jetstream.JetStream
	subj    wire.Subjects
	kv      *bus.KV
	records *bus.Records[model.Record] // the session records in kv
	dedupe  *bus.KV
	hist    [HistoryShards]historyShard
	timers  jetstream.Stream
	blobs   jetstream.ObjectStore
	// fault, when set (tests only), is consulted before each storage call;
	// a non-nil error fails the call as if JetStream had.
	fault func(op string, sc binding.Scope) error
	// replica, when set (tests only), returns the stream a history read's
	// consumer reads, given the shard's name: a stand-in for the replica
	// a cluster places that consumer on.
	replica func(stream string) jetstream.Stream
	// serving is what Start needs (Serve)
	serving Serving
}

func (st *Store) Check(op string, sc binding.Scope) error {
	if st.fault == nil {
		return nil
	}
	if err := st.fault(op, sc); err != nil {
		return fmt.Errorf("takeover: %s: %w", op, err)
	}
	return nil
}

// Ensure creates or updates the streams and the object store (the buckets
// are the runner's). It writes nothing of any scope.
func (st *Store) Ensure(ctx context.Context, replicas int) error {
	if err := st.RefuseLegacy(ctx); err != nil {
		return err
	}
	if err := st.EnsureHistory(ctx, replicas); err != nil {
		return err
	}
	for k := range st.hist {
		h := &st.hist[k]
		h.batch = batch.New(st.js.Conn(), st.js, batch.Config{Atomic: h.stream.CachedInfo().Config.AllowAtomicPublish})
		h.direct = bus.NewDirectReader(st.js.Conn(), HistoryStream(k))
	}
	var err error
	st.timers, err = bus.EnsureStream(ctx, st.js, bus.StreamSpec{
		Name:              TimerStream,
		Subjects:          st.timerSubjects(func(kind string) string { return st.subj.InternalAll(Plugin, kind) }),
		Replicas:          replicas,
		Schedules:         true,
		MaxMsgsPerSubject: 1,
		MaxAge:            7 * 24 * time.Hour,
	})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st.blobs, err = st.js.CreateOrUpdateObjectStore(cctx, jetstream.ObjectStoreConfig{
		Bucket: BlobBucket, Storage: jetstream.FileStorage, Replicas: max(replicas, 1),
	})
	if err != nil {
		return fmt.Errorf("takeover: object store: %w", err)
	}
	return nil
}

// ErrLegacyHistory is returned by the service's start when the history is
// still in the single stream of an earlier version: that stream's subjects
// overlap the shards', so the shards cannot be created beside it. Run
// lbctl migrate takeover-history (admin.MigrateHistory) with the service stopped.
var ErrLegacyHistory = errors.New("takeover: the history is in the single stream " + LegacyHistoryStream +
	" of an earlier version; stop the service and run: lbctl migrate takeover-history")

// RefuseLegacy fails with ErrLegacyHistory while the single history stream
// of the earlier layout exists.
func (st *Store) RefuseLegacy(ctx context.Context) error {
	// a refused request gets no reply: bound the wait
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := st.js.Stream(ctx, LegacyHistoryStream)
	switch {
	case err == nil:
		return ErrLegacyHistory
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil
	}
	return fmt.Errorf("takeover: look for the history stream of an earlier version, %s (stream info; may this user read it?): %w", LegacyHistoryStream, err)
}

// EnsureHistory creates or updates the history shards.
func (st *Store) EnsureHistory(ctx context.Context, replicas int) error {
	for k := range st.hist {
		var err error
		st.hist[k].stream, err = bus.EnsureStream(ctx, st.js, bus.StreamSpec{
			Name:              HistoryStream(k),
			Subjects:          []string{st.subj.InternalShard(Plugin, KindHistory, shardToken(k))},
			Replicas:          replicas,
			MaxMsgsPerSubject: historyPerSubject,
			Duplicates:        2 * time.Minute,
			AllowDirect:       true,
			AtomicPublish:     true,
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// OpenHistory opens the existing history shards, for tools that run
// outside the service; they write without a batcher and read with
// consumers.
func (st *Store) OpenHistory(ctx context.Context) error {
	for k := range st.hist {
		var err error
		if st.hist[k].stream, err = st.js.Stream(ctx, HistoryStream(k)); err != nil {
			if lerr := st.RefuseLegacy(ctx); lerr != nil {
				return lerr
			}
			return fmt.Errorf("takeover: history stream %s: %w", HistoryStream(k), err)
		}
	}
	return nil
}

// SessionKey is the record's full KV key, <scope>.session.<sid>.
func SessionKey(sc binding.Scope, sid string) string {
	k, _ := bus.Key(sc, KeySession, sid)
	return k
}

// GetRecord reads a session record; a missing key is (nil, 0, nil) and an
// undecodable value wraps ErrCorrupt.
func (st *Store) GetRecord(ctx context.Context, sc binding.Scope, sid string) (*model.Record, uint64, error) {
	if err := st.Check("kv.get", sc); err != nil {
		return nil, 0, err
	}
	e, err := st.kv.Get(ctx, sc, KeySession, sid)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	r, err := model.DecodeRecord(e.Value())
	if err != nil {
		return nil, e.Revision(), fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return r, e.Revision(), nil
}

// Listed is a session record as listRecords read it; rec is nil when
// the stored value is unreadable.
type Listed struct {
	SID string
	Rec *model.Record
}

// ListRecords reads every session record of a scope in one request.
func (st *Store) ListRecords(ctx context.Context, sc binding.Scope) ([]Listed, error) {
	if err := st.Check("kv.list", sc); err != nil {
		return nil, err
	}
	stored, err := st.kv.List(ctx, sc, KeySession)
	if err != nil {
		return nil, err
	}
	out := make([]Listed, len(stored))
	for i, l := range stored {
		out[i].SID = l.ID
		if r, err := model.DecodeRecord(l.Value); err == nil {
			out[i].Rec = r
		}
	}
	return out, nil
}

// ErrNoChange lets an update function leave the record as it is.
var ErrNoChange = bus.ErrNoChange

// UpdateRecord is a read-modify-write of a session record by CAS. fn gets
// a copy of the current record (nil when missing) and returns the new one,
// or ErrNoChange. A corrupt stored value fails with ErrCorrupt. The retry on
// conflict and the re-read of an ambiguous write (spec §5.5 rule 3) are
// pkg/bus's typed record store's.
func (st *Store) UpdateRecord(ctx context.Context, sc binding.Scope, sid string, fn func(cur *model.Record) (*model.Record, error)) (*model.Record, uint64, error) {
	rec, rev, err := st.records.Update(ctx, sc, fn, sid)
	if err != nil {
		return nil, 0, err
	}
	return rec, rev, nil
}

// sessionRecords is the typed store of the session records in kv, with
// the record's own decoder (an unreadable value wraps ErrCorrupt) and the
// store's fault seam (operations "kv.update" and "kv.update.ack").
func (st *Store) sessionRecords(kv *bus.KV) *bus.Records[model.Record] {
	return bus.NewRecords(kv, KeySession, bus.RecordsConfig[model.Record]{
		Decode: func(b []byte) (*model.Record, error) {
			r, err := model.DecodeRecord(b)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
			return r, nil
		},
		Fault: func(op string, sc binding.Scope) error { return st.Check("kv."+op, sc) },
	})
}

// history returns the shard and subject of a session's history.
func (st *Store) history(sc binding.Scope, sid string) (*historyShard, string) {
	k, _, subject := HistoryOf(st.subj, sc, sid)
	return &st.hist[k], subject
}

// AppendEntry publishes an entry on the session's history subject with its
// id as Nats-Msg-Id, so a retried append is dropped by the server.
func (st *Store) AppendEntry(ctx context.Context, sc binding.Scope, sid string, e *model.Entry) (uint64, error) {
	return st.AppendEntryWith(ctx, sc, sid, e, true)
}

func (st *Store) AppendEntryWith(ctx context.Context, sc binding.Scope, sid string, e *model.Entry, msgID bool) (uint64, error) {
	if err := st.Check("history.append", sc); err != nil {
		return 0, err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return 0, err
	}
	h, subject := st.history(sc, sid)
	msg := &nats.Msg{Subject: subject, Header: nats.Header{}, Data: b}
	bus.Inject(ctx, msg.Header)
	var seq uint64
	if msgID && h.batch != nil {
		seq, err = h.batch.Publish(ctx, msg, e.ID)
	} else {
		var opts []jetstream.PublishOpt
		if msgID {
			opts = append(opts, jetstream.WithMsgID(e.ID))
		}
		var ack *jetstream.PubAck
		if ack, err = st.js.PublishMsg(ctx, msg, opts...); err == nil {
			seq = ack.Sequence
		}
	}
	if err == nil {
		// test seam: the append was stored but its acknowledgement is lost
		err = st.Check("history.append.ack", sc)
	}
	if err != nil {
		return 0, fmt.Errorf("takeover: append: %w", err)
	}
	return seq, nil
}

// Close stops the history batchers once their appends are written and
// releases the readers' and the session bucket's subscriptions.
func (st *Store) Close() {
	for _, h := range st.hist {
		if h.batch != nil {
			h.batch.Close()
		}
		if h.direct != nil {
			_ = h.direct.Close()
		}
	}
	if st.kv != nil {
		_ = st.kv.Close()
	}
}

// StoredEntry is an entry with its stream sequence.
type StoredEntry struct {
	model.Entry
	Corrupt bool  // the stored value did not decode
	Stored  int64 // when the server stored it, Unix ms; 0 when not read
}

// readSubject returns every message of a subject filter of one shard in
// stream order, and the last sequence read: every entry the stream leader
// held when the read began, or an error the caller retries.
//
// The read's ordered consumer is a one-replica consumer, which a cluster
// places on any replica of the shard (not only its leader), and it reads
// that replica's copy. A follower applies an acknowledged append a moment
// after the leader, and one restarted a moment ago can be far behind:
// such a read ends, with nothing pending and no error, before the newest
// entries. So the read first asks the leader for the filter's last
// sequence and reads until it has that entry, waiting a fetch's wait for a
// replica behind it; past that the read fails rather than return a
// history cut at its newest entries as if whole.
func (st *Store) readSubject(ctx context.Context, sc binding.Scope, h *historyShard, subject string) ([]StoredEntry, uint64, error) {
	if err := st.Check("history.read", sc); err != nil {
		return nil, 0, err
	}
	name := h.stream.CachedInfo().Config.Name
	bound, err := bus.LeaderLastSequence(ctx, st.js.Conn(), name, subject)
	if err != nil {
		return nil, 0, fmt.Errorf("takeover: read history: %w", err)
	}
	src := h.stream
	if st.replica != nil {
		src = st.replica(name)
	}
	cons, err := src.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, 0, fmt.Errorf("takeover: read history: %w", err)
	}
	pending := int(cons.CachedInfo().NumPending)
	out := make([]StoredEntry, 0, pending)
	var last uint64
	for len(out) < pending || last < bound {
		// past what the replica held, wait for its next entry
		want := max(pending-len(out), 1)
		batch, err := cons.Fetch(min(want, 500), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, 0, fmt.Errorf("takeover: read history: %w", err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil {
				continue
			}
			se := decodeStored(m.Data(), meta.Sequence.Stream)
			se.Stored = meta.Timestamp.UnixMilli()
			last = se.Seq
			out = append(out, se)
		}
		if err := batch.Error(); err != nil && n == 0 {
			return nil, 0, fmt.Errorf("takeover: read history: %w", err)
		}
		if n > 0 {
			continue
		}
		// A fetch that times out empty is not an error to nats.go.
		if last < bound {
			return nil, 0, fmt.Errorf("takeover: read history: the replica read holds entries up to sequence %d, the stream leader up to %d", last, bound)
		}
		// It is the end when the rest was purged meanwhile (a trim).
		info, err := cons.Info(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("takeover: read history: %w", err)
		}
		if info.NumPending > 0 {
			return nil, 0, fmt.Errorf("takeover: read history: %d of %d entries read, %d pending", len(out), pending, info.NumPending)
		}
		break
	}
	return out, last, nil
}

// decodeStored decodes a history message; one that does not decode is
// kept as corrupt, so that it still counts and can be trimmed.
func decodeStored(data []byte, seq uint64) StoredEntry {
	var se StoredEntry
	if json.Unmarshal(data, &se.Entry) != nil {
		se.Corrupt = true
	}
	se.Seq = seq
	return se
}

// OldestEntries reads the n oldest entries of a session's history in one
// request, and how many the subject held at that moment.
func (st *Store) OldestEntries(ctx context.Context, sc binding.Scope, sid string, n int) ([]StoredEntry, int, error) {
	if err := st.Check("history.read", sc); err != nil {
		return nil, 0, err
	}
	h, subject := st.history(sc, sid)
	msgs, err := h.direct.First(ctx, subject, n)
	if err != nil {
		return nil, 0, fmt.Errorf("takeover: read history: %w", err)
	}
	if len(msgs) == 0 {
		return nil, 0, nil
	}
	out := make([]StoredEntry, len(msgs))
	for i, m := range msgs {
		out[i] = decodeStored(m.Data, m.Sequence)
	}
	return out, int(msgs[0].Pending) + 1, nil
}

// ReadHistory reads one session's history subject (at most
// historyPerSubject entries).
func (st *Store) ReadHistory(ctx context.Context, sc binding.Scope, sid string) ([]StoredEntry, uint64, error) {
	h, subject := st.history(sc, sid)
	return st.readSubject(ctx, sc, h, subject)
}

// PurgeHistory removes a session's entries below seq (all of them when seq
// is 0).
func (st *Store) PurgeHistory(ctx context.Context, sc binding.Scope, sid string, below uint64) error {
	h, subject := st.history(sc, sid)
	return st.purgeSubject(ctx, sc, h, subject, below)
}

// purgeSubject removes the messages of a subject filter of one shard below
// seq (all of them when seq is 0).
func (st *Store) purgeSubject(ctx context.Context, sc binding.Scope, h *historyShard, subject string, below uint64) error {
	if err := st.Check("history.purge", sc); err != nil {
		return err
	}
	opts := []jetstream.StreamPurgeOpt{jetstream.WithPurgeSubject(subject)}
	if below > 0 {
		opts = append(opts, jetstream.WithPurgeSequence(below))
	}
	return h.stream.Purge(ctx, opts...)
}

// SweepHistory deletes the blobs named by every history entry of a scope,
// then removes the scope's history, shard by shard, up to the last sequence
// read in that shard (spec §5.3 rule 7). Appends racing it survive.
func (st *Store) SweepHistory(ctx context.Context, sc binding.Scope) error {
	all := st.subj.InternalScope(Plugin, KindHistory, sc)
	for k := range st.hist {
		h := &st.hist[k]
		entries, last, err := st.readSubject(ctx, sc, h, all)
		if err != nil {
			return err
		}
		var blobs []string
		for _, e := range entries {
			blobs = append(blobs, e.Blobs()...)
		}
		if err := st.DeleteBlobs(ctx, sc, blobs); err != nil {
			return err
		}
		if last > 0 {
			if err := st.purgeSubject(ctx, sc, h, all, last+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// blobName is <scope>.<sid>.<entry id>.<part index>.
func BlobName(sc binding.Scope, sid, entryID string, idx int) string {
	n, _ := bus.Key(sc, sid, entryID, strconv.Itoa(idx))
	return n
}

func (st *Store) PutBlob(ctx context.Context, sc binding.Scope, name string, data []byte, mime, fileName string) error {
	if err := st.Check("blob.put", sc); err != nil {
		return err
	}
	meta := jetstream.ObjectMeta{Name: name, Headers: nats.Header{}}
	meta.Headers.Set("Content-Type", mime)
	if fileName != "" {
		meta.Description = fileName
	}
	if _, err := st.blobs.Put(ctx, meta, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("takeover: blob put: %w", err)
	}
	return nil
}

// GetBlob returns a blob's bytes and stored mime type; a missing blob wraps
// jetstream.ErrObjectNotFound. A blob of more than limit bytes is
// ErrBlobTooLarge, known from its stored size before any chunk is read;
// the bytes are read into one buffer of that size.
func (st *Store) GetBlob(ctx context.Context, sc binding.Scope, name string, limit int) ([]byte, string, error) {
	if err := st.Check("blob.get", sc); err != nil {
		return nil, "", err
	}
	res, err := st.blobs.Get(ctx, name)
	if err != nil {
		return nil, "", err
	}
	defer res.Close()
	info, err := res.Info()
	if err != nil {
		return nil, "", err
	}
	if info.Size > uint64(max(limit, 0)) {
		return nil, "", ErrBlobTooLarge
	}
	data := make([]byte, info.Size)
	if _, err := io.ReadFull(res, data); err != nil {
		return nil, "", fmt.Errorf("takeover: blob get: %w", err)
	}
	return data, info.Headers.Get("Content-Type"), nil
}

func (st *Store) DeleteBlobs(ctx context.Context, sc binding.Scope, names []string) error {
	if err := st.Check("blob.delete", sc); err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if err := st.blobs.Delete(ctx, n); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Schedule arms (or replaces) the session's expiry at expiresAt, rounded up
// to the second (spec §6 rule 4).
func (st *Store) Schedule(ctx context.Context, sc binding.Scope, sid string, expiresAt int64) error {
	if err := st.Check("timer.schedule", sc); err != nil {
		return err
	}
	subject, _ := st.subj.Internal(Plugin, KindTimer, sc, sid)
	target, _ := st.subj.Internal(Plugin, KindExpire, sc, sid)
	body, _ := json.Marshal(model.TimerBody{SID: sid, ExpiresAt: expiresAt})
	return bus.ScheduleAt(ctx, st.js, subject, target, time.UnixMilli(model.ScheduleAt(expiresAt)), body)
}

// CancelSchedule removes the session's schedule. A fired message not yet
// handled stays: its handler compares it with the record (model.OnFire) and
// acks it, and the stream keeps one per subject for at most 7 days. Purging
// the expire subject too emptied the takeover-expire consumer's redelivery
// queue on the server with each cancel (bus.Fired.Remove).
func (st *Store) CancelSchedule(ctx context.Context, sc binding.Scope, sid string) error {
	if err := st.Check("timer.cancel", sc); err != nil {
		return err
	}
	subject, _ := st.subj.Internal(Plugin, KindTimer, sc, sid)
	return bus.PurgeSubjects(ctx, st.timers, subject)
}

// Resources are the streams and the object store the store creates and
// uses, and the earlier version's history stream it looks for
// (bus.ResourceOwner): the service's NATS user is granted them.
func (st *Store) Resources() bus.Resources {
	streams := make([]string, 0, HistoryShards+1)
	for k := range HistoryShards {
		streams = append(streams, HistoryStream(k))
	}
	return bus.Resources{
		Streams:      append(streams, TimerStream),
		ObjectStores: []string{BlobBucket},
		Inspected: []bus.Inspected{{Stream: LegacyHistoryStream,
			Why: "The single history stream of earlier versions: info only, so\nthat the service can see it is still there and refuse to start\nuntil lbctl migrate takeover-history (run as admin) moved it."}},
	}
}
