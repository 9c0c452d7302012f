package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// view timing (spec §3.2).
const (
	viewHeartbeat  = 2 * time.Second
	viewStaleAfter = 10 * time.Second
)

// ViewEntry is what the view keeps per session key: the revision, and the
// head of the record (nil when deleted). For a record that does not decode
// whole, the head holds only the takeover it could read (corrupt).
type ViewEntry struct {
	Rev     uint64
	Head    *model.Record
	Corrupt bool
}

func (e ViewEntry) TakenOver(now int64) bool { return e.Head != nil && e.Head.Takeover.TakenOver(now) }

// headOf returns the part of a record that deciding and recording read:
// identity, generation, unread, takeover and a waiting satisfaction
// question, without the list metadata.
func headOf(r *model.Record) *model.Record {
	return &model.Record{V: r.V, Gen: r.Gen, SessionKey: r.SessionKey, Type: r.Type, TargetID: r.TargetID,
		BotUUID: r.BotUUID, Adapter: r.Adapter, Legacy: r.Legacy, Unread: r.Unread, Takeover: r.Takeover,
		Satisfaction: r.Satisfaction}
}

// View is the in-process view of every session's takeover state,
// fed by an ordered consumer on the bucket's stream (spec §3.2 "The view").
// Entries are keyed by the full key <scope>.session.<sid>.
type View struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	bucket string
	prefix string // "$KV.<bucket>."

	mu      sync.RWMutex
	entries map[string]ViewEntry
	pending map[string]int64 // trigger takeovers decided but not yet stored: key -> expires_at
	removed map[string]bool  // tombstoned scopes
	// marks holds, by scope, the sessions that make their chat watched
	// (event gate): key -> mark. Only such sessions are kept, so a gate is
	// built from a few entries, not from every session of the scope.
	marks map[string]map[string]mark
	// gateNow and revoke are set by WatchGate; revoke is called when a
	// chat of a scope becomes watched.
	gateNow func() int64
	revoke  func(scope string)

	initialized atomic.Bool
	stopped     atomic.Bool
	lastErr     atomic.Int64 // unix nanos of the last consumer error
	cc          jetstream.ConsumeContext

	// connected follows the connection's status events. Asking the
	// connection (IsConnected) on every decision would take its lock,
	// which the connection's flusher holds while it writes to the socket.
	connected atomic.Bool
	status    chan nats.Status
}

// NewView returns the view of bucket's session records, read through js
// on nc; Start loads it.
func NewView(nc *nats.Conn, js jetstream.JetStream, bucket string) *View {
	return &View{
		nc: nc, js: js, bucket: bucket, prefix: bus.KVSubject(bucket, ""),
		entries: make(map[string]ViewEntry),
		pending: make(map[string]int64),
		removed: make(map[string]bool),
		marks:   make(map[string]map[string]mark),
	}
}

// Start creates the ordered consumer and begins consuming (bus.Part: the
// service starts the view after the store, and stops it before).
func (v *View) Start(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, setupTimeout)
	defer cancel()
	js, bucket := v.js, v.bucket
	cons, err := js.OrderedConsumer(ctx, bus.KVStream(bucket), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{bus.KVSubject(bucket, bus.KVKeysFilter(KeySession))},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	})
	if err != nil {
		return fmt.Errorf("takeover: session view: %w", err)
	}
	if cons.CachedInfo().NumPending == 0 {
		v.initialized.Store(true)
	}
	cc, err := cons.Consume(v.handle,
		jetstream.PullHeartbeat(viewHeartbeat),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			v.lastErr.Store(time.Now().UnixNano())
		}))
	if err != nil {
		return fmt.Errorf("takeover: session view: %w", err)
	}
	v.cc = cc
	// listen first, then read the state, so that no change falls between
	v.status = v.nc.StatusChanged()
	v.connected.Store(v.nc.IsConnected())
	go func(ch chan nats.Status) {
		// each event reads the state anew, so an event the connection
		// dropped on a full channel loses nothing
		for range ch {
			v.connected.Store(v.nc.IsConnected())
		}
	}(v.status)
	return nil
}

// Stop ends consumption; the view is stale from then on (bus.Part).
func (v *View) Stop(context.Context) error {
	v.stopped.Store(true)
	if v.cc != nil {
		v.cc.Stop()
	}
	if v.status != nil {
		v.nc.RemoveStatusListener(v.status) // ends the status goroutine
	}
	return nil
}

// Live reports whether decisions may come from the view alone.
func (v *View) Live() bool {
	if !v.initialized.Load() || v.stopped.Load() || !v.connected.Load() {
		return false
	}
	last := v.lastErr.Load()
	return last == 0 || time.Since(time.Unix(0, last)) > viewStaleAfter
}

func (v *View) handle(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		return
	}
	key := strings.TrimPrefix(m.Subject(), v.prefix)
	op := m.Headers().Get("KV-Operation")
	if op == "DEL" || op == "PURGE" {
		v.remove(key, meta.Sequence.Stream)
	} else {
		e := ViewEntry{Rev: meta.Sequence.Stream}
		if r, err := model.DecodeRecord(m.Data()); err == nil {
			e.Head = headOf(r)
		} else {
			// a record broken elsewhere still blocks by its takeover, if
			// that part reads (an unreadable one holds none)
			var t struct {
				Takeover model.TakeoverState `json:"takeover"`
			}
			_ = json.Unmarshal(m.Data(), &t)
			e.Head, e.Corrupt = &model.Record{Takeover: t.Takeover}, true
		}
		v.apply(key, e)
	}
	if meta.NumPending == 0 {
		v.initialized.Store(true)
	}
}

func scopeOfKey(key string) string {
	i := strings.Index(key, "."+KeySession+".")
	if i < 0 {
		return ""
	}
	return key[:i]
}

// apply stores e for key unless a newer revision is known or the scope is
// removed.
func (v *View) apply(key string, e ViewEntry) {
	v.mu.Lock()
	scope := scopeOfKey(key)
	if v.removed[scope] {
		v.mu.Unlock()
		return
	}
	if cur, ok := v.entries[key]; ok && cur.Rev >= e.Rev {
		v.mu.Unlock()
		return
	}
	v.entries[key] = e
	louder := v.setMark(scope, key, e)
	revoke := v.revoke
	v.mu.Unlock()
	if louder {
		revoke(scope)
	}
}

func (v *View) remove(key string, rev uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if cur, ok := v.entries[key]; ok && cur.Rev >= rev {
		return
	}
	// keep the revision so an older update cannot revive the entry
	v.entries[key] = ViewEntry{Rev: rev}
	v.setMark(scopeOfKey(key), key, ViewEntry{})
}

// ApplyRecord applies a record this replica just wrote at rev.
func (v *View) ApplyRecord(sc binding.Scope, sid string, r *model.Record, rev uint64) {
	if r == nil || rev == 0 {
		return
	}
	v.apply(SessionKey(sc, sid), ViewEntry{Rev: rev, Head: headOf(r)})
}

// DropScope forgets every entry of a tombstoned scope and ignores its later
// updates (the uninstall purge writes no per-key markers).
func (v *View) DropScope(sc binding.Scope) {
	prefix := sc.String() + "."
	v.mu.Lock()
	defer v.mu.Unlock()
	v.removed[sc.String()] = true
	delete(v.marks, sc.String())
	for k := range v.entries {
		if strings.HasPrefix(k, prefix) {
			delete(v.entries, k)
		}
	}
	for k := range v.pending {
		if strings.HasPrefix(k, prefix) {
			delete(v.pending, k)
		}
	}
}

func (v *View) Lookup(key string) (ViewEntry, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	e, ok := v.entries[key]
	return e, ok
}

func (v *View) PendingTakenOver(key string, now int64) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	exp, ok := v.pending[key]
	return ok && now < exp
}

// AddPending marks key taken over until expiresAt before its write is
// stored; the key's scope gives no event gate meanwhile, and every gate
// given before is revoked.
func (v *View) AddPending(key string, expiresAt int64) {
	v.mu.Lock()
	v.pending[key] = expiresAt
	revoke := v.revoke
	v.mu.Unlock()
	if revoke != nil {
		revoke(scopeOfKey(key))
	}
}

// SettlePending drops a pending entry once its write settled (the stored
// revision, applied separately, replaces it).
func (v *View) SettlePending(key string) {
	v.mu.Lock()
	delete(v.pending, key)
	v.mu.Unlock()
}

// ActiveCount counts the sessions taken over at now.
func (v *View) ActiveCount(now int64) int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	n := 0
	for _, e := range v.entries {
		if e.TakenOver(now) {
			n++
		}
	}
	return n
}

// Connected reports whether the view counts its connection as up.
func (v *View) Connected() bool { return v.connected.Load() }
