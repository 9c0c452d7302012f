package githubkit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// storedRecord is a repo record with its key and KV revision.
type storedRecord struct {
	Key string
	Rev uint64
	Rec *RepoRecord
}

// repos is the store of repo records in kv (<scope>.repo.<repo-key>).
func repos(kv *bus.KV) *bus.Records[RepoRecord] {
	return bus.NewRecords(kv, KindRepo, bus.RecordsConfig[RepoRecord]{Encode: encodeRecord, Decode: decodeRecord})
}

// decodeRecord parses a stored repo record; an empty value is no record,
// which an update then writes afresh.
func decodeRecord(b []byte) (*RepoRecord, error) {
	if len(b) == 0 {
		return nil, nil
	}
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
	r, rev, err := repos(kv).Get(ctx, sc, key)
	if err != nil || r == nil {
		return nil, err
	}
	return &storedRecord{Key: key, Rev: rev, Rec: r}, nil
}

// listRecords reads every repo record of a scope in one request; an
// undecodable one fails the listing.
func listRecords(ctx context.Context, kv *bus.KV, sc binding.Scope) ([]*storedRecord, error) {
	stored, err := repos(kv).List(ctx, sc)
	if err != nil {
		return nil, err
	}
	out := make([]*storedRecord, 0, len(stored))
	for _, l := range stored {
		if l.Err != nil {
			return nil, l.Err
		}
		if l.Value != nil {
			out = append(out, &storedRecord{Key: l.ID, Rev: l.Rev, Rec: l.Value})
		}
	}
	return out, nil
}

// errAbort carries a reply text out of a KV Update function.
type errAbort struct{ text string }

func (e *errAbort) Error() string { return "githubkit: update aborted" }

// updateRecord is a CAS read-modify-write of one record (bus.Records.Update:
// retried on conflict, an ambiguous write re-read): fn gets a fresh copy
// (nil when absent) and returns the new record, bus.ErrNoChange to write
// nothing, or an error that aborts. It returns the record fn produced (or
// saw, without a write) and the revision.
func updateRecord(ctx context.Context, kv *bus.KV, sc binding.Scope, key string, fn func(r *RepoRecord) (*RepoRecord, error)) (*RepoRecord, uint64, error) {
	return repos(kv).Update(ctx, sc, fn, key)
}
