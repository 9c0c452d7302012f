package schenotify

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// maxConsecutiveFailures is the number of failed occurrences after which a
// recurring reminder gives up (spec 7.5 rule 3).
const maxConsecutiveFailures = 3

// retryNak is the redelivery delay after a temporary storage failure.
const retryNak = 2 * time.Second

// idempotencyKey is the send_message key of one occurrence:
// <scope>:<id>:<occurrence as 2006-01-02T15:04:05Z>.
func idempotencyKey(sc binding.Scope, id string, occurrence time.Time) string {
	return sc.String() + ":" + id + ":" + occurrence.UTC().Format("2006-01-02T15:04:05Z")
}

// delivery is the part that delivers fired reminders (spec 7.4): it reads
// the record, claims the occurrence, holds a claimed delivery until its
// instant (hold.go), sends it, and writes its outcome; a chat that refuses
// proactive messages gets its reminders on its next message (waiting.go,
// nextmessage.go); the janitor removes finished fired messages off the
// handler's slot (janitor.go). Its background work (janitor, held
// deliveries, next-message sends) starts and stops with it (bus.Part).
type delivery struct {
	rem *reminders
	// runner gives the authority view and stored authorities and the
	// installations' configs; host is its host-action client. Both are
	// set by New after the runner is built.
	runner *bus.Runner
	host   *bus.Host
	rd     Renderer
	zone   *time.Location // the default zone

	holds   *holder  // deliveries waiting for their instant
	janitor *janitor // finished deliveries' fired messages to remove
	flusher *flusher // a refusing chat's reminders, sent on its next message
	active  activity // fired messages being handled (the janitor yields)

	lead        time.Duration // the effective lead (Config.Lead)
	ackWait     time.Duration
	claimFor    time.Duration // how long a claim holds (Config.Claim)
	hostTimeout time.Duration
	llmTimeout  time.Duration // an AI-written delivery's LLM call (Config.LLMTimeout)
	replica     string
	retry       RetryPolicy
	subj        wire.Subjects
	now         func() time.Time
	log         *slog.Logger
	tracer      trace.Tracer
	metrics     *metrics

	hooks hooks // tests only (export_test.go)
}

// hooks let tests hold a handler at a chosen point.
type hooks struct {
	beforeClaim func(ctx context.Context, sc binding.Scope, id string)
	afterSend   func(ctx context.Context, sc binding.Scope, id string)
	onFired     func(f *bus.Fired, fetched time.Time)
}

func newDelivery(cfg Config, deps bus.Deps, rem *reminders, rd Renderer, zone *time.Location, lead time.Duration, m *metrics) *delivery {
	d := &delivery{rem: rem, rd: rd, zone: zone, holds: newHolder(cfg.MaxHeld), flusher: newFlusher(),
		lead: lead, ackWait: cfg.AckWait, claimFor: cfg.Claim, hostTimeout: cfg.HostTimeout, llmTimeout: cfg.LLMTimeout, replica: cfg.Replica,
		retry: cfg.Retry, subj: deps.Subjects, now: deps.Clock, log: deps.Logger,
		tracer: deps.TracerProvider.Tracer(tracerName), metrics: m}
	d.janitor = newJanitor(&d.active, d.cleanUp)
	return d
}

// Start starts the janitor and lets next-message sends run. The runner
// starts it before the due consumer opens.
func (d *delivery) Start(ctx context.Context) error {
	d.janitor.start()
	if err := d.holds.releases.Start(ctx); err != nil {
		return err
	}
	return d.flusher.open(ctx)
}

// Stop puts the held deliveries back, waits for the next-message sends
// (cancelling them when ctx is done) and then for the janitor. The runner
// stops it after the due consumer's handlers returned, so no finished
// delivery is queued to a stopped janitor.
func (d *delivery) Stop(ctx context.Context) error {
	d.stopHolds(ctx)
	_ = d.flusher.close(ctx) // the flushes returned: its error is nil
	d.janitor.stop()
	return nil
}

// claimed is one claimed delivery: the occurrence a replica has claimed by
// compare-and-set, with what its send and its outcome need. It travels
// from the claim through the hold (hold.go) to the send and the outcome,
// and the next-message path (nextmessage.go) builds one too.
type claimed struct {
	sc     binding.Scope
	f      *bus.Fired // the fired message; nil on the next-message path
	auth   *bus.Authority
	orig   Record    // the record as it was before the claim
	rec    *Record   // the claimed record
	rev    uint64    // its revision
	occ    time.Time // the occurrence
	target time.Time // the instant it is due
	out    outgoing  // the message, built before the send
}

// outgoing is a delivery's message, built before the send (a held
// delivery builds it while it waits, so the instant costs only the send).
type outgoing struct {
	msg  wire.SendMessage
	rule *when.Rule
	loc  *time.Location
	// ai is an AI-written reminder's budget decision: its text is asked
	// for at the send (writeAI, ai.go).
	ai *aiCharge
	// calendarEnd is the last year of the working calendar when this is
	// the series' last occurrence it covers (the message says so, and
	// advance then pauses the reminder); else 0.
	calendarEnd int
}

// fired handles one fired message (spec 7.4) and acks or naks it.
func (d *delivery) fired(ctx context.Context, f *bus.Fired) {
	d.active.begin()
	defer d.active.end()
	if h := d.hooks.onFired; h != nil {
		h(f, time.Now())
	}
	outcome, err := d.deliver(ctx, f)
	d.settle(ctx, f, outcome, err)
}

// settle counts a handled fire's outcome and naks it after a temporary
// failure.
func (d *delivery) settle(ctx context.Context, f *bus.Fired, outcome string, err error) {
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("schenotify.outcome", outcome))
	if outcome != "" {
		d.metrics.deliveries.WithLabelValues(outcome).Inc()
	}
	if err != nil {
		d.log.WarnContext(ctx, "fired reminder will be retried", "scope", f.Scope.String(), "err", err)
		_ = f.Nak(retryNak)
	}
}

// ack is done with a fired message: it acks it and removes it from the
// stream by its sequence (bus.Fired.Remove), so no handled message stays
// on its due subject and no due subject is purged.
func (d *delivery) ack(ctx context.Context, f *bus.Fired) {
	d.rem.writes.Add(1)
	if err := f.Remove(ctx); err != nil {
		d.log.WarnContext(ctx, "ack failed", "scope", f.Scope.String(), "err", err)
	}
}

// deliver returns the outcome label ("" when no counted outcome) and an
// error when the message must be redelivered after a temporary failure;
// otherwise it has acked or nak'd the message itself. It checks the fired
// message and the installation, then decides on the record in a
// compare-and-set loop (attempt).
func (d *delivery) deliver(ctx context.Context, f *bus.Fired) (string, error) {
	sc := f.Scope
	if f.Kind != KindDue || len(f.IDs) != 1 {
		d.log.ErrorContext(ctx, "fired message with an unexpected subject", "scope", sc.String())
		d.ack(ctx, f)
		return "", nil
	}
	id, ok := NormalizeID(f.IDs[0])
	if !ok || id != f.IDs[0] {
		d.log.ErrorContext(ctx, "fired message with a malformed id", "scope", sc.String())
		d.ack(ctx, f)
		return "", nil
	}
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attribute.String("schenotify.reminder_id", id))
	auth, err := d.authority(ctx, sc)
	if err != nil {
		return "", err
	}
	if auth != nil && auth.State == bus.StateRemoved {
		// An add that raced the removal may have left a record or index.
		d.rem.purgeReminder(ctx, sc, id)
		d.ack(ctx, f)
		return outcomeDeleted, nil
	}
	// slot is a place in the holder (hold.go), taken when the fire came
	// inside the hold window and given back unless the delivery is held.
	slot := holdSlot{h: d.holds}
	defer slot.giveBack()
	for range 10 {
		outcome, retry, err := d.attempt(ctx, f, auth, id, &slot)
		if !retry {
			return outcome, err
		}
	}
	return "", storeErr("claim", bus.ErrCASExhausted)
}

// attempt is one round of deliver's loop: it reads the record and acks,
// naks, pauses, parks, or claims and then holds or sends the occurrence.
// retry reports a compare-and-set conflict: the record changed, read it
// again.
func (d *delivery) attempt(ctx context.Context, f *bus.Fired, auth *bus.Authority, id string, slot *holdSlot) (outcome string, retry bool, err error) {
	sc := f.Scope
	rec, rev, err := d.rem.loadRecord(ctx, sc, id)
	if err != nil {
		return "", false, err
	}
	if rec == nil {
		if err := d.rem.cancel(ctx, sc, id); err != nil {
			return "", false, err
		}
		d.ack(ctx, f)
		return outcomeDeleted, false, nil
	}
	if rec.State == StateFailed || rec.State == StateWaiting {
		d.ack(ctx, f) // a waiting one is sent on the chat's next message (waiting.go)
		return "", false, nil
	}
	if rec.Held || rec.Pause != "" {
		// Paused by a user, or until a newer working calendar: a
		// schedule armed before the pause (or by a send that raced it)
		// wakes nothing.
		d.ack(ctx, f)
		return outcomePaused, false, nil
	}
	now := d.now()
	target := rec.Target()
	wait := target.Sub(now)
	slot.want(wait > 0 && wait <= d.holdWindow())
	// Without a held slot an early fire waits on the server until the
	// target: the lead makes every fire early, so the second of
	// tolerance for clock differences would deliver early.
	if !slot.taken && target.After(now) {
		return outcomeNotDue, false, d.notDue(ctx, f, id, target, now)
	}
	if rec.State == StateSending && rec.Claim != nil && now.Before(rec.Claim.Until) {
		_ = f.Nak(rec.Claim.Until.Sub(now) + time.Second)
		return "", false, nil
	}
	if !auth.Active() {
		if rec.State != StatePaused {
			c := *rec
			c.State, c.Claim = StatePaused, nil
			if _, err := d.rem.casRecord(ctx, sc, &c, rev); err != nil {
				if bus.IsCASConflict(err) {
					return "", true, nil
				}
				return "", false, storeErr("pause", err)
			}
		}
		d.log.InfoContext(ctx, "reminder paused", "scope", sc.String(), "id", id)
		d.ack(ctx, f)
		return outcomePaused, false, nil
	}
	if marked, _, err := d.rem.chatWaiting(ctx, sc, rec.Session); err != nil {
		return "", false, err
	} else if marked {
		if conflict, err := d.park(ctx, sc, rec, rev); err != nil {
			return "", false, err
		} else if conflict {
			return "", true, nil
		}
		d.ack(ctx, f)
		return outcomeWaiting, false, nil
	}
	if h := d.hooks.beforeClaim; h != nil {
		h(ctx, sc, id)
	}
	c := &claimed{sc: sc, f: f, auth: auth, orig: *rec}
	err = d.claim(ctx, c, rev, now, slot.taken)
	if bus.IsCASConflict(err) {
		return "", true, nil
	}
	if err != nil {
		return "", false, storeErr("claim", err)
	}
	if slot.taken && target.After(d.now()) {
		slot.taken = false // the holder owns the slot now
		c.out = d.render(ctx, c, target)
		d.hold(&held{claimed: c})
		return "", false, nil
	}
	c.out = d.render(ctx, c, d.now())
	outcome, err = d.send(ctx, c)
	return outcome, false, err
}

// claim claims the occurrence due of cl.orig, read at revision rev, by
// compare-and-set: the linearisation point against deletes. It fills in
// the rest of cl. A held claim (held) covers the wait and the send, and
// its first attempt is counted from the instant.
func (d *delivery) claim(ctx context.Context, cl *claimed, rev uint64, now time.Time, held bool) error {
	occ, target := cl.orig.NextDue, cl.orig.Target()
	c := cl.orig
	nowSec := now.UTC().Truncate(time.Second)
	if c.Attempt == 0 || c.FirstAttemptAt == nil {
		fa := nowSec
		c.FirstAttemptAt = &fa
	}
	if held && target.After(nowSec) {
		nowSec = target.UTC().Truncate(time.Second)
		if c.Attempt == 0 || c.FirstAttemptAt == nil {
			fa := nowSec
			c.FirstAttemptAt = &fa
		}
	}
	c.State = StateSending
	c.Claim = &claim{Occurrence: occ, Replica: d.replica, Until: nowSec.Add(d.claimFor + d.claimExtra(&c))}
	c.Attempt++
	crev, err := d.rem.casRecord(ctx, cl.sc, &c, rev)
	if err != nil {
		return err
	}
	cl.rec, cl.rev, cl.occ, cl.target = &c, crev, occ, target
	return nil
}

// notDue handles an early or stale fire: never acked away, because the
// server has already removed the @at that fired.
func (d *delivery) notDue(ctx context.Context, f *bus.Fired, id string, target, now time.Time) error {
	if wait := target.Sub(now); wait <= time.Minute {
		_ = f.Nak(wait)
		return nil
	}
	if err := d.rem.arm(ctx, f.Scope, id, target); err != nil {
		return err
	}
	d.ack(ctx, f)
	return nil
}

// render builds the message of the claimed occurrence as sent at now: the
// one place where a delivery's text is produced. ctx is for a text that
// has to be asked for (a host call) rather than rendered from the record.
func (d *delivery) render(ctx context.Context, c *claimed, now time.Time) outgoing {
	cfg, err := d.runner.OpenConfig(c.sc, c.auth)
	if err != nil {
		cfg = nil
	}
	set := NormalizeConfig(cfg, d.zone)
	rule, loc := d.rem.ruleOf(c.rec)
	skipped := 0
	if rule != nil {
		skipped = rule.Skipped(c.occ, now, loc, 10000)
	}
	out := outgoing{rule: rule, loc: loc, calendarEnd: calendarEndAt(rule, loc, c.occ, now, c.rec.Until)}
	text := d.rd.DeliveryText(set, c.rec, c.occ, now, skipped) + d.rd.calendarNote(set, out.calendarEnd)
	out.msg = wire.SendMessage{BotUUID: c.rec.Session.BotUUID, TargetType: c.rec.Session.TargetType, TargetID: c.rec.Session.TargetID,
		MessageChain: deliveryChain(set, c.rec, text)}
	if c.rec.Kind == kindAI {
		// The text is asked for at the send (writeAI); the budget is
		// decided now, while a held delivery waits.
		out.ai = d.chargeAI(ctx, c, set, now)
	}
	return out
}

// sendMessage sends the claimed delivery's message within the host timeout.
func (d *delivery) sendMessage(ctx context.Context, c *claimed) error {
	d.writeAI(ctx, c)
	sctx, cancel := context.WithTimeout(ctx, d.hostTimeout)
	defer cancel()
	return d.host.SendMessage(sctx, c.auth.Binding, c.out.msg, idempotencyKey(c.sc, c.rec.ID, c.occ))
}

// send performs the claimed delivery of a fired message and records its
// outcome.
func (d *delivery) send(ctx context.Context, cl *claimed) (string, error) {
	sc, f, occ := cl.sc, cl.f, cl.occ
	now := d.now()
	d.metrics.lateness.Observe(now.Sub(cl.target).Seconds())
	err := d.sendMessage(ctx, cl)
	rec := cl.rec // after the send: an AI-written send carries its answer, for the outcome write
	if h := d.hooks.afterSend; h != nil {
		h(ctx, sc, rec.ID)
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("schenotify.attempt", rec.Attempt))
	now = d.now()
	nowSec := now.UTC().Truncate(time.Second)
	c := *rec
	c.Claim = nil
	var outcome string
	var hostErr *wire.Error
	switch {
	case err == nil:
		outcome = outcomeDelivered
		if lerr := d.rem.rememberLast(ctx, sc, rec, occ, now); lerr != nil {
			// Only snooze-without-id depends on it; the delivery stands.
			d.log.WarnContext(ctx, "last delivery not recorded", "scope", sc.String(), "id", rec.ID, "err", lerr)
		}
		c.Delivered++
		o := occ
		c.LastOccurrence = &o
		if done, err := d.advance(ctx, cl, &c, now, true); err != nil || done {
			d.log.InfoContext(ctx, "reminder handled", "scope", sc.String(), "id", rec.ID, "outcome", outcome,
				"attempt", rec.Attempt, "occurrence", occ.UTC().Format(time.RFC3339))
			return d.finishOutcome(ctx, f, outcome, err)
		}
	case Refusal(err) != "":
		outcome = outcomeWaiting
		if werr := d.refused(ctx, sc, &c, cl.rev, Refusal(err), now); werr != nil {
			return d.finishOutcome(ctx, f, outcome, werr)
		}
	case errors.As(err, &hostErr) && hostErr.Code == 403:
		outcome = outcomePaused
		c.State = StatePaused
		c.Attempt = max(0, c.Attempt-1)
		if c.Attempt == 0 {
			c.FirstAttemptAt = nil
		}
		if err := d.writeOutcome(ctx, sc, &c, cl.rev); err != nil {
			return d.finishOutcome(ctx, f, outcome, err)
		}
		d.rem.pausedByRefusal(ctx, sc, c.ID, cl.auth.Binding)
	default:
		c.LastError = &LastError{Code: errorCode(err), Detail: errorDetail(err), At: nowSec}
		first := nowSec
		if c.FirstAttemptAt != nil {
			first = *c.FirstAttemptAt
		}
		if next, ok := d.retry.NextAttempt(c.Attempt, first, now); ok {
			outcome = outcomeRetry
			c.State = StateRetrying
			c.NextAttemptAt = &next
			if err := d.rem.arm(ctx, sc, c.ID, next); err != nil {
				return d.finishOutcome(ctx, f, outcome, err)
			}
			if err := d.writeOutcome(ctx, sc, &c, cl.rev); err != nil {
				return d.finishOutcome(ctx, f, outcome, err)
			}
			break
		}
		outcome = outcomeFailed
		c.ConsecutiveFailures++
		if cl.out.rule == nil || c.ConsecutiveFailures >= maxConsecutiveFailures {
			c.State = StateFailed
			c.NextAttemptAt = nil
			if err := d.writeOutcome(ctx, sc, &c, cl.rev); err != nil {
				return d.finishOutcome(ctx, f, outcome, err)
			}
			break
		}
		o := occ
		c.LastOccurrence = &o
		if done, err := d.advance(ctx, cl, &c, now, false); err != nil || done {
			return d.finishOutcome(ctx, f, outcome, err)
		}
	}
	d.log.InfoContext(ctx, "reminder handled", "scope", sc.String(), "id", rec.ID, "outcome", outcome,
		"attempt", rec.Attempt, "occurrence", occ.UTC().Format(time.RFC3339))
	d.ack(ctx, f)
	return outcome, nil
}

// finishOutcome acks after an outcome whose write found the record gone
// (errGone) and reports other write failures for redelivery. A finished
// reminder (*finished) has its fired message removed (and its schedule
// cancelled when both) by the janitor, off the handler's slot.
func (d *delivery) finishOutcome(ctx context.Context, f *bus.Fired, outcome string, err error) (string, error) {
	var fin *finished
	if errors.As(err, &fin) {
		d.finish(ctx, f, fin.both)
		return outcome, nil
	}
	if err != nil && !errors.Is(err, errGone) {
		return outcome, err
	}
	d.ack(ctx, f)
	return outcome, nil
}

// finished is what advance returns for a reminder whose record it deleted:
// not a failure, the signal to remove its fired message (and to cancel its
// schedule, both, when the delete lost a race).
type finished struct{ both bool }

func (*finished) Error() string { return "schenotify: reminder finished" }

// writeOutcome stores c at the claimed revision; a deleted record has its
// schedule cancelled and gives errGone.
func (d *delivery) writeOutcome(ctx context.Context, sc binding.Scope, c *Record, rev uint64) error {
	_, err := d.rem.casRecord(ctx, sc, c, rev)
	if err == nil {
		return nil
	}
	if bus.IsCASConflict(err) {
		if cur, _, lerr := d.rem.loadRecord(ctx, sc, c.ID); lerr == nil && cur == nil {
			_ = d.rem.cancel(ctx, sc, c.ID)
			return errGone
		}
		return errGone // changed by someone else: their write wins
	}
	return storeErr("record outcome", err)
}

// advance moves the handled occurrence of cl on, with c its outcome so
// far: a one-shot (or a series that has ended) is deleted (its fired
// message is removed by finishOutcome); a working-day series at the end of
// its calendar is paused (pauseCalendarEnd); a recurring reminder arms its
// next occurrence and then stores it. done reports that the record is
// finished (deleted).
func (d *delivery) advance(ctx context.Context, cl *claimed, c *Record, now time.Time, success bool) (done bool, err error) {
	sc, rule := cl.sc, cl.out.rule
	var next time.Time
	if rule != nil {
		next = rule.Next(cl.occ, now, cl.out.loc)
		if c.Until != nil && next.After(*c.Until) {
			next = time.Time{}
		}
	}
	if end := calendarEndAt(rule, cl.out.loc, cl.occ, now, c.Until); next.IsZero() && end > 0 {
		// The series goes on once a newer working calendar covers it:
		// kept, paused with the reason, re-armed by the sweep (resumeOne).
		c.State, c.Pause = StatePaused, pauseCalendarEnd
		c.Attempt = 0
		c.FirstAttemptAt, c.NextAttemptAt, c.AIAnswer = nil, nil, nil
		if success {
			c.ConsecutiveFailures = 0
			c.LastError = nil
		}
		if err := d.writeOutcome(ctx, sc, c, cl.rev); err != nil {
			return true, err
		}
		d.log.InfoContext(ctx, "reminder paused at the working calendar's end", "scope", sc.String(), "id", c.ID, "year", end)
		return false, nil
	}
	if next.IsZero() {
		derr := d.rem.deleteRecord(ctx, sc, c.ID, cl.rev)
		if derr != nil && !bus.IsCASConflict(derr) {
			return true, storeErr("finish reminder", derr)
		}
		return true, &finished{both: derr != nil}
	}
	if err := d.rem.arm(ctx, sc, c.ID, next); err != nil {
		return false, err
	}
	c.State = StateScheduled
	c.NextDue = next
	c.AIAnswer = nil // the next occurrence asks again
	c.Attempt = 0
	c.FirstAttemptAt, c.NextAttemptAt = nil, nil
	if success {
		c.ConsecutiveFailures = 0
		c.LastError = nil
	}
	if err := d.writeOutcome(ctx, sc, c, cl.rev); err != nil {
		return true, err
	}
	return false, nil
}

// errorCode maps a failed send to the stored code.
func errorCode(err error) string {
	var e *wire.Error
	switch {
	case errors.Is(err, bus.ErrHostTimeout), errors.Is(err, context.DeadlineExceeded):
		return ErrCodeTimeout
	case errors.As(err, &e):
		if e.Code == 503 {
			return errCodeUnavailable
		}
		return ErrCodeHost
	}
	return errCodeUnavailable
}

// errorDetail is a short, text-free description of a failed send.
func errorDetail(err error) string {
	var e *wire.Error
	switch {
	case errors.As(err, &e):
		d := strconv.Itoa(e.Code) + " " + e.Word
		if e.Reason != "" {
			d += " (" + e.Reason + ")"
		}
		return d
	case errors.Is(err, bus.ErrHostTimeout):
		return "no reply in time"
	case errors.Is(err, bus.ErrNoHost):
		return "no host is serving actions"
	}
	return "transport error"
}

// authority returns the scope's authority as this replica's view holds it
// (fed by a watch on the authority keys, so it lags a write by
// milliseconds), reading the stored record only when the view has none.
func (d *delivery) authority(ctx context.Context, sc binding.Scope) (*bus.Authority, error) {
	if a, ok := d.runner.View().Lookup(sc); ok {
		return &a, nil
	}
	a, err := d.runner.Authority(ctx, sc)
	if err != nil {
		return nil, storeErr("read authority", err)
	}
	return a, nil
}

// pauseCalendarEnd is Record.Pause of a working-day reminder whose next
// occurrence lies past the working calendar the library covers.
const pauseCalendarEnd = "calendar_end"

// calendarEndAt is the last year of rule's working calendar when
// occurrence occ, handled at now, is the last one the rule has inside that
// calendar and the reminder's end (until) does not come first; else 0.
func calendarEndAt(rule *when.Rule, loc *time.Location, occ, now time.Time, until *time.Time) int {
	end := 0
	if rule != nil {
		end = rule.CalendarEnd()
	}
	if end == 0 || !rule.PastCalendar(later(occ, now), loc) {
		return 0
	}
	if until != nil && until.In(loc).Year() <= end {
		return 0 // the series ends inside the calendar
	}
	return end
}

// later is the later of two instants.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
