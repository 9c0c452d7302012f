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

// TakeAICall charges one LLM call of the installation to the day's
// budget of limit calls (bus.DailyBudget at <scope>.aiuse; day in the
// caller's zone, key charged once), reporting false, charging nothing,
// when the day's calls are used up.
func (st *Store) TakeAICall(ctx context.Context, sc binding.Scope, day, key string, limit int) (bool, error) {
	return bus.NewDailyBudget(st.kv, KeyAIUsage, func(op string, sc binding.Scope) error {
		return st.Check("kv."+op, sc)
	}).Charge(ctx, sc, limit, day, key)
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
