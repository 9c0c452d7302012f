package bus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// ErrNoChange is returned by an UpdateFunc to leave the stored value as it
// is; Update then returns the current value without writing.
var ErrNoChange = errors.New("bus: no change")

// ErrCASExhausted is returned when a compare-and-set kept losing races.
var ErrCASExhausted = errors.New("bus: compare-and-set retries exhausted")

// casAttempts bounds Update's retries (DESIGN 4; takeover spec 5.5).
const casAttempts = 10

// defaultKVTimeout applies to KV calls whose ctx has no deadline.
const defaultKVTimeout = 5 * time.Second

// KV is a plugin bucket reached only through a Scope: every key it reads or
// writes starts with the scope, so no call can touch another installation.
type KV struct {
	kv     jetstream.KeyValue
	direct *DirectReader
}

// NewKV wraps a bucket; nc is the connection its JetStream context uses
// (List reads the bucket's stream through it).
func NewKV(nc *nats.Conn, kv jetstream.KeyValue) *KV {
	return &KV{kv: kv, direct: NewDirectReader(nc, KVStream(kv.Bucket()))}
}

// Bucket returns the underlying bucket, for watches that need the raw
// stream (a service's own view of its records).
func (k *KV) Bucket() jetstream.KeyValue { return k.kv }

func withDefault(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultKVTimeout)
}

// Get reads <scope>.<kind>[.<ids>]. A missing key gives jetstream.ErrKeyNotFound.
func (k *KV) Get(ctx context.Context, sc binding.Scope, kind string, ids ...string) (jetstream.KeyValueEntry, error) {
	key, err := Key(sc, kind, ids...)
	if err != nil {
		return nil, err
	}
	ctx, end := k.span(ctx, "get", sc, kind)
	ctx, cancel := withDefault(ctx)
	defer cancel()
	e, err := k.kv.Get(ctx, key)
	end(err)
	return e, err
}

func (k *KV) span(ctx context.Context, op string, sc binding.Scope, kind string) (context.Context, func(error)) {
	b := k.kv.Bucket()
	return startClientSpan(ctx, "kv "+op+" "+b, trace.SpanKindClient, kvAttrs(b, op, sc, kind)...)
}

// Create writes a key that must not exist (jetstream.ErrKeyExists otherwise).
func (k *KV) Create(ctx context.Context, sc binding.Scope, kind string, value []byte, ids ...string) (uint64, error) {
	key, err := Key(sc, kind, ids...)
	if err != nil {
		return 0, err
	}
	ctx, end := k.span(ctx, "create", sc, kind)
	ctx, cancel := withDefault(ctx)
	defer cancel()
	rev, err := k.kv.Create(ctx, key, value)
	end(err)
	return rev, err
}

// UpdateAt writes value if the key is still at revision rev (a single CAS,
// no retry); a conflict satisfies IsCASConflict.
func (k *KV) UpdateAt(ctx context.Context, sc binding.Scope, kind string, value []byte, rev uint64, ids ...string) (uint64, error) {
	key, err := Key(sc, kind, ids...)
	if err != nil {
		return 0, err
	}
	ctx, end := k.span(ctx, "update", sc, kind)
	ctx, cancel := withDefault(ctx)
	defer cancel()
	var nrev uint64
	if rev == 0 {
		nrev, err = k.kv.Create(ctx, key, value)
	} else {
		nrev, err = k.kv.Update(ctx, key, value, rev)
	}
	end(err)
	return nrev, err
}

// UpdateFunc computes a new value from the current one (nil and exists
// false when the key is absent). It must be a pure function of its input:
// Update calls it again after losing a race. Returning ErrNoChange skips the
// write; any other error aborts Update.
type UpdateFunc func(cur []byte, exists bool) ([]byte, error)

// Update is a read-modify-write by compare-and-set on the revision, retried
// on conflict up to 10 times with 5-50 ms of jitter. It returns the revision
// and value stored when it finished (the unchanged ones for ErrNoChange).
func (k *KV) Update(ctx context.Context, sc binding.Scope, kind string, fn UpdateFunc, ids ...string) (uint64, []byte, error) {
	key, err := Key(sc, kind, ids...)
	if err != nil {
		return 0, nil, err
	}
	ctx, end := k.span(ctx, "read_modify_write", sc, kind)
	rev, val, err := casUpdate(ctx, k.kv, key, fn)
	end(err)
	return rev, val, err
}

func casUpdate(ctx context.Context, kv jetstream.KeyValue, key string, fn UpdateFunc) (uint64, []byte, error) {
	ctx, cancel := withDefault(ctx)
	defer cancel()
	for attempt := 0; attempt < casAttempts; attempt++ {
		var cur []byte
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case err == nil:
			cur, rev = e.Value(), e.Revision()
		case errors.Is(err, jetstream.ErrKeyNotFound):
		default:
			return 0, nil, fmt.Errorf("bus: read %s: %w", keyKind(key), err)
		}
		next, err := fn(cur, rev != 0)
		if errors.Is(err, ErrNoChange) {
			return rev, cur, nil
		}
		if err != nil {
			return 0, nil, err
		}
		var nrev uint64
		if rev == 0 {
			nrev, err = kv.Create(ctx, key, next)
		} else {
			nrev, err = kv.Update(ctx, key, next, rev)
		}
		if err == nil {
			return nrev, next, nil
		}
		if !IsCASConflict(err) {
			return 0, nil, fmt.Errorf("bus: write %s: %w", keyKind(key), err)
		}
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-time.After(time.Duration(5+rand.IntN(46)) * time.Millisecond):
		}
	}
	return 0, nil, fmt.Errorf("%w: %s", ErrCASExhausted, keyKind(key))
}

// IsCASConflict reports whether err is a lost compare-and-set: a Create
// that found the key, or an Update (UpdateAt, Delete at a revision) at a
// stale revision. Any other error from those calls is a storage failure.
func IsCASConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) ||
		errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// keyKind returns the kind part of a key for error messages, without ids
// (which may encode user text).
func keyKind(key string) string {
	if _, kind, _, err := ParseKey(key); err == nil {
		return kind
	}
	return "key"
}

// Delete places a delete marker on the key (optionally only at revision
// rev, when rev > 0).
func (k *KV) Delete(ctx context.Context, sc binding.Scope, kind string, rev uint64, ids ...string) error {
	key, err := Key(sc, kind, ids...)
	if err != nil {
		return err
	}
	ctx, cancel := withDefault(ctx)
	defer cancel()
	var opts []jetstream.KVDeleteOpt
	if rev > 0 {
		opts = append(opts, jetstream.LastRevision(rev))
	}
	ctx, end := k.span(ctx, "delete", sc, kind)
	err = k.kv.Delete(ctx, key, opts...)
	end(err)
	return err
}

// Purge removes the key's history, leaving one purge marker that watchers
// see.
func (k *KV) Purge(ctx context.Context, sc binding.Scope, kind string, ids ...string) error {
	key, err := Key(sc, kind, ids...)
	if err != nil {
		return err
	}
	ctx, end := k.span(ctx, "purge", sc, kind)
	ctx, cancel := withDefault(ctx)
	defer cancel()
	err = k.kv.Purge(ctx, key)
	end(err)
	return err
}

// Keys lists the ids under <scope>.<kind>. (each result is the key's ids
// joined by "."), in no particular order.
func (k *KV) Keys(ctx context.Context, sc binding.Scope, kind string) ([]string, error) {
	prefix, err := Key(sc, kind)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDefault(ctx)
	defer cancel()
	lister, err := k.kv.ListKeysFiltered(ctx, prefix+".>")
	if err != nil {
		return nil, err
	}
	var out []string
	for key := range lister.Keys() {
		out = append(out, key[len(prefix)+1:])
	}
	return out, ctx.Err()
}

// Close releases what List holds on the connection (one subscription);
// a later List takes it again. Services close their KV handles when they
// stop, so nothing of theirs outlives Run on a connection they were given.
func (k *KV) Close() error { return k.direct.Close() }

// Listed is one key's current value as List read it.
type Listed struct {
	ID       string // the key's ids joined by ".", as Keys returns them
	Value    []byte
	Revision uint64
}

// List reads the current value of every key under <scope>.<kind>. in one
// request: a batched direct get of the last message of each key, answered
// as one consistent snapshot (nats-server 2.11+). A scope with more keys
// than one request returns is read key by key. Order is unspecified.
func (k *KV) List(ctx context.Context, sc binding.Scope, kind string) ([]Listed, error) {
	prefix, err := Key(sc, kind)
	if err != nil {
		return nil, err
	}
	ctx, end := k.span(ctx, "list", sc, kind)
	ctx, cancel := withDefault(ctx)
	defer cancel()
	out, err := k.listDirect(ctx, prefix)
	if errors.Is(err, ErrTooManySubjects) {
		out, err = k.listEach(ctx, sc, kind, prefix)
	}
	end(err)
	return out, err
}

func (k *KV) listDirect(ctx context.Context, prefix string) ([]Listed, error) {
	subjPrefix := KVSubject(k.kv.Bucket(), prefix+".")
	msgs, err := k.direct.LastPerSubject(ctx, subjPrefix+">")
	if err != nil {
		return nil, fmt.Errorf("bus: kv list: %w", err)
	}
	out := make([]Listed, 0, len(msgs))
	for _, m := range msgs {
		switch m.Header.Get("KV-Operation") {
		case "DEL", "PURGE":
			continue
		}
		if !strings.HasPrefix(m.Subject, subjPrefix) {
			return nil, fmt.Errorf("bus: kv list: unexpected message on %q", m.Subject)
		}
		out = append(out, Listed{ID: m.Subject[len(subjPrefix):], Value: m.Data, Revision: m.Sequence})
	}
	return out, nil
}

// ErrNoScope is returned by Locate when no scope holds the key.
var ErrNoScope = errors.New("bus: no scope holds the key")

// Locate returns the scope that holds <scope>.<kind>.<ids> and the key's
// value and revision, reading every scope's key of that name in one
// batched direct get. It is for entry points that carry an opaque,
// unguessable id and no scope (githubkit's webhook URL): the id is the
// only thing that names the installation, so the caller must have made it
// random and unique. A deleted key, or none, gives ErrNoScope.
func (k *KV) Locate(ctx context.Context, kind string, ids ...string) (binding.Scope, []byte, uint64, error) {
	if err := wire.CheckID(kind); err != nil {
		return binding.Scope{}, nil, 0, err
	}
	for _, id := range ids {
		if err := wire.CheckID(id); err != nil {
			return binding.Scope{}, nil, 0, err
		}
	}
	ctx, cancel := withDefault(ctx)
	defer cancel()
	suffix := "." + join(append([]string{kind}, ids...)...)
	prefix := KVSubject(k.kv.Bucket(), "")
	msgs, err := k.direct.LastPerSubject(ctx, prefix+"*.*.*"+suffix)
	if err != nil {
		return binding.Scope{}, nil, 0, fmt.Errorf("bus: kv locate: %w", err)
	}
	var found []StoredMsg
	for _, m := range msgs {
		switch m.Header.Get("KV-Operation") {
		case "DEL", "PURGE":
			continue
		}
		found = append(found, m)
	}
	switch len(found) {
	case 0:
		return binding.Scope{}, nil, 0, ErrNoScope
	case 1:
	default:
		return binding.Scope{}, nil, 0, fmt.Errorf("bus: kv locate: %d scopes hold one id", len(found))
	}
	m := found[0]
	sc, kk, _, err := ParseKey(strings.TrimPrefix(m.Subject, prefix))
	if err != nil || kk != kind {
		return binding.Scope{}, nil, 0, fmt.Errorf("bus: kv locate: unexpected message on %q", m.Subject)
	}
	return sc, m.Data, m.Sequence, nil
}

// listEach is List key by key; prefix is <scope>.<kind>.
func (k *KV) listEach(ctx context.Context, sc binding.Scope, kind, prefix string) ([]Listed, error) {
	ids, err := k.Keys(ctx, sc, kind)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]Listed, 0, len(ids))
	for _, id := range ids {
		e, err := k.kv.Get(ctx, prefix+"."+id)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Listed{ID: id, Value: e.Value(), Revision: e.Revision()})
	}
	return out, nil
}

// PurgeScope purges every key of the scope except those of the kinds in
// keep (the authority record survives removal as the tombstone).
func (k *KV) PurgeScope(ctx context.Context, sc binding.Scope, keep ...string) error {
	return purgeScope(ctx, k.kv, sc, keep...)
}

func purgeScope(ctx context.Context, kv jetstream.KeyValue, sc binding.Scope, keep ...string) error {
	if sc.IsZero() {
		return binding.ErrInvalidScope
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	lister, err := kv.ListKeysFiltered(ctx, ScopeKeysFilter(sc))
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil
		}
		return fmt.Errorf("bus: list scope keys: %w", err)
	}
	var keys []string
	for key := range lister.Keys() {
		keys = append(keys, key)
	}
	var errs []error
	for _, key := range keys {
		_, kind, _, err := ParseKey(key)
		if err != nil || containsString(keep, kind) {
			continue
		}
		if err := kv.Purge(ctx, key); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("bus: purge scope: %w", errors.Join(errs...))
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// BucketSpec holds the settings of a bucket that are configuration (DESIGN 4).
type BucketSpec struct {
	Replicas int           // 1 in dev, 3 in production
	TTL      time.Duration // 0: no expiry
	History  uint8         // values kept per key, default 1
	Memory   bool          // memory storage; default file
}

// EnsureBucket creates or updates a KV bucket with file storage.
func EnsureBucket(ctx context.Context, js jetstream.JetStream, name string, spec BucketSpec) (jetstream.KeyValue, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:   name,
		History:  max(spec.History, 1),
		TTL:      spec.TTL,
		Replicas: max(spec.Replicas, 1),
		Storage:  jetstream.FileStorage,
	}
	if spec.Memory {
		cfg.Storage = jetstream.MemoryStorage
	}
	var kv jetstream.KeyValue
	err := retrySetup(ctx, func(ctx context.Context) (err error) {
		kv, err = js.CreateOrUpdateKeyValue(ctx, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", name, err)
	}
	return kv, nil
}
