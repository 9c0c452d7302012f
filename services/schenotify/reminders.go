package schenotify

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// reminders is the part that owns the stored reminders: the records
// (<scope>.reminder.<id>) and the scope indexes (<scope>.index), the
// chats' last deliveries and refusal marks, and each reminder's schedule.
// Adds, deletes and changes (change.go), the resume of an attach and the
// recovery sweep (lifecycle.go) are its methods; delivery calls it for
// every read and write. Its background work is the recovery sweep.
type reminders struct {
	// runner gives the storage handles, which exist once it started:
	// the bucket, JetStream and the stream, and the authority view the
	// sweep walks. Set by New after the runner is built.
	runner  *bus.Runner
	records *bus.Records[Record] // <scope>.reminder.<id>, built at Start
	indexes *bus.Records[Index]  // <scope>.index, built at Start
	// locks lets the updates of one installation's index take turns
	// (updateIndex)
	locks bus.KeyLocks[binding.Scope]
	subj  wire.Subjects
	// writes counts the JetStream writes the service asked for (KV writes,
	// schedule publishes, purges), for the benchmark's writes per delivery.
	writes atomic.Int64

	lead       time.Duration  // schedules fire this far ahead (arm)
	zone       *time.Location // the default zone
	minEvery   time.Duration  // the shortest @every (snooze plans)
	sweepEvery time.Duration
	sweepDelay time.Duration
	sweeper    bus.Part // the recovery sweep's loop
	// calendarEnd is Config.calendarEnd: 0 in production (ruleOf).
	calendarEnd int
	now         func() time.Time
	log         *slog.Logger
	metrics     *metrics
}

func newReminders(cfg Config, deps bus.Deps, zone *time.Location, lead time.Duration, m *metrics) *reminders {
	rm := &reminders{subj: deps.Subjects, lead: lead, zone: zone, minEvery: cfg.MinEvery,
		sweepEvery: cfg.SweepInterval, sweepDelay: cfg.SweepDelay, calendarEnd: cfg.calendarEnd, now: deps.Clock, log: deps.Logger, metrics: m}
	rm.sweeper = bus.Loop(rm.sweepLoop)
	return rm
}

// Start binds the stores to the runner's bucket, which exists by now, and
// starts the recovery sweep.
func (rm *reminders) Start(ctx context.Context) error {
	rm.records = bus.NewRecords(rm.runner.KV(), keyReminder, bus.RecordsConfig[Record]{})
	rm.indexes = bus.NewRecords(rm.runner.KV(), keyIndex, bus.RecordsConfig[Index]{Decode: decodeIndex})
	return rm.sweeper.Start(ctx)
}

// Stop stops the recovery sweep.
func (rm *reminders) Stop(ctx context.Context) error { return rm.sweeper.Stop(ctx) }

// sweepLoop runs the recovery sweep after a random delay and then every
// sweepEvery, until ctx is done.
func (rm *reminders) sweepLoop(ctx context.Context) {
	delay := time.Duration(0)
	if rm.sweepDelay > 0 {
		delay = time.Duration(rand.Int64N(int64(rm.sweepDelay) + 1))
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rm.sweep(ctx)
		t.Reset(rm.sweepEvery)
	}
}

// addRequest is a validated reminder to create.
type addRequest struct {
	scope    binding.Scope
	invID    string
	settings Settings
	session  session
	sender   string
	plan     when.Plan
	via      string
	mentions []string // member ids to mention, within the caps
	kind     string   // kindText or kindAI (plan.Message is then the prompt)
}

// add creates and arms a reminder (spec 3.3 success, 6.1): the index entry
// first by compare-and-set (which keeps the caps exact), then the record,
// then its @at schedule. A retried invocation finds its own record and
// gets its id back without a second reminder. It returns a *Failure for
// too_many / too_many_in_session, errStore-wrapped errors otherwise.
func (rm *reminders) add(ctx context.Context, req addRequest) (string, error) {
	sc := req.scope
	id := DerivedID(sc.String(), req.invID)
	existing, _, err := rm.loadRecord(ctx, sc, id)
	if err != nil {
		return "", err
	}
	if existing != nil {
		if existing.InvocationID == req.invID {
			return rm.ownRetry(ctx, sc, existing)
		}
		id = RandomID()
	}
	now := rm.now().UTC().Truncate(time.Second)
	token := req.session.Token()
	addEntry := func(dropOrphans map[string]bool) func(ix *Index) error {
		return func(ix *Index) error {
			if _, ok := ix.Entries[id]; ok {
				return bus.ErrNoChange // our own entry, from an earlier attempt
			}
			if dropOrphans != nil {
				for eid, e := range ix.Entries {
					if !dropOrphans[eid] && now.Sub(e.CreatedAt) > orphanGrace {
						delete(ix.Entries, eid)
					}
				}
			}
			if ix.Count("") >= req.settings.MaxReminders {
				return &capError{"too_many"}
			}
			if ix.Count(token) >= req.settings.MaxPerSession {
				return &capError{"too_many_in_session"}
			}
			ix.Entries[id] = indexEntry{Session: token, CreatedAt: now}
			return nil
		}
	}
	err = rm.updateIndex(ctx, sc, addEntry(nil))
	var ce *capError
	if errors.As(err, &ce) {
		// Finished reminders must not hold a cap: drop entries whose record
		// is gone, then check again.
		keys, kerr := rm.records.IDs(ctx, sc)
		if kerr != nil && !errors.Is(kerr, jetstream.ErrNoKeysFound) {
			return "", storeErr("list reminders", kerr)
		}
		live := map[string]bool{}
		for _, k := range keys {
			live[k] = true
		}
		err = rm.updateIndex(ctx, sc, addEntry(live))
	}
	if errors.As(err, &ce) {
		limit := req.settings.MaxReminders
		if ce.code == "too_many_in_session" {
			limit = req.settings.MaxPerSession
		}
		return "", fail(ce.code, "", map[string]string{"limit": strconv.Itoa(limit)})
	}
	if err != nil {
		return "", err
	}
	sender := req.sender
	if utf8.RuneCountInString(sender) > MaxMentionRunes {
		sender = "" // a stored name has a cap; an id that long is not mentioned
	}
	rec := &Record{
		V: 1, ID: id, Session: req.session, CreatorSenderID: sender, CreatedAt: now, CreatedVia: req.via,
		InvocationID: req.invID, Message: req.plan.Message, OriginalLength: req.plan.OriginalLength,
		Zone: req.settings.Zone.String(), NextDue: req.plan.First.UTC(), State: StateScheduled,
		Mentions: req.mentions, Kind: req.kind,
	}
	if req.plan.Rule != nil {
		r := req.plan.Rule.Recurrence
		rec.Recurrence = &r
		if !req.plan.Until.IsZero() {
			u := req.plan.Until.UTC()
			rec.Until = &u
		}
	}
	if _, err := rm.casRecord(ctx, sc, rec, 0); err != nil {
		if bus.IsCASConflict(err) {
			if cur, _, lerr := rm.loadRecord(ctx, sc, id); lerr == nil && cur != nil && cur.InvocationID == req.invID {
				return rm.ownRetry(ctx, sc, cur)
			}
		}
		_ = rm.dropIndexEntry(context.WithoutCancel(ctx), sc, id)
		return "", storeErr("create reminder", err)
	}
	if err := rm.arm(ctx, sc, id, rec.NextDue); err != nil {
		// Undo, so that the caller's retry starts clean.
		cctx := context.WithoutCancel(ctx)
		if _, rev, lerr := rm.loadRecord(cctx, sc, id); lerr == nil && rev != 0 {
			_ = rm.deleteRecord(cctx, sc, id, rev)
		}
		_ = rm.dropIndexEntry(cctx, sc, id)
		return "", err
	}
	kind := "once"
	if rec.Recurrence != nil {
		kind = rec.Recurrence.Kind
	}
	rm.metrics.created.WithLabelValues(kind).Inc()
	rm.log.InfoContext(ctx, "reminder created", "scope", sc.String(), "id", id, "kind", kind, "via", req.via)
	return id, nil
}

// ownRetry answers a retried invocation that finds its own reminder. An
// earlier attempt may have stored the record and then failed both to arm
// it and to undo it (JetStream unavailable), so a scheduled reminder is
// armed again; republishing replaces its schedule, and a second wake-up is
// settled by the record like any other.
func (rm *reminders) ownRetry(ctx context.Context, sc binding.Scope, r *Record) (string, error) {
	if r.State == StateScheduled {
		if err := rm.arm(ctx, sc, r.ID, r.NextDue); err != nil {
			return "", err
		}
	}
	return r.ID, nil
}

// remove deletes a reminder of the session (spec 4.3 delete steps): the
// record by compare-and-set, then both of its subjects, then its index
// entry. found is false when the reminder is gone or belongs to another
// session. inFlight reports an unexpired send claim at that moment.
func (rm *reminders) remove(ctx context.Context, sc binding.Scope, sess session, id string) (rec *Record, inFlight, found bool, err error) {
	for range 10 {
		r, rev, err := rm.loadRecord(ctx, sc, id)
		if err != nil {
			return nil, false, false, err
		}
		if r == nil || r.Session != sess {
			return nil, false, false, nil
		}
		now := rm.now()
		inFlight = r.State == StateSending && r.Claim != nil && now.Before(r.Claim.Until)
		err = rm.deleteRecord(ctx, sc, id, rev)
		if bus.IsCASConflict(err) {
			continue
		}
		if err != nil {
			return nil, false, false, storeErr("delete reminder", err)
		}
		if err := rm.cancel(ctx, sc, id); err != nil {
			rm.log.WarnContext(ctx, "schedule not cancelled after delete", "scope", sc.String(), "id", id, "err", err)
		}
		if err := rm.dropIndexEntry(ctx, sc, id); err != nil {
			rm.log.WarnContext(ctx, "index entry not dropped", "scope", sc.String(), "id", id, "err", err)
		}
		rm.log.InfoContext(ctx, "reminder deleted", "scope", sc.String(), "id", id, "in_flight", inFlight)
		return r, inFlight, true, nil
	}
	return nil, false, false, storeErr("delete reminder", bus.ErrCASExhausted)
}

// ruleOf is the stored rule of rec (nil for a one-shot or a rule that no
// longer parses) and the zone its wall times are read in: the one place a
// delivery, a resume and the sweep get a record's rule.
func (rm *reminders) ruleOf(rec *Record) (*when.Rule, *time.Location) {
	loc := rm.zone
	if l, err := settings.LoadZone(rec.Zone); err == nil {
		loc = l
	}
	if rec.Recurrence == nil {
		return nil, loc
	}
	r, err := when.RuleOf(*rec.Recurrence)
	if err != nil {
		return nil, loc
	}
	r = r.WithCalendarEnd(rm.calendarEnd)
	return &r, loc
}
