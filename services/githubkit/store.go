package githubkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// storedRecord is a repo record with its key and KV revision.
type storedRecord struct {
	Key string
	Rev uint64
	Rec *RepoRecord
}

func decodeRecord(b []byte) (*RepoRecord, error) {
	var r RepoRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("githubkit: repo record: %w", err)
	}
	return &r, nil
}

func encodeRecord(r *RepoRecord) ([]byte, error) {
	r.V = 1
	r.SortSubscribers()
	return json.Marshal(r)
}

// getRecord reads one record; (nil, nil) when absent.
func getRecord(ctx context.Context, kv *bus.KV, sc binding.Scope, key string) (*storedRecord, error) {
	e, err := kv.Get(ctx, sc, KindRepo, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := decodeRecord(e.Value())
	if err != nil {
		return nil, err
	}
	return &storedRecord{Key: key, Rev: e.Revision(), Rec: r}, nil
}

// listRecords reads every repo record of a scope in one request.
func listRecords(ctx context.Context, kv *bus.KV, sc binding.Scope) ([]*storedRecord, error) {
	stored, err := kv.List(ctx, sc, KindRepo)
	if err != nil {
		return nil, err
	}
	out := make([]*storedRecord, 0, len(stored))
	for _, l := range stored {
		r, err := decodeRecord(l.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, &storedRecord{Key: l.ID, Rev: l.Revision, Rec: r})
	}
	return out, nil
}

// errAbort carries a reply text out of a KV Update function.
type errAbort struct{ text string }

func (e *errAbort) Error() string { return "githubkit: update aborted" }

// updateRecord is a CAS read-modify-write of one record, retried on
// conflict: fn gets a fresh copy (nil when absent) and returns the new
// record, bus.ErrNoChange to write nothing, or an error that aborts. It
// returns the record fn produced (or saw, without a write) and the revision.
func updateRecord(ctx context.Context, kv *bus.KV, sc binding.Scope, key string, fn func(r *RepoRecord) (*RepoRecord, error)) (*RepoRecord, uint64, error) {
	var out *RepoRecord
	rev, _, err := kv.Update(ctx, sc, KindRepo, func(cur []byte, exists bool) ([]byte, error) {
		var r *RepoRecord
		if exists && len(cur) > 0 {
			var err error
			if r, err = decodeRecord(cur); err != nil {
				return nil, err
			}
		}
		n, err := fn(r)
		if err != nil {
			out = r
			return nil, err
		}
		out = n
		return encodeRecord(n)
	}, key)
	if errors.Is(err, bus.ErrNoChange) {
		return out, rev, nil
	}
	return out, rev, err
}
