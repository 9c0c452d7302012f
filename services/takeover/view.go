package takeover

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

// Decision paths (spec §3.2).
const (
	PathView     = "view"
	PathDirect   = "direct"
	PathFallback = "fallback"
)

// view timing (spec §3.2).
const (
	viewHeartbeat  = 2 * time.Second
	viewStaleAfter = 10 * time.Second
	directReadWait = 250 * time.Millisecond
)

// viewEntry is what the view keeps per session key: the revision, and the
// head of the record (nil when deleted). For a record that does not decode
// whole, the head holds only the takeover it could read (corrupt).
type viewEntry struct {
	rev     uint64
	head    *model.Record
	corrupt bool
}

func (e viewEntry) takenOver(now int64) bool { return e.head != nil && e.head.Takeover.TakenOver(now) }

// headOf returns the part of a record that deciding and recording read:
// identity, generation, unread and takeover, without the list metadata.
func headOf(r *model.Record) *model.Record {
	return &model.Record{V: r.V, Gen: r.Gen, SessionKey: r.SessionKey, Type: r.Type, TargetID: r.TargetID,
		BotUUID: r.BotUUID, Adapter: r.Adapter, Legacy: r.Legacy, Unread: r.Unread, Takeover: r.Takeover}
}

// sessionView is the in-process view of every session's takeover state,
// fed by an ordered consumer on the bucket's stream (spec §3.2 "The view").
// Entries are keyed by the full key <scope>.session.<sid>.
type sessionView struct {
	nc     *nats.Conn
	prefix string // "$KV.<bucket>."

	mu      sync.RWMutex
	entries map[string]viewEntry
	pending map[string]int64 // trigger takeovers decided but not yet stored: key -> expires_at
	removed map[string]bool  // tombstoned scopes

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

func newSessionView(nc *nats.Conn, bucket string) *sessionView {
	return &sessionView{
		nc: nc, prefix: bus.KVSubject(bucket, ""),
		entries: make(map[string]viewEntry),
		pending: make(map[string]int64),
		removed: make(map[string]bool),
	}
}

// start creates the ordered consumer and begins consuming.
func (v *sessionView) start(ctx context.Context, js jetstream.JetStream, bucket string) error {
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

// stop ends consumption; the view is stale from then on.
func (v *sessionView) stop() {
	v.stopped.Store(true)
	if v.cc != nil {
		v.cc.Stop()
	}
	if v.status != nil {
		v.nc.RemoveStatusListener(v.status) // ends the status goroutine
	}
}

// live reports whether decisions may come from the view alone.
func (v *sessionView) live() bool {
	if !v.initialized.Load() || v.stopped.Load() || !v.connected.Load() {
		return false
	}
	last := v.lastErr.Load()
	return last == 0 || time.Since(time.Unix(0, last)) > viewStaleAfter
}

func (v *sessionView) handle(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		return
	}
	key := strings.TrimPrefix(m.Subject(), v.prefix)
	op := m.Headers().Get("KV-Operation")
	if op == "DEL" || op == "PURGE" {
		v.remove(key, meta.Sequence.Stream)
	} else {
		e := viewEntry{rev: meta.Sequence.Stream}
		if r, err := model.DecodeRecord(m.Data()); err == nil {
			e.head = headOf(r)
		} else {
			// a record broken elsewhere still blocks by its takeover, if
			// that part reads (an unreadable one holds none)
			var t struct {
				Takeover model.TakeoverState `json:"takeover"`
			}
			_ = json.Unmarshal(m.Data(), &t)
			e.head, e.corrupt = &model.Record{Takeover: t.Takeover}, true
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
func (v *sessionView) apply(key string, e viewEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.removed[scopeOfKey(key)] {
		return
	}
	if cur, ok := v.entries[key]; ok && cur.rev >= e.rev {
		return
	}
	v.entries[key] = e
}

func (v *sessionView) remove(key string, rev uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if cur, ok := v.entries[key]; ok && cur.rev >= rev {
		return
	}
	// keep the revision so an older update cannot revive the entry
	v.entries[key] = viewEntry{rev: rev}
}

// applyRecord applies a record this replica just wrote at rev.
func (v *sessionView) applyRecord(sc binding.Scope, sid string, r *model.Record, rev uint64) {
	if r == nil || rev == 0 {
		return
	}
	v.apply(sessionKey(sc, sid), viewEntry{rev: rev, head: headOf(r)})
}

// dropScope forgets every entry of a tombstoned scope and ignores its later
// updates (the uninstall purge writes no per-key markers).
func (v *sessionView) dropScope(sc binding.Scope) {
	prefix := sc.String() + "."
	v.mu.Lock()
	defer v.mu.Unlock()
	v.removed[sc.String()] = true
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

func (v *sessionView) lookup(key string) (viewEntry, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	e, ok := v.entries[key]
	return e, ok
}

func (v *sessionView) pendingTakenOver(key string, now int64) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	exp, ok := v.pending[key]
	return ok && now < exp
}

func (v *sessionView) addPending(key string, expiresAt int64) {
	v.mu.Lock()
	v.pending[key] = expiresAt
	v.mu.Unlock()
}

// settlePending drops a pending entry once its write settled (the stored
// revision, applied separately, replaces it).
func (v *sessionView) settlePending(key string) {
	v.mu.Lock()
	delete(v.pending, key)
	v.mu.Unlock()
}

// activeCount counts the sessions taken over at now.
func (v *sessionView) activeCount(now int64) int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	n := 0
	for _, e := range v.entries {
		if e.takenOver(now) {
			n++
		}
	}
	return n
}
