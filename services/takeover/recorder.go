package takeover

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// recordJob is the recording of one event, done after the decision.
type recordJob struct {
	sc    binding.Scope
	b     binding.Binding
	set   model.Settings
	event string
	invID string

	bot, ltype, lid, sid, key string
	sessionName               string
	senderID, senderName      string

	chain  model.Chain
	ai     bool
	aiText string
	word   string
	hit    bool

	survey    int  // a waiting satisfaction question's answer (satisfaction.go)
	takenOver bool // the decision's view of the session
	now       int64
	span      trace.SpanContext
	done      chan struct{} // closed once the reply may go: the entry is appended, or nothing will be
	once      sync.Once
}

// release lets the event's reply go.
func (j *recordJob) release() { j.once.Do(func() { close(j.done) }) }

// recorder is the bounded recording pool of a replica (spec §3.3). A
// session's recordings wait in a queue of their own and are written one at
// a time, in the order their events arrived, even when one of them
// outlives the reply budget (a new session's first write). Workers take
// sessions, not recordings, from one shared line: a worker writes the
// first recording of the session at the head and puts the session back at
// the tail if more wait. So a recording waits only for its own session's
// earlier ones and for a free worker, never behind another session's slow
// write (with a queue per worker, a trigger's CAS and append held up every
// session hashed to the same worker). The bound holds over all sessions
// together, and one installation may have at most half of it waiting, so
// its flood cannot refuse another installation's recordings.
type recorder struct {
	write   func(*recordJob)         // writes one recording
	drop    func(*recordJob, string) // accounts a recording not queued, with the reason
	workers int
	limit   int64        // recordings waiting at most, over all sessions
	queued  atomic.Int64 // recordings waiting now
	// scopeLimit bounds the recordings one installation has waiting
	scopeLimit int
	wg         sync.WaitGroup
	pending    sync.WaitGroup // recordings accepted and not yet written

	// line holds each session with waiting recordings once; it has room
	// for limit sessions, so a send never blocks
	line chan *sessionQueue

	mu       sync.Mutex
	sessions map[string]*sessionQueue // by session key, while it has recordings
	scopes   map[binding.Scope]int    // recordings waiting by installation, while it has some
	started  bool
	stopped  bool
}

// sessionQueue is one session's recordings, the first being written or
// next in line.
type sessionQueue struct {
	key  string
	jobs []*recordJob
}

// maxSessionQueue bounds the recordings one session can have waiting.
const maxSessionQueue = 256

// newRecorder returns a recorder of workers workers and at most queue
// waiting recordings, which writes with write and reports the recordings
// it cannot queue to drop.
func newRecorder(write func(*recordJob), drop func(*recordJob, string), workers, queue int) *recorder {
	workers, queue = max(workers, 1), max(queue, 1)
	return &recorder{write: write, drop: drop, workers: workers, limit: int64(queue), scopeLimit: max(queue/2, 1),
		line: make(chan *sessionQueue, queue), sessions: map[string]*sessionQueue{}, scopes: map[binding.Scope]int{}}
}

func (r *recorder) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started = true
	for range r.workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for q := range r.line {
				r.next(q)
			}
		}()
	}
}

// next writes the recording at the head of a session's queue, then puts
// the session back in line if more wait.
func (r *recorder) next(q *sessionQueue) {
	r.mu.Lock()
	j := q.jobs[0]
	if r.scopes[j.sc] <= 1 {
		delete(r.scopes, j.sc)
	} else {
		r.scopes[j.sc]--
	}
	r.mu.Unlock()
	r.queued.Add(-1)
	r.write(j)
	j.release()
	r.mu.Lock()
	q.jobs[0] = nil
	q.jobs = q.jobs[1:]
	if len(q.jobs) == 0 {
		delete(r.sessions, q.key)
	} else {
		r.line <- q
	}
	r.mu.Unlock()
	r.pending.Done()
}

// stop lets queued recordings finish and waits for the workers.
func (r *recorder) stop() {
	r.mu.Lock()
	started := r.started && !r.stopped
	r.stopped = true
	r.mu.Unlock()
	if !started {
		return
	}
	r.pending.Wait()
	close(r.line)
	r.wg.Wait()
}

// submitAndWait queues a recording and waits for it up to budget. A full
// queue drops the recording (never the decision).
func (r *recorder) submitAndWait(ctx context.Context, j *recordJob, budget time.Duration) {
	if reason := r.submit(j); reason != "" {
		r.drop(j, reason)
		return
	}
	t := time.NewTimer(budget)
	defer t.Stop()
	select {
	case <-j.done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// submit queues a recording, or says why it cannot.
func (r *recorder) submit(j *recordJob) (reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return "stopped"
	}
	q := r.sessions[j.key]
	if r.queued.Load() >= r.limit || (q != nil && len(q.jobs) >= maxSessionQueue) {
		return "queue_full"
	}
	if r.scopes[j.sc] >= r.scopeLimit {
		return "installation_full"
	}
	r.scopes[j.sc]++
	r.queued.Add(1)
	r.pending.Add(1)
	if q != nil {
		q.jobs = append(q.jobs, j)
		return ""
	}
	q = &sessionQueue{key: j.key, jobs: []*recordJob{j}}
	r.sessions[j.key] = q
	r.line <- q
	return ""
}

// dropRecording accounts a recording the pool did not queue.
func (rc *recording) dropRecording(j *recordJob, reason string) {
	rc.metrics.recordDropped.WithLabelValues(reason).Inc()
	rc.view.SettlePending(j.key)
}

// errIdentity refuses a recording into a session of another bot or
// adapter, or into a legacy session.
var errIdentity = errors.New("takeover: session identity mismatch")

// record does the recording of one event (spec §3.3 steps 1-4): it reads
// the head, decides whether the event is kept, and then either appends
// before a coalesced metadata update (an existing session, no trigger) or
// writes the record by CAS first (a new session or a trigger).
func (rc *recording) record(j *recordJob) {
	ctx, cancel := context.WithTimeout(trace.ContextWithRemoteSpanContext(rc.bg.Context(), j.span), 30*time.Second)
	defer cancel()
	defer rc.view.SettlePending(j.key)
	defer rc.settleSurvey(ctx, j)

	parts, truncated, atTargets := j.parts()
	bi := rc.bots.lookup(j.sc, j.b, j.bot)
	cur, err := rc.recordHead(ctx, j)
	if err != nil {
		rc.recordFailed(ctx, j, "storage", err)
		return
	}
	if cur != nil && (model.IsLegacy(cur) || model.IdentityConflict(cur, j.bot, bi.adapter)) {
		rc.refuseIdentity(ctx, j)
		return
	}
	keep := len(parts) > 0 && rc.recordKept(ctx, j, cur, bi, atTargets)
	if !keep && !j.hit {
		return
	}
	e := j.entry(truncated)
	// An existing session without a trigger appends first, so the reply
	// waits for one durable write; its metadata CAS follows. A new session
	// writes its record first (spec §5.5 rule 5), and a trigger's CAS
	// decides the takeover, so both CAS before appending.
	if keep && cur != nil && !j.hit {
		rc.recordAppendFirst(ctx, j, cur, bi, e, parts)
		return
	}
	rc.recordWriteFirst(ctx, j, bi, e, parts, keep)
}

// parts is the content the job records: the AI's text cut to the entry
// cap, or the user's message chain extracted (with the accounts it @s).
func (j *recordJob) parts() (parts []model.Part, truncated bool, atTargets []string) {
	if j.ai {
		text, cut := model.CutText(j.aiText, model.MaxTextBytes)
		return []model.Part{{Type: model.PartText, Text: text}}, cut, nil
	}
	c := j.chain.Extract()
	return c.Parts, c.Truncated, c.AtTargets
}

// recordKept applies the recording policy (record_groups) to the event.
func (rc *recording) recordKept(ctx context.Context, j *recordJob, cur *model.Record, bi botInfo, atTargets []string) bool {
	if j.set.RecordGroups == model.RecordAddressed && j.ltype == model.LauncherGroup && bi.accountID == "" {
		if _, seen := rc.unknownAccount.LoadOrStore(j.sc.String()+"|"+j.bot, true); !seen {
			rc.log.WarnContext(ctx, "record_groups=addressed: the bot's account id is unknown, so mentions cannot be matched", "scope", j.sc.String())
		}
	}
	facts := model.RecordFacts{
		Group:     j.ltype == model.LauncherGroup,
		Addressed: bi.accountID != "" && slices.Contains(atTargets, bi.accountID),
		Triggered: j.hit,
		TakenOver: j.takenOver || (cur != nil && cur.Takeover.TakenOver(j.now)),
		Unread:    cur != nil && cur.Unread,
	}
	if j.ai {
		return model.ShouldRecordAI(j.set.RecordGroups, facts)
	}
	return model.ShouldRecordUser(j.set.RecordGroups, facts)
}

// entry is the history entry of the job; its generation is set when the
// record it joins is known.
func (j *recordJob) entry(truncated bool) *model.Entry {
	role := model.RoleUser
	if j.ai {
		role = model.RoleAI
	}
	e := &model.Entry{V: 1, ID: model.EventEntryID(j.sc.String(), j.sid, j.invID, j.event), TS: j.now, Role: role, Truncated: truncated}
	if !j.ai {
		e.SenderID, e.SenderName = j.senderID, j.senderName
	}
	return e
}

// metaDelta is the record metadata the job changes.
func (j *recordJob) metaDelta(bi botInfo, keep bool, parts []model.Part) store.MetaDelta {
	delta := store.MetaDelta{Adapter: bi.adapter, UpdatedAt: j.now}
	if !j.ai && j.sessionName != "" {
		delta.Name = j.sessionName
	}
	if keep {
		if j.ltype == model.LauncherGroup && !j.ai && j.senderID != "" {
			delta.Members = []model.Member{{ID: j.senderID, Name: j.senderName, At: j.now}}
		}
		delta.LastMsgAt, delta.Preview, delta.HistoryInc = j.now, model.PreviewOf(parts), 1
	}
	return delta
}

// recordAppendFirst appends to an existing session, releases the reply, and
// hands the metadata to the coalescer (spec §3.3 step 3).
func (rc *recording) recordAppendFirst(ctx context.Context, j *recordJob, cur *model.Record, bi botInfo, e *model.Entry, parts []model.Part) {
	e.Gen = cur.Gen
	if err := storeEntry(ctx, rc.st, j.sc, j.sid, e, parts); err != nil {
		rc.recordFailed(ctx, j, "append", err)
		return
	}
	j.release()
	rc.notices.publishLive(j.sc, model.Live{Type: model.LiveMessage, SID: j.sid, Data: map[string]any{"sid": j.sid, "gen": e.Gen, "entry": e}})
	rc.meta.Add(j.sc, j.sid, j.bot, j.set, j.metaDelta(bi, true, parts))
	if j.takenOver {
		rc.notices.relayUser(ctx, j.sc, j.b, j.set, j.sid, e, parts)
	}
}

// recordCAS writes the job's record change by CAS under the session lock:
// a new record, or the metadata, trigger mark and (auto_takeover_on_trigger)
// takeover on the current one. It returns the takeover transition.
func (rc *recording) recordCAS(ctx context.Context, j *recordJob, bi botInfo, delta store.MetaDelta) (*model.Record, uint64, model.Transition, error) {
	auto := j.hit && j.set.AutoTakeoverOnTrigger
	var tr model.Transition
	unlock, err := rc.locks.Lock(ctx, store.SessionKey(j.sc, j.sid))
	if err != nil {
		return nil, 0, model.Unchanged, err
	}
	defer unlock()
	rec, rev, err := rc.st.UpdateRecord(ctx, j.sc, j.sid, func(cur *model.Record) (*model.Record, error) {
		tr = model.Unchanged
		var r *model.Record
		if cur == nil {
			r = model.NewRecord(j.bot, j.ltype, j.lid, j.sessionName, j.now)
		} else {
			if model.IsLegacy(cur) || model.IdentityConflict(cur, j.bot, bi.adapter) {
				return nil, errIdentity
			}
			r = cur.Clone()
		}
		delta.Apply(r)
		if j.hit {
			r.Unread, r.TriggeredWord, r.TriggeredAt = true, j.word, j.now
			if auto {
				tr = r.Takeover.TakeOver(j.now, j.set.TimeoutMillis(), model.ViaTrigger, "")
			}
		}
		return r, nil
	})
	return rec, rev, tr, err
}

// recordWriteFirst writes the record by CAS, then the entry and the reply,
// then the trigger's alert and takeover, the live events and the trim.
func (rc *recording) recordWriteFirst(ctx context.Context, j *recordJob, bi botInfo, e *model.Entry, parts []model.Part, keep bool) {
	rec, rev, tr, err := rc.recordCAS(ctx, j, bi, j.metaDelta(bi, keep, parts))
	if errors.Is(err, errIdentity) {
		rc.refuseIdentity(ctx, j)
		return
	}
	if err != nil {
		rc.recordFailed(ctx, j, "storage", err)
		return
	}
	if rec == nil {
		return
	}
	rc.view.ApplyRecord(j.sc, j.sid, rec, rev)
	// The entry goes first and the reply with it; arming the expiry, the
	// live events and the notice follow, so a trigger's reply waits for
	// two durable writes, not four. The record already holds the deadline
	// every decision reads.
	var appendErr error
	if keep {
		e.Gen = rec.Gen
		appendErr = storeEntry(ctx, rc.st, j.sc, j.sid, e, parts)
	}
	j.release()
	ses := session{sc: j.sc, b: j.b, set: j.set, sid: j.sid, rec: rec}
	if j.hit {
		rc.notices.publishLive(j.sc, model.Live{Type: model.LiveTrigger, SID: j.sid, Data: map[string]any{"sid": j.sid, "name": rec.Name, "word": j.word, "at": j.now}})
		rc.notices.raiseAlert(ctx, ses, causeTrigger, j.senderName, rec.LastPreview.Text)
	}
	if tr == model.Started || tr == model.Extended {
		rc.notices.afterTakeover(ctx, ses, tr, false)
	}
	if !keep {
		rc.notices.publishLive(j.sc, model.Live{Type: model.LiveSession, SID: j.sid, Data: rc.notices.summary(ctx, j.sc, j.b, j.sid, rec)})
		return
	}
	if appendErr != nil {
		rc.recordFailed(ctx, j, "append", appendErr)
		return
	}
	rc.notices.publishLive(j.sc, model.Live{Type: model.LiveMessage, SID: j.sid, Data: map[string]any{"sid": j.sid, "gen": rec.Gen, "entry": e}})
	if j.takenOver {
		rc.notices.relayUser(ctx, j.sc, j.b, j.set, j.sid, e, parts)
	}
	rc.trims.MaybeTrim(j.sc, j.sid, rec, j.set)
}

// recordHead returns the head of a session's record for a recording (nil
// when there is none): from the view while it is live, so the hot path
// reads no storage, else by a read. Whatever it returns, a write that
// depends on the record (a new session, a trigger) re-reads it by CAS.
func (rc *recording) recordHead(ctx context.Context, j *recordJob) (*model.Record, error) {
	if rc.view.Live() {
		e, ok := rc.view.Lookup(j.key)
		if !ok {
			return nil, nil
		}
		if e.Head != nil && !e.Corrupt {
			return e.Head, nil
		}
		// deleted or unreadable: the read tells which
	}
	cur, _, err := rc.st.GetRecord(ctx, j.sc, j.sid)
	return cur, err
}

func (rc *recording) recordFailed(ctx context.Context, j *recordJob, reason string, err error) {
	rc.metrics.recordDropped.WithLabelValues(reason).Inc()
	rc.log.ErrorContext(ctx, "recording failed", "scope", j.sc.String(), "sid", j.sid, "event", j.event, "err", err)
}

func (rc *recording) refuseIdentity(ctx context.Context, j *recordJob) {
	rc.metrics.identityRefused.Inc()
	rc.log.ErrorContext(ctx, "recording refused: the session belongs to another bot or adapter", "scope", j.sc.String(), "sid", j.sid, "event", j.event)
}
