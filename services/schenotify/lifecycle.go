package schenotify

import (
	"context"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// onTransition is the runner's authority hook (spec 8): when a scope
// becomes active (an attach, or an invocation with a newer binding), every
// paused reminder returns to scheduled (or retrying) and is armed.
func (rm *reminders) onTransition(ctx context.Context, sc binding.Scope, prev *bus.Authority, next bus.Authority) error {
	if next.State != bus.StateActive {
		return nil
	}
	if prev != nil && prev.State == bus.StateActive && prev.Binding == next.Binding {
		return nil
	}
	return rm.resume(ctx, sc)
}

// resume re-arms the paused reminders of sc.
func (rm *reminders) resume(ctx context.Context, sc binding.Scope) error {
	ix, err := rm.loadIndex(ctx, sc)
	if err != nil {
		return err
	}
	for id := range ix.Entries {
		if err := rm.resumeOne(ctx, sc, id); err != nil {
			return err
		}
	}
	return nil
}

// resumeOne returns one paused reminder to scheduled (or retrying) and
// arms it; any other state is left alone. One paused at the end of its
// working calendar (pauseCalendarEnd) comes back at its next occurrence
// once the calendar covers one, and otherwise stays paused.
func (rm *reminders) resumeOne(ctx context.Context, sc binding.Scope, id string) error {
	for range 5 {
		rec, rev, err := rm.loadRecord(ctx, sc, id)
		if err != nil {
			return err
		}
		if rec == nil || rec.State != StatePaused || rec.Held {
			return nil // a user's pause outlasts the installation's
		}
		c := *rec
		if c.Pause == pauseCalendarEnd {
			// Re-armed only once the working calendar covers the next
			// occurrence (a newer library after a restart).
			rule, loc := rm.ruleOf(&c)
			if rule == nil {
				return nil
			}
			from := c.NextDue
			if c.LastOccurrence != nil {
				from = *c.LastOccurrence
			}
			next := rule.Next(from, rm.now(), loc)
			if next.IsZero() || (c.Until != nil && next.After(*c.Until)) {
				return nil
			}
			c.NextDue, c.Pause = next, ""
		}
		c.State = StateScheduled
		if c.NextAttemptAt != nil && c.Attempt > 0 {
			c.State = StateRetrying
		}
		if err := rm.arm(ctx, sc, id, c.Target()); err != nil {
			return err
		}
		if _, err := rm.casRecord(ctx, sc, &c, rev); err != nil {
			if bus.IsCASConflict(err) {
				continue
			}
			return storeErr("resume", err)
		}
		rm.log.InfoContext(ctx, "reminder resumed", "scope", sc.String(), "id", id)
		return nil
	}
	return nil
}

// pausedByRefusal is called after a reminder was paused because the host
// refused the binding it was sent with (sent): if the installation's
// stored authority is meanwhile active under another binding (an attach
// applied between the refusal and the pause, whose resume found the
// reminder still sending), the reminder is resumed at once, so a 403 of a
// superseded revision never parks it for good. The pkg/bus host client has
// already resent with the binding current at the refusal; this covers a
// change after it.
func (rm *reminders) pausedByRefusal(ctx context.Context, sc binding.Scope, id string, sent binding.Binding) {
	if !rm.runner.MovedOn(ctx, sc, sent) {
		return // the next transition to active resumes it
	}
	if err := rm.resumeOne(ctx, sc, id); err != nil {
		rm.log.WarnContext(ctx, "refused reminder not resumed", "scope", sc.String(), "id", id, "err", err)
	}
}

// sweep is one pass of the recovery sweep (spec 7.6 rule 2) over the
// scopes with an active authority, one at a time: it re-arms reminders
// whose target (or send claim) is more than 60 s in the past, at that past
// instant, which fires at once (spec: "@at now"; the past instant does not
// depend on this replica's clock agreeing with the server's);
// re-arms reminders paused at the end of their working calendar once the
// calendar covers their next occurrence (resumeOne); drops index entries
// without a record that are more than 60 s old, and refreshes the pending
// gauge.
func (rm *reminders) sweep(ctx context.Context) {
	pending := 0
	for _, sc := range rm.runner.View().Scopes(bus.StateActive) {
		if ctx.Err() != nil {
			return
		}
		n, err := rm.sweepScope(ctx, sc)
		if err != nil {
			rm.log.WarnContext(ctx, "recovery sweep of a scope failed", "scope", sc.String(), "err", err)
		}
		pending += n
		select { // a bounded rate: other work goes first
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
	rm.metrics.pending.Set(float64(pending))
}

func (rm *reminders) sweepScope(ctx context.Context, sc binding.Scope) (int, error) {
	ix, err := rm.loadIndex(ctx, sc)
	if err != nil {
		return 0, err
	}
	now := rm.now()
	var orphans []string
	for id, e := range ix.Entries {
		rec, _, err := rm.loadRecord(ctx, sc, id)
		if err != nil {
			return len(ix.Entries), err
		}
		switch {
		case rec == nil:
			if now.Sub(e.CreatedAt) > sweepGrace {
				orphans = append(orphans, id)
			}
		case (rec.State == StateScheduled || rec.State == StateRetrying) && now.Sub(rec.Target()) > sweepGrace,
			rec.State == StateSending && rec.Claim != nil && now.Sub(rec.Claim.Until) > sweepGrace:
			// Arm the past instant itself rather than "now": it fires at
			// once on the server, whatever the skew between the clocks.
			at := rec.Target()
			if rec.State == StateSending {
				at = rec.Claim.Until
			}
			if err := rm.arm(ctx, sc, id, at); err != nil {
				return len(ix.Entries), err
			}
			rm.log.InfoContext(ctx, "recovery sweep re-armed a reminder", "scope", sc.String(), "id", id)
		case rec.State == StatePaused && rec.Pause == pauseCalendarEnd:
			// The first sweep after a start with a newer working
			// calendar re-arms it; until then this changes nothing.
			if err := rm.resumeOne(ctx, sc, id); err != nil {
				return len(ix.Entries), err
			}
		}
	}
	if len(orphans) > 0 {
		err := rm.updateIndex(ctx, sc, func(ix *Index) error {
			for _, id := range orphans {
				if e, ok := ix.Entries[id]; ok && now.Sub(e.CreatedAt) > sweepGrace {
					delete(ix.Entries, id)
				}
			}
			return nil
		})
		if err != nil {
			return len(ix.Entries), err
		}
	}
	return len(ix.Entries) - len(orphans), nil
}
