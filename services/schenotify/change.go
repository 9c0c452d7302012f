package schenotify

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// Changes of an existing reminder: snooze, edit, pause and
// resume. Each is a compare-and-set of the record, retried on conflict,
// followed by what add and delete do to its schedule: a new target is
// armed (publishing on the sched subject replaces the schedule), a pause
// cancels the schedule. A retried invocation repeats nothing: these are
// state-changing invocations, answered from the dedupe record.

// changeKind names what a change did, for the reply.
const (
	changedTime   = "time"
	changedRule   = "rule"
	changedText   = "text"
	changedPaused = "paused"
	changedResume = "resumed"
	changedSnooze = "snoozed"
)

// changeOutcome is a change that succeeded: the record after it.
type changeOutcome struct {
	kind string
	rec  *Record
	plan when.Plan // the time plan, when the change had one
}

// errNotFound: no reminder with that id in the caller's session.
var errNotFound = errors.New("schenotify: reminder not found")

// changeRecord applies fn to the session's reminder id by compare-and-set
// and then re-arms (arm true) or cancels (purge true) its schedule. fn
// returns a *when.Failure to refuse the change. A reminder being sent at
// that moment is refused as unavailable (its retry comes after the send):
// the send's own outcome would otherwise race the change.
func (rm *reminders) changeRecord(ctx context.Context, sc binding.Scope, sess session, id string,
	fn func(r *Record) *when.Failure) (*Record, error) {
	for range 10 {
		r, rev, err := rm.loadRecord(ctx, sc, id)
		if err != nil {
			return nil, err
		}
		if r == nil || r.Session != sess {
			return nil, errNotFound
		}
		if r.State == StateSending && r.Claim != nil && rm.now().Before(r.Claim.Until) {
			return nil, storeErr("change reminder", errors.New("being sent"))
		}
		c := *r
		if f := fn(&c); f != nil {
			return nil, f
		}
		if _, err := rm.casRecord(ctx, sc, &c, rev); err != nil {
			if bus.IsCASConflict(err) {
				continue
			}
			return nil, storeErr("change reminder", err)
		}
		switch {
		case c.Held:
			if err := rm.cancel(ctx, sc, id); err != nil {
				return nil, err
			}
		case c.Target() != r.Target() || r.Held || r.State == StateFailed:
			if err := rm.arm(ctx, sc, id, c.Target()); err != nil {
				return nil, err
			}
		}
		rm.log.InfoContext(ctx, "reminder changed", "scope", sc.String(), "id", id, "state", c.State)
		return &c, nil
	}
	return nil, storeErr("change reminder", bus.ErrCASExhausted)
}

// rescheduled sets a record to its new target: scheduled, no attempt
// pending, not held.
func rescheduled(r *Record, due time.Time) {
	r.NextDue = due.UTC()
	r.State = StateScheduled
	r.Held = false
	r.Pause = ""
	r.Claim = nil
	r.Attempt = 0
	r.FirstAttemptAt, r.NextAttemptAt = nil, nil
	r.LastError = nil
	r.ConsecutiveFailures = 0
}

// editTime moves a reminder to the plan's first occurrence; a plan with a
// rule replaces the reminder's rule (and drops its end).
func (rm *reminders) editTime(ctx context.Context, sc binding.Scope, sess session, id string, p when.Plan) (changeOutcome, error) {
	kind := changedTime
	rec, err := rm.changeRecord(ctx, sc, sess, id, func(r *Record) *when.Failure {
		if p.Rule != nil {
			rr := p.Rule.Recurrence
			r.Recurrence, r.Until = &rr, nil
			kind = changedRule
		}
		rescheduled(r, p.First)
		return nil
	})
	return changeOutcome{kind: kind, rec: rec, plan: p}, err
}

// editText replaces a reminder's text (cut as an add cuts it).
func (rm *reminders) editText(ctx context.Context, sc binding.Scope, sess session, id, text string) (changeOutcome, error) {
	msg, n, _ := when.CutMessage(text)
	rec, err := rm.changeRecord(ctx, sc, sess, id, func(r *Record) *when.Failure {
		r.Message, r.OriginalLength = msg, n
		return nil
	})
	return changeOutcome{kind: changedText, rec: rec}, err
}

// pause holds a recurring reminder until resumed; its schedule is cancelled.
func (rm *reminders) pause(ctx context.Context, sc binding.Scope, sess session, id string) (changeOutcome, error) {
	rec, err := rm.changeRecord(ctx, sc, sess, id, func(r *Record) *when.Failure {
		switch {
		case r.Recurrence == nil:
			return fail("not_recurring", "id", map[string]string{"id": id})
		case r.Held:
			return fail("already_paused", "id", map[string]string{"id": id})
		case r.Pause == pauseCalendarEnd:
			return rm.calendarPaused(r)
		}
		r.State, r.Held, r.Claim = StatePaused, true, nil
		return nil
	})
	return changeOutcome{kind: changedPaused, rec: rec}, err
}

// resume re-arms a held reminder at its next occurrence from now (the
// occurrences missed while held are skipped, not delivered late).
func (rm *reminders) resumeHeld(ctx context.Context, sc binding.Scope, sess session, id string) (changeOutcome, error) {
	now := rm.now().UTC().Truncate(time.Second)
	rec, err := rm.changeRecord(ctx, sc, sess, id, func(r *Record) *when.Failure {
		if r.Pause == pauseCalendarEnd {
			return rm.calendarPaused(r) // it resumes by itself (resumeOne)
		}
		if !r.Held {
			return fail("not_paused", "id", map[string]string{"id": id})
		}
		next := r.NextDue
		if r.Recurrence != nil && !next.After(now) {
			rule, loc := rm.ruleOf(r)
			if rule == nil {
				return fail("internal", "", nil)
			}
			next = rule.Next(r.NextDue, now, loc)
			if next.IsZero() {
				return fail("internal", "", nil)
			}
		}
		rescheduled(r, next)
		return nil
	})
	return changeOutcome{kind: changedResume, rec: rec}, err
}

// snoozeRequest is a snooze: of id, or of the chat's last delivery.
type snoozeRequest struct {
	scope    binding.Scope
	invID    string
	settings Settings
	session  session
	sender   string
	id       string // "" for the last delivered
	expr     string // duration or expression; "" for DefaultSnooze
	via      string
}

// snooze brings a reminder back later. A one-shot that still exists is
// moved; otherwise (a delivered one-shot is gone, or the reminder
// repeats) a new one-shot with the same text and members is created, with
// the caps and retry dedupe of an add.
func (rm *reminders) snooze(ctx context.Context, req snoozeRequest) (changeOutcome, error) {
	sc, now := req.scope, rm.now()
	in := when.ScheduleInput{Now: now, Zone: req.settings.Zone, MinEvery: rm.minEvery}
	var msg, kind string
	var mentions []string
	id := req.id
	if id == "" {
		last, err := rm.loadLast(ctx, sc, req.session)
		if err != nil {
			return changeOutcome{}, err
		}
		if last == nil {
			return changeOutcome{}, fail("nothing_to_snooze", "", nil)
		}
		id, msg, mentions, kind = last.ID, last.Message, last.Mentions, last.Kind
	}
	rec, _, err := rm.loadRecord(ctx, sc, id)
	if err != nil {
		return changeOutcome{}, err
	}
	if rec != nil && rec.Session != req.session {
		rec = nil
	}
	if rec == nil && req.id != "" {
		return changeOutcome{}, errNotFound
	}
	if rec != nil {
		msg, mentions, kind = rec.Message, rec.Mentions, rec.Kind
	}
	p, f := when.PlanWhen(req.expr, msg, false, in)
	if f != nil {
		return changeOutcome{}, f
	}
	if rec != nil && rec.Recurrence == nil {
		out, err := rm.editTime(ctx, sc, req.session, id, p)
		out.kind = changedSnooze
		return out, err
	}
	newID, err := rm.add(ctx, addRequest{scope: sc, invID: req.invID, settings: req.settings, session: req.session,
		sender: req.sender, plan: p, via: req.via, mentions: mentions, kind: kind})
	if err != nil {
		return changeOutcome{}, err
	}
	created, _, err := rm.loadRecord(ctx, sc, newID)
	if err != nil || created == nil {
		return changeOutcome{}, storeErr("read snoozed reminder", errors.Join(err, errNotFound))
	}
	return changeOutcome{kind: changedSnooze, rec: created, plan: p}, nil
}

// loadLast reads the session's last delivery (nil when none).
func (rm *reminders) loadLast(ctx context.Context, sc binding.Scope, sess session) (*lastDelivered, error) {
	e, err := rm.runner.KV().Get(ctx, sc, keyLast, sess.Token())
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, nil
		}
		return nil, storeErr("read last delivery", err)
	}
	var l lastDelivered
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		return nil, nil // unreadable: as if none
	}
	return &l, nil
}

// rememberLast records what the chat was sent last; an older delivery
// never replaces a newer one.
func (rm *reminders) rememberLast(ctx context.Context, sc binding.Scope, rec *Record, occ, at time.Time) error {
	l := lastDelivered{V: 1, ID: rec.ID, Message: rec.Message, Mentions: rec.Mentions, Occurrence: occ.UTC(), At: at.UTC().Truncate(time.Second), Kind: rec.Kind}
	val, err := json.Marshal(l)
	if err != nil {
		return err
	}
	rm.writes.Add(1)
	_, _, err = rm.runner.KV().Update(ctx, sc, keyLast, func(cur []byte, exists bool) ([]byte, error) {
		var old lastDelivered
		if exists && json.Unmarshal(cur, &old) == nil && old.At.After(l.At) {
			return nil, bus.ErrNoChange
		}
		return val, nil
	}, rec.Session.Token())
	return err
}

// calendarPaused refuses a user's pause or resume of a reminder paused at
// the end of its working calendar: it waits for a newer calendar, which
// resumes it by itself.
func (rm *reminders) calendarPaused(r *Record) *when.Failure {
	year := 0
	if rule, _ := rm.ruleOf(r); rule != nil {
		year = rule.CalendarEnd()
	}
	return fail("calendar_paused", "id", map[string]string{"id": r.ID, "year": strconv.Itoa(year)})
}
