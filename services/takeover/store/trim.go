package store

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// MaybeTrim queues a trim of a session's history once it holds
// history_limit plus the slack (spec §5.3 rule 6).
func (t *Trimmer) MaybeTrim(sc binding.Scope, sid string, rec *model.Record, set model.Settings) {
	if rec.HistoryCount < set.HistoryLimit+set.HistorySlack() {
		return
	}
	t.queue(trimJob{sc: sc, sid: sid, limit: set.HistoryLimit, hint: rec.HistoryCount})
}

// trimJob is one session's trim.
type trimJob struct {
	sc          binding.Scope
	sid         string
	limit, hint int
}

// Trimmer runs the history trims of a replica off the recording path.
// Trims come in waves (sessions that grow in step cross their limit
// together), and a trim run by the recording worker would hold up every
// recording queued behind it on that worker. A session is queued once at a
// time; when the queue is full its trim is skipped, and its next recording
// queues it again, since its count stays over the limit.
type Trimmer struct {
	st      *Store
	view    *View
	results *prometheus.CounterVec // by result: ok, failed, skipped
	log     *slog.Logger
	workers bus.Background // the workers, cancelled by Stop
	jobs    chan trimJob
	mu      sync.Mutex
	pending map[string]bool // session keys queued or running
}

// trimWorkers run a replica's trims; trimQueue bounds those waiting.
const (
	trimWorkers = 4
	trimQueue   = 4096
)

// NewTrimmer returns a trimmer over st that keeps view current with the
// corrected counts and counts its results in results (label "result").
func NewTrimmer(st *Store, view *View, results *prometheus.CounterVec, log *slog.Logger) *Trimmer {
	return &Trimmer{st: st, view: view, results: results, log: log, jobs: make(chan trimJob, trimQueue), pending: map[string]bool{}}
}

// Start runs the workers until Stop (bus.Part); a trim running then is
// cancelled.
func (t *Trimmer) Start(parent context.Context) error {
	if err := t.workers.Start(parent); err != nil {
		return err
	}
	for range trimWorkers {
		_ = t.workers.Go(func(ctx context.Context) {
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-t.jobs:
					t.run(ctx, j)
				}
			}
		})
	}
	return nil
}

// Stop cancels the workers and waits for them (bus.Part).
func (t *Trimmer) Stop(ctx context.Context) error { return t.workers.Stop(ctx) }

func (t *Trimmer) queue(j trimJob) {
	key := SessionKey(j.sc, j.sid)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending[key] {
		return
	}
	select {
	case t.jobs <- j:
		t.pending[key] = true
	default:
		t.results.WithLabelValues("skipped").Inc()
	}
}

func (t *Trimmer) run(ctx context.Context, j trimJob) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := t.trim(ctx, j.sc, j.sid, j.limit, j.hint)
	t.mu.Lock()
	delete(t.pending, SessionKey(j.sc, j.sid))
	t.mu.Unlock()
	if err != nil {
		t.results.WithLabelValues("failed").Inc()
		t.log.WarnContext(ctx, "history trim failed", "scope", j.sc.String(), "sid", j.sid, "err", err)
		return
	}
	t.results.WithLabelValues("ok").Inc()
}

// errTrimRace stops a trim whose reads kept missing entries to drop.
var errTrimRace = errors.New("takeover: trim: the history grew faster than it was read")

// trim keeps the newest limit entries of a session: it reads the oldest
// ones (as many as the count hint says are over the limit, plus the first
// kept; one read gives them and the subject's length at one point), notes
// their blobs, purges the subject below the first kept sequence (never
// with keep, which would count racing appends), deletes the noted blobs
// and corrects the count hint.
func (t *Trimmer) trim(ctx context.Context, sc binding.Scope, sid string, limit, hint int) error {
	want := max(hint-limit, 0) + 1
	for range 3 {
		oldest, total, err := t.st.OldestEntries(ctx, sc, sid, want)
		if err != nil {
			return err
		}
		drop := max(total-limit, 0)
		if drop > 0 && len(oldest) <= drop {
			want = drop + 1 // the hint was low: read again, further
			continue
		}
		if drop > 0 {
			var blobs []string
			for _, e := range oldest[:drop] {
				blobs = append(blobs, e.Blobs()...)
			}
			if err := t.st.PurgeHistory(ctx, sc, sid, oldest[drop].Seq); err != nil {
				return err
			}
			if err := t.st.DeleteBlobs(ctx, sc, blobs); err != nil {
				return err
			}
		}
		return t.correctCount(ctx, sc, sid, drop, total-drop)
	}
	return errTrimRace
}

// correctCount sets a session's count hint after a trim that dropped drop
// entries and kept kept of them.
func (t *Trimmer) correctCount(ctx context.Context, sc binding.Scope, sid string, drop, kept int) error {
	rec, rev, err := t.st.UpdateRecord(ctx, sc, sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil {
			return nil, ErrNoChange
		}
		r := cur.Clone()
		// appends that raced the read are counted on top of what was kept
		r.HistoryCount = max(r.HistoryCount-drop, kept)
		if r.HistoryCount == cur.HistoryCount {
			return nil, ErrNoChange
		}
		return r, nil
	})
	if err == nil {
		t.view.ApplyRecord(sc, sid, rec, rev)
	}
	return err
}
