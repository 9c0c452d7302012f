package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// ErrCorruptRecord wraps a stored value that does not decode as its
// record type.
var ErrCorruptRecord = errors.New("bus: undecodable record")

// RecordsConfig says how a Records store turns values into bytes and
// back. Nil functions mean JSON.
type RecordsConfig[T any] struct {
	// Encode serialises a record for a write; it may normalise it first
	// (a version field, a sort), since the value written is the one the
	// caller gets back.
	Encode func(*T) ([]byte, error)
	// Decode parses a stored value.
	Decode func([]byte) (*T, error)
	// Fault, when set, is called before each operation ("get", "list",
	// "create", "update", "delete", "purge") and after a successful update
	// ("update.ack"), and its error is returned as the operation's: a
	// seam for tests to inject the failures a real bus has, such as a
	// write applied whose acknowledgement is lost. Nil in production.
	Fault func(op string, sc binding.Scope) error
}

// Records is a typed store of one key kind in a plugin's scoped KV, the
// records of DESIGN 4: <scope>.<kind>.<ids>. It does the decoding, the
// compare-and-set read-modify-write with retry, and the re-read of an
// ambiguous write once, for every service.
type Records[T any] struct {
	kv    *KV
	kind  string
	enc   func(*T) ([]byte, error)
	dec   func([]byte) (*T, error)
	fault func(string, binding.Scope) error
}

// NewRecords returns the store of kind in kv.
func NewRecords[T any](kv *KV, kind string, cfg RecordsConfig[T]) *Records[T] {
	r := &Records[T]{kv: kv, kind: kind, enc: cfg.Encode, dec: cfg.Decode, fault: cfg.Fault}
	if r.enc == nil {
		r.enc = func(v *T) ([]byte, error) { return json.Marshal(v) }
	}
	if r.dec == nil {
		r.dec = func(b []byte) (*T, error) {
			v := new(T)
			if err := json.Unmarshal(b, v); err != nil {
				return nil, err
			}
			return v, nil
		}
	}
	return r
}

// Kind returns the key kind the store holds.
func (r *Records[T]) Kind() string { return r.kind }

func (r *Records[T]) check(op string, sc binding.Scope) error {
	if r.fault == nil {
		return nil
	}
	return r.fault(op, sc)
}

func (r *Records[T]) decode(b []byte) (*T, error) {
	v, err := r.dec(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorruptRecord, r.kind, err)
	}
	return v, nil
}

// Get reads one record and its revision. A missing key is (nil, 0, nil);
// an undecodable value gives its revision and ErrCorruptRecord.
func (r *Records[T]) Get(ctx context.Context, sc binding.Scope, ids ...string) (*T, uint64, error) {
	if err := r.check("get", sc); err != nil {
		return nil, 0, err
	}
	e, err := r.kv.Get(ctx, sc, r.kind, ids...)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	v, err := r.decode(e.Value())
	if err != nil {
		return nil, e.Revision(), err
	}
	return v, e.Revision(), nil
}

// Stored is one record as List read it. Value is nil and Err wraps
// ErrCorruptRecord when the stored value does not decode.
type Stored[T any] struct {
	ID    string // the key's ids joined by "."
	Rev   uint64
	Value *T
	Err   error
}

// List reads every record of the kind in a scope in one request (KV.List),
// in no particular order. An undecodable record is listed with its Err,
// so that the caller decides whether it fails the whole listing.
func (r *Records[T]) List(ctx context.Context, sc binding.Scope) ([]Stored[T], error) {
	if err := r.check("list", sc); err != nil {
		return nil, err
	}
	listed, err := r.kv.List(ctx, sc, r.kind)
	if err != nil {
		return nil, err
	}
	out := make([]Stored[T], len(listed))
	for i, l := range listed {
		out[i] = Stored[T]{ID: l.ID, Rev: l.Revision}
		out[i].Value, out[i].Err = r.decode(l.Value)
	}
	return out, nil
}

// Create writes a record whose key must not exist; a lost race satisfies
// IsCASConflict.
func (r *Records[T]) Create(ctx context.Context, sc binding.Scope, v *T, ids ...string) (uint64, error) {
	if err := r.check("create", sc); err != nil {
		return 0, err
	}
	b, err := r.enc(v)
	if err != nil {
		return 0, err
	}
	return r.kv.Create(ctx, sc, r.kind, b, ids...)
}

// UpdateAt writes v if the key is still at rev (0: must not exist), one
// compare-and-set without retry; a conflict satisfies IsCASConflict.
func (r *Records[T]) UpdateAt(ctx context.Context, sc binding.Scope, v *T, rev uint64, ids ...string) (uint64, error) {
	if err := r.check("update", sc); err != nil {
		return 0, err
	}
	b, err := r.enc(v)
	if err != nil {
		return 0, err
	}
	return r.kv.UpdateAt(ctx, sc, r.kind, b, rev, ids...)
}

// Delete places a delete marker on the record, only at revision rev when
// rev > 0 (a conflict satisfies IsCASConflict).
func (r *Records[T]) Delete(ctx context.Context, sc binding.Scope, rev uint64, ids ...string) error {
	if err := r.check("delete", sc); err != nil {
		return err
	}
	return r.kv.Delete(ctx, sc, r.kind, rev, ids...)
}

// Purge removes the record's history, leaving one purge marker that
// watchers see.
func (r *Records[T]) Purge(ctx context.Context, sc binding.Scope, ids ...string) error {
	if err := r.check("purge", sc); err != nil {
		return err
	}
	return r.kv.Purge(ctx, sc, r.kind, ids...)
}

// IDs lists the ids of the kind's records in a scope (KV.Keys), in no
// particular order; none gives jetstream.ErrNoKeysFound.
func (r *Records[T]) IDs(ctx context.Context, sc binding.Scope) ([]string, error) {
	if err := r.check("list", sc); err != nil {
		return nil, err
	}
	return r.kv.Keys(ctx, sc, r.kind)
}

// ambiguousReread bounds the re-read of an ambiguous write, which runs
// even when the caller's ctx is done (that may be what made it ambiguous).
const ambiguousReread = 5 * time.Second

// Update is a read-modify-write of one record by compare-and-set, retried
// on conflict as KV.Update is. fn gets the current record (nil when the key
// is absent; a fresh copy on each attempt, since it runs again after a lost
// race) and returns the record to write, ErrNoChange to write nothing, or
// an error that aborts. An undecodable stored value aborts with
// ErrCorruptRecord.
//
// Update returns the record written (the current one for ErrNoChange; the
// one fn saw when fn fails) and its revision. A write whose outcome is
// unknown (its reply timed out or ctx ended) is re-read (DESIGN 4): if the
// stored value is the one meant, the write succeeded; otherwise Update
// fails with the write's error, and a retry of the whole operation
// applies the change again (fn must make that harmless).
func (r *Records[T]) Update(ctx context.Context, sc binding.Scope, fn func(cur *T) (*T, error), ids ...string) (*T, uint64, error) {
	if err := r.check("update", sc); err != nil {
		return nil, 0, err
	}
	// of the last attempt: the record fn saw, whether fn failed, and what
	// it asked to write
	var cur, next *T
	var fnFailed bool
	var meant []byte
	rev, _, err := r.kv.Update(ctx, sc, r.kind, func(stored []byte, exists bool) ([]byte, error) {
		cur, next, fnFailed, meant = nil, nil, false, nil
		if exists {
			var err error
			if cur, err = r.decode(stored); err != nil {
				return nil, err
			}
		}
		n, err := fn(cur)
		if err != nil {
			fnFailed = true
			return nil, err // ErrNoChange: KV.Update answers nil and the current revision
		}
		b, err := r.enc(n)
		if err != nil {
			return nil, err
		}
		next, meant = n, b
		return b, nil
	}, ids...)
	switch {
	case err == nil && meant == nil: // ErrNoChange
		return cur, rev, nil
	case err == nil:
		if err = r.check("update.ack", sc); err == nil {
			return next, rev, nil
		}
	case fnFailed:
		return cur, 0, err
	}
	if meant != nil && ambiguous(err) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ambiguousReread)
		defer cancel()
		if e, gerr := r.kv.Get(rctx, sc, r.kind, ids...); gerr == nil && bytes.Equal(e.Value(), meant) {
			return next, e.Revision(), nil
		}
	}
	return nil, 0, err
}

// ambiguous reports whether a failed write may have been applied: its
// reply was lost or came too late.
func ambiguous(err error) bool { return isTimeout(err) || errors.Is(err, context.Canceled) }
