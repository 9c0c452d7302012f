package store

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// metaInterval is the least time between two coalesced metadata writes of
// one session on one replica (spec §3.3 step 3).
const metaInterval = 500 * time.Millisecond

// MetaDelta is the metadata change of recorded messages, merged until it
// is written.
type MetaDelta struct {
	Members    []model.Member
	Name       string
	Adapter    string
	LastMsgAt  int64
	Preview    model.Preview
	HistoryInc int
	UpdatedAt  int64
}

func (d *MetaDelta) merge(o MetaDelta) {
	d.Members = append(d.Members, o.Members...)
	if o.Name != "" {
		d.Name = o.Name
	}
	if o.Adapter != "" {
		d.Adapter = o.Adapter
	}
	if o.LastMsgAt >= d.LastMsgAt {
		d.LastMsgAt, d.Preview = o.LastMsgAt, o.Preview
	}
	d.HistoryInc += o.HistoryInc
	d.UpdatedAt = max(d.UpdatedAt, o.UpdatedAt)
}

// Apply is an idempotent-enough function of the record: set and max for
// the fields, plus the count hint.
func (d *MetaDelta) Apply(r *model.Record) {
	for _, m := range d.Members {
		r.AddMember(m.ID, m.Name, m.At)
	}
	if d.Name != "" {
		r.Name = settings.CutRunes(d.Name, model.MaxNameRunes)
	}
	if r.Adapter == "" && d.Adapter != "" {
		r.Adapter = d.Adapter
	}
	if d.LastMsgAt >= r.LastMsgAt {
		r.LastMsgAt, r.LastPreview = d.LastMsgAt, d.Preview
	}
	r.HistoryCount += d.HistoryInc
	r.UpdatedAt = max(r.UpdatedAt, d.UpdatedAt)
}

// pendingMeta is one session's unwritten delta.
type pendingMeta struct {
	sc    binding.Scope
	sid   string
	bot   string
	set   model.Settings
	delta MetaDelta
	due   time.Time
}

// MetaWriter coalesces metadata deltas: at most one CAS per session per
// metaInterval per replica, and at most rate CAS per second in all. A
// goroutine it owns writes due deltas, the longest due first.
type MetaWriter struct {
	st      *Store
	view    *View
	locks   *bus.KeyLocks[string]
	trims   *Trimmer
	gauge   prometheus.Gauge       // sessions waiting
	dropped *prometheus.CounterVec // by reason; "metadata" counts failed writes
	log     *slog.Logger
	ctx     context.Context // set by Start
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

// MetaConfig is what a MetaWriter writes with.
type MetaConfig struct {
	Store *Store
	// View is kept current with the records written.
	View *View
	// Locks serialise one replica's CAS writes per session (keyed by the
	// record's SessionKey): these writes with the recordings' record
	// changes, so that concurrent writers of a busy session do not exhaust
	// each other's compare-and-set retries; other replicas still race by
	// CAS.
	Locks *bus.KeyLocks[string]
	// Trims is where the writes queue the trims they make due.
	Trims *Trimmer
	// Rate is the most writes a second (at least 1).
	Rate int
	// Pending reports the sessions waiting.
	Pending prometheus.Gauge
	// Dropped counts failed writes (label "reason", value "metadata").
	Dropped *prometheus.CounterVec
	Log     *slog.Logger
}

// NewMetaWriter returns a writer of coalesced list metadata.
func NewMetaWriter(c MetaConfig) *MetaWriter {
	r := float64(max(c.Rate, 1))
	return &MetaWriter{st: c.Store, view: c.View, locks: c.Locks, trims: c.Trims, gauge: c.Pending, dropped: c.Dropped, log: c.Log, pending: map[string]*pendingMeta{}, last: map[string]time.Time{},
		stopc: make(chan struct{}), sem: make(chan struct{}, 32),
		rate: r, burst: max(r/10, 1), tokens: max(r/10, 1), filled: time.Now()}
}

// Start runs the writer (bus.Part); ctx bounds its writes (each for 30 s
// at most).
func (w *MetaWriter) Start(ctx context.Context) error {
	w.ctx = ctx
	w.wg.Add(1)
	go w.loop()
	return nil
}

// Stop writes what is pending and waits (bus.Part); the writes end early
// when Start's context does.
func (w *MetaWriter) Stop(context.Context) error {
	close(w.stopc)
	w.wg.Wait()
	return nil
}

// Add queues a delta for a session.
func (w *MetaWriter) Add(sc binding.Scope, sid, bot string, set model.Settings, d MetaDelta) {
	key := SessionKey(sc, sid)
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

func (w *MetaWriter) loop() {
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
func (w *MetaWriter) flush(force bool) {
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
		key := SessionKey(p.sc, p.sid)
		delete(w.pending, key)
		w.last[key] = now
	}
	if len(w.last) > 100000 {
		clear(w.last)
	}
	w.gauge.Set(float64(len(w.pending)))
	w.mu.Unlock()
	for _, p := range due {
		w.sem <- struct{}{}
		go func() {
			defer func() { <-w.sem }()
			w.write(p)
		}()
	}
}

func (w *MetaWriter) write(p *pendingMeta) {
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	defer cancel()
	var rec *model.Record
	var rev uint64
	unlock, err := w.locks.Lock(ctx, SessionKey(p.sc, p.sid))
	if err == nil {
		rec, rev, err = w.st.UpdateRecord(ctx, p.sc, p.sid, func(cur *model.Record) (*model.Record, error) {
			if cur == nil || model.IsLegacy(cur) || cur.BotUUID != p.bot {
				return nil, ErrNoChange // deleted meanwhile, or not this bot's
			}
			r := cur.Clone()
			p.delta.Apply(r)
			return r, nil
		})
		unlock()
	}
	if err != nil {
		w.dropped.WithLabelValues("metadata").Inc()
		w.log.WarnContext(ctx, "session metadata not written", "scope", p.sc.String(), "sid", p.sid, "err", err)
		return
	}
	if rec == nil {
		return
	}
	w.view.ApplyRecord(p.sc, p.sid, rec, rev)
	w.trims.MaybeTrim(p.sc, p.sid, rec, p.set)
}
