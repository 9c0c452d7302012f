package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// cannedID is the one id of an installation's canned replies key: a key
// needs an id after its kind, and the set is one value so one CAS keeps
// its bounds.
const cannedID = "all"

// Canned reads an installation's canned replies; none is an empty set.
func (st *Store) Canned(ctx context.Context, sc binding.Scope) (model.CannedSet, error) {
	var c model.CannedSet
	err := st.getJSON(ctx, sc, &c, KeyCanned, cannedID)
	return c, err
}

// UpdateCanned changes an installation's canned replies by CAS: fn edits
// the current set (empty when none) and returns an error to refuse,
// ErrNoChange to write nothing. It returns the stored set.
func (st *Store) UpdateCanned(ctx context.Context, sc binding.Scope, fn func(*model.CannedSet) error) (model.CannedSet, error) {
	var c model.CannedSet
	err := st.updateJSON(ctx, sc, func(cur []byte, exists bool) ([]byte, error) {
		c = model.CannedSet{}
		if exists && json.Unmarshal(cur, &c) != nil {
			c = model.CannedSet{}
		}
		if err := fn(&c); err != nil {
			return nil, err
		}
		c.V = 1
		return json.Marshal(c)
	}, KeyCanned, cannedID)
	return c, err
}

// Notes reads a chat's internal notes; none is an empty list.
func (st *Store) Notes(ctx context.Context, sc binding.Scope, sid string) (model.Notes, error) {
	var n model.Notes
	err := st.getJSON(ctx, sc, &n, KeyNotes, sid)
	return n, err
}

// UpdateNotes changes a chat's notes by CAS, as UpdateCanned.
func (st *Store) UpdateNotes(ctx context.Context, sc binding.Scope, sid string, fn func(*model.Notes) error) (model.Notes, error) {
	var n model.Notes
	err := st.updateJSON(ctx, sc, func(cur []byte, exists bool) ([]byte, error) {
		n = model.Notes{}
		if exists && json.Unmarshal(cur, &n) != nil {
			n = model.Notes{}
		}
		if err := fn(&n); err != nil {
			return nil, err
		}
		n.V = 1
		return json.Marshal(n)
	}, KeyNotes, sid)
	return n, err
}

// PurgeNotes removes the notes of the given chats (a deleted session, a
// cleared installation).
func (st *Store) PurgeNotes(ctx context.Context, sc binding.Scope, sids ...string) error {
	if err := st.Check("kv.purge", sc); err != nil {
		return err
	}
	for _, sid := range sids {
		if err := st.kv.Purge(ctx, sc, KeyNotes, sid); err != nil {
			return err
		}
	}
	return nil
}

// NoteSIDs lists the chats of a scope that have notes.
func (st *Store) NoteSIDs(ctx context.Context, sc binding.Scope) ([]string, error) {
	sids, err := st.kv.Keys(ctx, sc, KeyNotes)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, err
	}
	return sids, nil
}

// TakeAICall counts one LLM call of the installation on day (yyyymmdd,
// UTC) in the dedupe bucket, whose TTL removes old days. It reports false,
// counting nothing, when limit calls were made that day.
func (st *Store) TakeAICall(ctx context.Context, sc binding.Scope, day string, limit int) (bool, error) {
	if err := st.Check("kv.update", sc); err != nil {
		return false, err
	}
	ok := false
	_, _, err := st.dedupe.Update(ctx, sc, KeyAIUsage, func(cur []byte, exists bool) ([]byte, error) {
		var u struct {
			Calls int `json:"calls"`
		}
		if exists {
			_ = json.Unmarshal(cur, &u)
		}
		if u.Calls >= limit {
			ok = false
			return nil, bus.ErrNoChange
		}
		ok = true
		u.Calls++
		return json.Marshal(u)
	}, day)
	if err != nil && !errors.Is(err, bus.ErrNoChange) {
		return false, err
	}
	return ok, nil
}

func (st *Store) getJSON(ctx context.Context, sc binding.Scope, v any, kind string, ids ...string) error {
	if err := st.Check("kv.get", sc); err != nil {
		return err
	}
	e, err := st.kv.Get(ctx, sc, kind, ids...)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return fmt.Errorf("%w: %s", ErrCorrupt, kind)
	}
	return nil
}

func (st *Store) updateJSON(ctx context.Context, sc binding.Scope, fn bus.UpdateFunc, kind string, ids ...string) error {
	if err := st.Check("kv.update", sc); err != nil {
		return err
	}
	_, _, err := st.kv.Update(ctx, sc, kind, fn, ids...)
	if errors.Is(err, bus.ErrNoChange) {
		return nil
	}
	return err
}
