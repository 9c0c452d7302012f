package takeover

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// visible returns the entries the console may see (spec §5.3 rule 5): the
// record's gen only, the newest limit of them, oldest first.
func visible(entries []storedEntry, gen string, limit int) []model.Entry {
	out := make([]model.Entry, 0, min(len(entries), limit))
	for _, e := range entries {
		if !e.corrupt && e.Gen == gen {
			out = append(out, e.Entry)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// maybeTrim queues a trim of a session's history once it holds
// history_limit plus the slack (spec §5.3 rule 6).
func (s *Service) maybeTrim(sc binding.Scope, sid string, rec *model.Record, set model.Settings) {
	if rec.HistoryCount < set.HistoryLimit+set.HistorySlack() {
		return
	}
	s.trims.queue(trimJob{sc: sc, sid: sid, limit: set.HistoryLimit, hint: rec.HistoryCount})
}

// trimJob is one session's trim.
type trimJob struct {
	sc          binding.Scope
	sid         string
	limit, hint int
}

// trimmer runs the history trims of a replica off the recording path.
// Trims come in waves (sessions that grow in step cross their limit
// together), and a trim run by the recording worker would hold up every
// recording queued behind it on that worker. A session is queued once at a
// time; when the queue is full its trim is skipped, and its next recording
// queues it again, since its count stays over the limit.
type trimmer struct {
	s       *Service
	jobs    chan trimJob
	mu      sync.Mutex
	pending map[string]bool // session keys queued or running
}

// trimWorkers run a replica's trims; trimQueue bounds those waiting.
const (
	trimWorkers = 4
	trimQueue   = 4096
)

func newTrimmer(s *Service) *trimmer {
	return &trimmer{s: s, jobs: make(chan trimJob, trimQueue), pending: map[string]bool{}}
}

// start runs the workers until the service's run context ends.
func (t *trimmer) start() {
	for range trimWorkers {
		t.s.wg.Add(1)
		go func() {
			defer t.s.wg.Done()
			for {
				select {
				case <-t.s.runCtx.Done():
					return
				case j := <-t.jobs:
					t.run(j)
				}
			}
		}()
	}
}

func (t *trimmer) queue(j trimJob) {
	key := sessionKey(j.sc, j.sid)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending[key] {
		return
	}
	select {
	case t.jobs <- j:
		t.pending[key] = true
	default:
		t.s.metrics.trims.WithLabelValues("skipped").Inc()
	}
}

func (t *trimmer) run(j trimJob) {
	s := t.s
	ctx, cancel := context.WithTimeout(s.runCtx, 30*time.Second)
	defer cancel()
	err := s.trim(ctx, j.sc, j.sid, j.limit, j.hint)
	t.mu.Lock()
	delete(t.pending, sessionKey(j.sc, j.sid))
	t.mu.Unlock()
	if err != nil {
		s.metrics.trims.WithLabelValues("failed").Inc()
		s.log.WarnContext(ctx, "history trim failed", "scope", j.sc.String(), "sid", j.sid, "err", err)
		return
	}
	s.metrics.trims.WithLabelValues("ok").Inc()
}

// errTrimRace stops a trim whose reads kept missing entries to drop.
var errTrimRace = errors.New("takeover: trim: the history grew faster than it was read")

// trim keeps the newest limit entries of a session: it reads the oldest
// ones (as many as the count hint says are over the limit, plus the first
// kept; one read gives them and the subject's length at one point), notes
// their blobs, purges the subject below the first kept sequence (never
// with keep, which would count racing appends), deletes the noted blobs
// and corrects the count hint.
func (s *Service) trim(ctx context.Context, sc binding.Scope, sid string, limit, hint int) error {
	want := max(hint-limit, 0) + 1
	for range 3 {
		oldest, total, err := s.st.oldestEntries(ctx, sc, sid, want)
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
			if err := s.st.purgeHistory(ctx, sc, sid, oldest[drop].Seq); err != nil {
				return err
			}
			if err := s.st.deleteBlobs(ctx, sc, blobs); err != nil {
				return err
			}
		}
		return s.correctCount(ctx, sc, sid, drop, total-drop)
	}
	return errTrimRace
}

// correctCount sets a session's count hint after a trim that dropped drop
// entries and kept kept of them.
func (s *Service) correctCount(ctx context.Context, sc binding.Scope, sid string, drop, kept int) error {
	rec, rev, err := s.st.updateRecord(ctx, sc, sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil {
			return nil, errNoChange
		}
		r := cur.Clone()
		// appends that raced the read are counted on top of what was kept
		r.HistoryCount = max(r.HistoryCount-drop, kept)
		if r.HistoryCount == cur.HistoryCount {
			return nil, errNoChange
		}
		return r, nil
	})
	if err == nil {
		s.view.applyRecord(sc, sid, rec, rev)
	}
	return err
}
