package schenotify

import (
	"context"
	"errors"
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

// IdempotencyKey is the send_message key of one occurrence:
// <scope>:<id>:<occurrence as 2006-01-02T15:04:05Z>.
func IdempotencyKey(sc binding.Scope, id string, occurrence time.Time) string {
	return sc.String() + ":" + id + ":" + occurrence.UTC().Format("2006-01-02T15:04:05Z")
}

// handleFired handles one fired message (spec 7.4) and acks or naks it.
func (s *Service) handleFired(ctx context.Context, f *bus.Fired) {
	s.active.begin()
	defer s.active.end()
	if h := s.hooks.onFired; h != nil {
		h(f, time.Now())
	}
	outcome, err := s.deliver(ctx, f)
	s.settle(ctx, f, outcome, err)
}

// settle counts a handled fire's outcome and naks it after a temporary
// failure.
func (s *Service) settle(ctx context.Context, f *bus.Fired, outcome string, err error) {
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("schenotify.outcome", outcome))
	if outcome != "" {
		s.metrics.deliveries.WithLabelValues(outcome).Inc()
	}
	if err != nil {
		s.log.WarnContext(ctx, "fired reminder will be retried", "scope", f.Scope.String(), "err", err)
		_ = f.Nak(retryNak)
	}
}

// ack is done with a fired message: it acks it and removes it from the
// stream by its sequence (bus.Fired.Remove), so no handled message stays
// on its due subject and no due subject is purged.
func (s *Service) ack(ctx context.Context, f *bus.Fired) {
	s.writes.Add(1)
	if err := f.Remove(ctx); err != nil {
		s.log.WarnContext(ctx, "ack failed", "scope", f.Scope.String(), "err", err)
	}
}

// deliver returns the outcome label ("" when no counted outcome) and an
// error when the message must be redelivered after a temporary failure;
// otherwise it has acked or nak'd the message itself.
func (s *Service) deliver(ctx context.Context, f *bus.Fired) (string, error) {
	sc := f.Scope
	if f.Kind != KindDue || len(f.IDs) != 1 {
		s.log.ErrorContext(ctx, "fired message with an unexpected subject", "scope", sc.String())
		s.ack(ctx, f)
		return "", nil
	}
	id, ok := NormalizeID(f.IDs[0])
	if !ok || id != f.IDs[0] {
		s.log.ErrorContext(ctx, "fired message with a malformed id", "scope", sc.String())
		s.ack(ctx, f)
		return "", nil
	}
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attribute.String("schenotify.reminder_id", id))
	auth, err := s.authority(ctx, sc)
	if err != nil {
		return "", err
	}
	if auth != nil && auth.State == bus.StateRemoved {
		// An add that raced the removal may have left a record or index.
		_ = s.cancel(ctx, sc, id)
		_ = s.reminders().Purge(ctx, sc, id)
		_ = s.indexes().Purge(ctx, sc)
		s.ack(ctx, f)
		return OutcomeDeleted, nil
	}
	// reserved is a slot of the holder (hold.go), taken when the fire came
	// inside the hold window and given back unless the delivery is held.
	reserved := false
	defer func() {
		if reserved {
			s.holds.unreserve()
		}
	}()
	for range 10 {
		rec, rev, err := s.loadRecord(ctx, sc, id)
		if err != nil {
			return "", err
		}
		if rec == nil {
			if err := s.cancel(ctx, sc, id); err != nil {
				return "", err
			}
			s.ack(ctx, f)
			return OutcomeDeleted, nil
		}
		if rec.State == StateFailed || rec.State == StateWaiting {
			s.ack(ctx, f) // a waiting one is sent on the chat's next message (waiting.go)
			return "", nil
		}
		if rec.Held {
			// Paused by a user: a schedule armed before the pause (or by a
			// send that raced it) wakes nothing.
			s.ack(ctx, f)
			return OutcomePaused, nil
		}
		now := s.now()
		target := rec.Target()
		wait := target.Sub(now)
		if early := wait > 0 && wait <= s.holdWindow(); early && !reserved {
			reserved = s.holds.reserve()
		} else if !early && reserved {
			s.holds.unreserve()
			reserved = false
		}
		// Without a held slot an early fire waits on the server until the
		// target: the lead makes every fire early, so the second of
		// tolerance for clock differences would deliver early.
		if !reserved && target.After(now) {
			return OutcomeNotDue, s.notDue(ctx, f, sc, id, target, now)
		}
		if rec.State == StateSending && rec.Claim != nil && now.Before(rec.Claim.Until) {
			_ = f.Nak(rec.Claim.Until.Sub(now) + time.Second)
			return "", nil
		}
		if !auth.Active() {
			if rec.State != StatePaused {
				c := *rec
				c.State, c.Claim = StatePaused, nil
				if _, err := s.casRecord(ctx, sc, &c, rev); err != nil {
					if bus.IsCASConflict(err) {
						continue
					}
					return "", storeErr("pause", err)
				}
			}
			s.log.InfoContext(ctx, "reminder paused", "scope", sc.String(), "id", id)
			s.ack(ctx, f)
			return OutcomePaused, nil
		}
		if marked, _, err := s.chatWaiting(ctx, sc, rec.Session); err != nil {
			return "", err
		} else if marked {
			if conflict, err := s.park(ctx, sc, rec, rev); err != nil {
				return "", err
			} else if conflict {
				continue
			}
			s.ack(ctx, f)
			return OutcomeWaiting, nil
		}
		if h := s.hooks.beforeClaim; h != nil {
			h(ctx, sc, id)
		}
		// Claim: the linearisation point against deletes.
		occ := rec.NextDue
		c := *rec
		nowSec := now.UTC().Truncate(time.Second)
		if c.Attempt == 0 || c.FirstAttemptAt == nil {
			fa := nowSec
			c.FirstAttemptAt = &fa
		}
		if reserved && target.After(nowSec) {
			// A held claim covers the wait and the send (and a first
			// attempt is counted from the instant, not from the claim).
			nowSec = target.UTC().Truncate(time.Second)
			if c.Attempt == 0 || c.FirstAttemptAt == nil {
				fa := nowSec
				c.FirstAttemptAt = &fa
			}
		}
		c.State = StateSending
		c.Claim = &Claim{Occurrence: occ, Replica: s.cfg.Replica, Until: nowSec.Add(s.cfg.Claim)}
		c.Attempt++
		crev, err := s.casRecord(ctx, sc, &c, rev)
		if bus.IsCASConflict(err) {
			continue
		}
		if err != nil {
			return "", storeErr("claim", err)
		}
		if reserved && target.After(s.now()) {
			reserved = false // the holder owns the slot now
			s.hold(&held{f: f, auth: auth, orig: *rec, rec: &c, rev: crev, occ: occ, target: target,
				out: s.prepare(sc, auth, &c, occ, target)})
			return "", nil
		}
		return s.send(ctx, f, auth, &c, crev, occ, target, s.now())
	}
	return "", storeErr("claim", bus.ErrCASExhausted)
}

// notDue handles an early or stale fire: never acked away, because the
// server has already removed the @at that fired.
func (s *Service) notDue(ctx context.Context, f *bus.Fired, sc binding.Scope, id string, target, now time.Time) error {
	if wait := target.Sub(now); wait <= time.Minute {
		_ = f.Nak(wait)
		return nil
	}
	if err := s.arm(ctx, sc, id, target); err != nil {
		return err
	}
	s.ack(ctx, f)
	return nil
}

// send performs the claimed delivery and records its outcome.
func (s *Service) send(ctx context.Context, f *bus.Fired, auth *bus.Authority, rec *Record, rev uint64, occ, target, now time.Time) (string, error) {
	return s.sendPrepared(ctx, f, auth, rec, rev, occ, target, s.prepare(f.Scope, auth, rec, occ, now))
}

// outgoing is a delivery's message, built before the send (a held
// delivery builds it while it waits, so the instant costs only the send).
type outgoing struct {
	msg  wire.SendMessage
	rule *when.Rule
	loc  *time.Location
}

// prepare builds the message of occurrence occ as sent at now.
func (s *Service) prepare(sc binding.Scope, auth *bus.Authority, rec *Record, occ, now time.Time) outgoing {
	cfg, err := s.runner.OpenConfig(sc, auth)
	if err != nil {
		cfg = nil
	}
	set := NormalizeConfig(cfg, s.zone)
	loc := s.zone
	if l, ok := when.LoadZone(rec.Zone); ok {
		loc = l
	}
	var rule *when.Rule
	if rec.Recurrence != nil {
		if r, err := when.RuleOf(*rec.Recurrence); err == nil {
			rule = &r
		}
	}
	skipped := 0
	if rule != nil {
		skipped = rule.Skipped(occ, now, loc, 10000)
	}
	text := s.rd.DeliveryText(set, rec, occ, now, skipped)
	msg := wire.SendMessage{BotUUID: rec.Session.BotUUID, TargetType: rec.Session.TargetType, TargetID: rec.Session.TargetID,
		MessageChain: deliveryChain(set, rec, text)}
	return outgoing{msg: msg, rule: rule, loc: loc}
}

// sendPrepared performs the claimed delivery of out and records its outcome.
func (s *Service) sendPrepared(ctx context.Context, f *bus.Fired, auth *bus.Authority, rec *Record, rev uint64, occ, target time.Time, out outgoing) (string, error) {
	sc := f.Scope
	msg, rule, loc := out.msg, out.rule, out.loc
	now := s.now()
	s.metrics.lateness.Observe(now.Sub(target).Seconds())
	sctx, cancel := context.WithTimeout(ctx, s.cfg.HostTimeout)
	err := s.runner.Host().SendMessage(sctx, auth.Binding, msg, IdempotencyKey(sc, rec.ID, occ))
	cancel()
	if h := s.hooks.afterSend; h != nil {
		h(ctx, sc, rec.ID)
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("schenotify.attempt", rec.Attempt))
	now = s.now()
	nowSec := now.UTC().Truncate(time.Second)
	c := *rec
	c.Claim = nil
	var outcome string
	var hostErr *wire.Error
	switch {
	case err == nil:
		outcome = OutcomeDelivered
		if lerr := s.rememberLast(ctx, sc, rec, occ, now); lerr != nil {
			// Only snooze-without-id depends on it; the delivery stands.
			s.log.WarnContext(ctx, "last delivery not recorded", "scope", sc.String(), "id", rec.ID, "err", lerr)
		}
		c.Delivered++
		o := occ
		c.LastOccurrence = &o
		if done, err := s.advance(ctx, sc, &c, rule, loc, occ, now, rev, true); err != nil || done {
			s.log.InfoContext(ctx, "reminder handled", "scope", sc.String(), "id", rec.ID, "outcome", outcome,
				"attempt", rec.Attempt, "occurrence", occ.UTC().Format(time.RFC3339))
			return s.finishOutcome(ctx, f, outcome, err)
		}
	case Refusal(err) != "":
		outcome = OutcomeWaiting
		if werr := s.refused(ctx, sc, &c, rev, Refusal(err), now); werr != nil {
			return s.finishOutcome(ctx, f, outcome, werr)
		}
	case errors.As(err, &hostErr) && hostErr.Code == 403:
		outcome = OutcomePaused
		c.State = StatePaused
		c.Attempt = max(0, c.Attempt-1)
		if c.Attempt == 0 {
			c.FirstAttemptAt = nil
		}
		if err := s.writeOutcome(ctx, sc, &c, rev); err != nil {
			return s.finishOutcome(ctx, f, outcome, err)
		}
		s.pausedByRefusal(ctx, sc, c.ID, auth.Binding)
	default:
		c.LastError = &LastError{Code: errorCode(err), Detail: errorDetail(err), At: nowSec}
		first := nowSec
		if c.FirstAttemptAt != nil {
			first = *c.FirstAttemptAt
		}
		if next, ok := s.cfg.Retry.NextAttempt(c.Attempt, first, now); ok {
			outcome = OutcomeRetry
			c.State = StateRetrying
			c.NextAttemptAt = &next
			if err := s.arm(ctx, sc, c.ID, next); err != nil {
				return s.finishOutcome(ctx, f, outcome, err)
			}
			if err := s.writeOutcome(ctx, sc, &c, rev); err != nil {
				return s.finishOutcome(ctx, f, outcome, err)
			}
			break
		}
		outcome = OutcomeFailed
		c.ConsecutiveFailures++
		if rule == nil || c.ConsecutiveFailures >= maxConsecutiveFailures {
			c.State = StateFailed
			c.NextAttemptAt = nil
			if err := s.writeOutcome(ctx, sc, &c, rev); err != nil {
				return s.finishOutcome(ctx, f, outcome, err)
			}
			break
		}
		o := occ
		c.LastOccurrence = &o
		if done, err := s.advance(ctx, sc, &c, rule, loc, occ, now, rev, false); err != nil || done {
			return s.finishOutcome(ctx, f, outcome, err)
		}
	}
	s.log.InfoContext(ctx, "reminder handled", "scope", sc.String(), "id", rec.ID, "outcome", outcome,
		"attempt", rec.Attempt, "occurrence", occ.UTC().Format(time.RFC3339))
	s.ack(ctx, f)
	return outcome, nil
}

// finishOutcome acks after an outcome whose write found the record gone
// (errGone) and reports other write failures for redelivery. A finished
// reminder (*finished) has its fired message removed (and its schedule
// cancelled when both) by the janitor, off the handler's slot.
func (s *Service) finishOutcome(ctx context.Context, f *bus.Fired, outcome string, err error) (string, error) {
	var fin *finished
	if errors.As(err, &fin) {
		s.finish(ctx, f, fin.both)
		return outcome, nil
	}
	if err != nil && !errors.Is(err, errGone) {
		return outcome, err
	}
	s.ack(ctx, f)
	return outcome, nil
}

// finished is what advance returns for a reminder whose record it deleted:
// not a failure, the signal to remove its fired message (and to cancel its
// schedule, both, when the delete lost a race).
type finished struct{ both bool }

func (*finished) Error() string { return "schenotify: reminder finished" }

// writeOutcome stores c at the claimed revision; a deleted record has its
// schedule cancelled and gives errGone.
func (s *Service) writeOutcome(ctx context.Context, sc binding.Scope, c *Record, rev uint64) error {
	_, err := s.casRecord(ctx, sc, c, rev)
	if err == nil {
		return nil
	}
	if bus.IsCASConflict(err) {
		if cur, _, lerr := s.loadRecord(ctx, sc, c.ID); lerr == nil && cur == nil {
			_ = s.cancel(ctx, sc, c.ID)
			return errGone
		}
		return errGone // changed by someone else: their write wins
	}
	return storeErr("record outcome", err)
}

// advance moves a handled occurrence on: a one-shot (or a series that has
// ended) is deleted (its fired message is removed by finishOutcome); a
// recurring reminder arms
// its next occurrence and then stores it. done reports that the record is
// finished (deleted).
func (s *Service) advance(ctx context.Context, sc binding.Scope, c *Record, rule *when.Rule, loc *time.Location, occ, now time.Time, rev uint64, success bool) (done bool, err error) {
	var next time.Time
	if rule != nil {
		next = rule.Next(occ, now, loc)
		if c.Until != nil && next.After(*c.Until) {
			next = time.Time{}
		}
	}
	if next.IsZero() {
		derr := s.deleteRecord(ctx, sc, c.ID, rev)
		if derr != nil && !bus.IsCASConflict(derr) {
			return true, storeErr("finish reminder", derr)
		}
		return true, &finished{both: derr != nil}
	}
	if err := s.arm(ctx, sc, c.ID, next); err != nil {
		return false, err
	}
	c.State = StateScheduled
	c.NextDue = next
	c.Attempt = 0
	c.FirstAttemptAt, c.NextAttemptAt = nil, nil
	if success {
		c.ConsecutiveFailures = 0
		c.LastError = nil
	}
	if err := s.writeOutcome(ctx, sc, c, rev); err != nil {
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
			return ErrCodeUnavailable
		}
		return ErrCodeHost
	}
	return ErrCodeUnavailable
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
func (s *Service) authority(ctx context.Context, sc binding.Scope) (*bus.Authority, error) {
	if a, ok := s.runner.View().Lookup(sc); ok {
		return &a, nil
	}
	a, err := s.runner.Authority(ctx, sc)
	if err != nil {
		return nil, storeErr("read authority", err)
	}
	return a, nil
}
