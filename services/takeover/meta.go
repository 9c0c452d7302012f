package takeover

import (
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// metaInterval is the least time between two coalesced metadata writes of
// one session on one replica (spec §3.3 step 3).
const metaInterval = 500 * time.Millisecond

// metaDelta is the metadata change of recorded messages, merged until it
// is written.
type metaDelta struct {
	members    []model.Member
	name       string
	adapter    string
	lastMsgAt  int64
	preview    model.Preview
	historyInc int
	updatedAt  int64
}

func (d *metaDelta) merge(o metaDelta) {
	d.members = append(d.members, o.members...)
	if o.name != "" {
		d.name = o.name
	}
	if o.adapter != "" {
		d.adapter = o.adapter
	}
	if o.lastMsgAt >= d.lastMsgAt {
		d.lastMsgAt, d.preview = o.lastMsgAt, o.preview
	}
	d.historyInc += o.historyInc
	d.updatedAt = max(d.updatedAt, o.updatedAt)
}

// apply is an idempotent-enough function of the record: set and max for
// the fields, plus the count hint.
func (d *metaDelta) apply(r *model.Record) {
	for _, m := range d.members {
		r.AddMember(m.ID, m.Name, m.At)
	}
	if d.name != "" {
		r.Name = model.CutRunes(d.name, model.MaxNameRunes)
	}
	if r.Adapter == "" && d.adapter != "" {
		r.Adapter = d.adapter
	}
	if d.lastMsgAt >= r.LastMsgAt {
		r.LastMsgAt, r.LastPreview = d.lastMsgAt, d.preview
	}
	r.HistoryCount += d.historyInc
	r.UpdatedAt = max(r.UpdatedAt, d.updatedAt)
}

// pendingMeta is one session's unwritten delta.
type pendingMeta struct {
	sc    binding.Scope
	sid   string
	bot   string
	set   model.Settings
	delta metaDelta
	due   time.Time
}

// metaWriter coalesces metadata deltas: at most one CAS per session per
// metaInterval per replica, and at most rate CAS per second in all. A
// goroutine it owns writes due deltas, the longest due first.
type metaWriter struct {
	s       *Service
	mu      sync.Mutex
	pending map[string]*pendingMeta
	last    map[string]time.Time // last write per session key
	stopc   chan struct{}
	wg      sync.WaitGroup
	sem     chan struct{}

	// a token bucket of writes, filled at rate per second up to burst;
	// used only by the loop goroutine
	rate, burst, tokens float64
	filled              time.Time
}

func newMetaWriter(s *Service, rate int) *metaWriter {
	r := float64(max(rate, 1))
	return &metaWriter{s: s, pending: map[string]*pendingMeta{}, last: map[string]time.Time{},
		stopc: make(chan struct{}), sem: make(chan struct{}, 32),
		rate: r, burst: max(r/10, 1), tokens: max(r/10, 1), filled: time.Now()}
}

func (w *metaWriter) start() {
	w.wg.Add(1)
	go w.loop()
}

// stop writes what is pending and waits.
func (w *metaWriter) stop() {
	close(w.stopc)
	w.wg.Wait()
}

// add queues a delta for a session.
func (w *metaWriter) add(sc binding.Scope, sid, bot string, set model.Settings, d metaDelta) {
	key := sessionKey(sc, sid)
	w.mu.Lock()
	p, ok := w.pending[key]
	if !ok {
		due := time.Now()
		if last, ok := w.last[key]; ok && due.Before(last.Add(metaInterval)) {
			due = last.Add(metaInterval)
		}
		p = &pendingMeta{sc: sc, sid: sid, bot: bot, set: set, due: due}
		w.pending[key] = p
	}
	p.delta.merge(d)
	p.set = set
	w.mu.Unlock()
}

func (w *metaWriter) loop() {
	defer w.wg.Done()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-w.stopc:
			w.flush(true)
			// wait for writes in flight
			for range cap(w.sem) {
				w.sem <- struct{}{}
			}
			return
		case <-t.C:
		}
		w.flush(false)
	}
}

// flush starts the writes of due deltas, as many as the budget allows,
// the longest due first (all of them with force).
func (w *metaWriter) flush(force bool) {
	now := time.Now()
	w.tokens = min(w.tokens+now.Sub(w.filled).Seconds()*w.rate, w.burst)
	w.filled = now
	w.mu.Lock()
	var due []*pendingMeta
	for _, p := range w.pending {
		if force || !now.Before(p.due) {
			due = append(due, p)
		}
	}
	if n := int(w.tokens); !force && len(due) > n {
		slices.SortFunc(due, func(a, b *pendingMeta) int { return a.due.Compare(b.due) })
		due = due[:n]
	}
	if !force {
		w.tokens -= float64(len(due))
	}
	for _, p := range due {
		key := sessionKey(p.sc, p.sid)
		delete(w.pending, key)
		w.last[key] = now
	}
	if len(w.last) > 100000 {
		clear(w.last)
	}
	w.s.metrics.metaPending.Set(float64(len(w.pending)))
	w.mu.Unlock()
	for _, p := range due {
		w.sem <- struct{}{}
		go func() {
			defer func() { <-w.sem }()
			w.write(p)
		}()
	}
}

func (w *metaWriter) write(p *pendingMeta) {
	s := w.s
	ctx, cancel := context.WithTimeout(s.runCtx, 30*time.Second)
	defer cancel()
	unlock := s.lockSession(p.sc, p.sid)
	rec, rev, err := s.st.updateRecord(ctx, p.sc, p.sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil || model.IsLegacy(cur) || cur.BotUUID != p.bot {
			return nil, errNoChange // deleted meanwhile, or not this bot's
		}
		r := cur.Clone()
		p.delta.apply(r)
		return r, nil
	})
	unlock()
	if err != nil {
		s.metrics.recordDropped.WithLabelValues("metadata").Inc()
		s.log.WarnContext(ctx, "session metadata not written", "scope", p.sc.String(), "sid", p.sid, "err", err)
		return
	}
	if rec == nil {
		return
	}
	s.view.applyRecord(p.sc, p.sid, rec, rev)
	s.maybeTrim(p.sc, p.sid, rec, p.set)
}

// sessionLocks serialise one replica's CAS writes per session, so that
// concurrent recordings of a busy session do not exhaust each other's
// compare-and-set retries; other replicas still race by CAS.
type sessionLocks struct {
	seed  maphash.Seed
	locks [256]sync.Mutex
}

func (s *Service) lockSession(sc binding.Scope, sid string) func() {
	l := &s.locks.locks[maphash.String(s.locks.seed, sc.String()+sid)%uint64(len(s.locks.locks))]
	l.Lock()
	return l.Unlock
}
