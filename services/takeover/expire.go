package takeover

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// retryFired is when a fired timer whose work failed for a passing reason
// (a read, a write) is delivered again.
const retryFired = 5 * time.Second

// activeFired is the preamble of every fired timer of one session
// (expiry, escalation, alert): the message names one valid session
// (decoded says the caller could read its body; what names the timer in
// the log) and the installation is active. It settles the fire itself and
// reports false when there is nothing more to do: a malformed message is
// terminated, a paused or removed installation acknowledged (the resume
// sweep handles it on re-attach), a failed read retried.
func (n *notices) activeFired(ctx context.Context, f *bus.Fired, sid string, decoded bool, what string) (*bus.Authority, bool) {
	if !decoded || !model.ValidSID(sid) || len(f.IDs) != 1 || f.IDs[0] != sid {
		n.log.ErrorContext(ctx, "malformed "+what+" message", "scope", f.Scope.String())
		_ = f.Term()
		return nil, false
	}
	a, err := n.runner.Authority(ctx, f.Scope)
	if err != nil {
		_ = f.Nak(retryFired)
		return nil, false
	}
	if a == nil || !a.Active() {
		_ = f.Ack(ctx)
		return nil, false
	}
	return a, true
}

// loadFired is activeFired and then the session's record, for the timers
// that act on it (expiry, escalation): a corrupt record is acknowledged, a
// failed read retried. rec is nil when the session is gone.
func (n *notices) loadFired(ctx context.Context, f *bus.Fired, sid string, decoded bool, what string) (a *bus.Authority, rec *model.Record, ok bool) {
	if a, ok = n.activeFired(ctx, f, sid, decoded, what); !ok {
		return nil, nil, false
	}
	rec, _, err := n.st.GetRecord(ctx, f.Scope, sid)
	switch {
	case errors.Is(err, store.ErrCorrupt):
		_ = f.Ack(ctx)
		return nil, nil, false
	case err != nil:
		_ = f.Nak(retryFired)
		return nil, nil, false
	}
	return a, rec, true
}

// settingsOf is the scope's settings under its authority's binding and
// config; a config that cannot be opened reads as empty (the defaults).
func (n *notices) settingsOf(sc binding.Scope, a *bus.Authority) model.Settings {
	cfg, err := n.runner.OpenConfig(sc, a)
	if err != nil {
		cfg = nil
	}
	return n.settings.get(sc, a.Binding, cfg)
}

// handleFired handles a fired expiry schedule (spec §6 rule 5). The fire
// is only a wake-up: the stored record decides.
func (n *notices) handleFired(ctx context.Context, f *bus.Fired) {
	var body model.TimerBody
	decoded := json.Unmarshal(f.Data, &body) == nil
	a, rec, ok := n.loadFired(ctx, f, body.SID, decoded, "expiry")
	if !ok {
		return
	}
	sc, sid := f.Scope, body.SID
	now := n.now.ms()
	switch model.OnFire(rec, body.ExpiresAt, now) {
	case model.FireAck:
		_ = f.Ack(ctx)
	case model.FireNakUntil:
		_ = f.Nak(time.Duration(rec.Takeover.ExpiresAt-now)*time.Millisecond + 50*time.Millisecond)
	case model.FireRearm:
		if err := n.st.Schedule(ctx, sc, sid, rec.Takeover.ExpiresAt); err != nil {
			_ = f.Nak(retryFired)
			return
		}
		_ = f.Ack(ctx)
	case model.FireRelease:
		if err := n.expire(ctx, sc, a, sid); err != nil {
			n.log.WarnContext(ctx, "expiry failed, will retry", "scope", sc.String(), "sid", sid, "err", err)
			_ = f.Nak(retryFired)
			return
		}
		_ = f.Ack(ctx)
	}
}

// expire releases a session whose deadline passed, with reason timeout,
// under the authority's binding and config.
func (n *notices) expire(ctx context.Context, sc binding.Scope, a *bus.Authority, sid string) error {
	now := n.now.ms()
	released := false
	rec, rev, err := n.st.UpdateRecord(ctx, sc, sid, func(cur *model.Record) (*model.Record, error) {
		released = false
		if cur == nil || !cur.Takeover.Active || now < cur.Takeover.ExpiresAt {
			return nil, store.ErrNoChange
		}
		r := cur.Clone()
		r.Takeover.Release(now, "", model.ReasonTimeout)
		r.UpdatedAt = now
		released = true
		return r, nil
	})
	if err != nil || !released {
		return err
	}
	n.view.ApplyRecord(sc, sid, rec, rev)
	n.afterRelease(ctx, session{sc: sc, b: a.Binding, set: n.settingsOf(sc, a), sid: sid, rec: rec}, false)
	return nil
}

// onTransition runs on the replica that changed a scope's authority: a
// transition to active runs the resume sweep (spec §6 rule 6).
func (n *notices) onTransition(ctx context.Context, sc binding.Scope, prev *bus.Authority, next bus.Authority) error {
	if next.State != bus.StateActive || (prev != nil && prev.State == bus.StateActive) || prev == nil {
		return nil
	}
	return n.resume(ctx, sc, &next)
}

// resume releases every active session of the scope whose deadline passed
// and re-arms the schedule of the others, then re-arms the escalations
// (rearmEscalation): a timer that fired while the installation was paused
// was dropped.
func (n *notices) resume(ctx context.Context, sc binding.Scope, a *bus.Authority) error {
	stored, err := n.st.ListRecords(ctx, sc)
	if err != nil {
		return err
	}
	set := n.settingsOf(sc, a)
	var errs []error
	for _, l := range stored {
		sid, rec := l.SID, l.Rec
		if rec == nil {
			continue
		}
		switch model.ResumeAction(rec, n.now.ms()) {
		case model.FireRelease:
			errs = append(errs, n.expire(ctx, sc, a, sid))
			continue
		case model.FireRearm:
			errs = append(errs, n.st.Schedule(ctx, sc, sid, rec.Takeover.ExpiresAt))
		}
		if !model.IsLegacy(rec) {
			n.rearmEscalation(ctx, session{sc: sc, b: a.Binding, set: set, sid: sid, rec: rec})
		}
	}
	return errors.Join(errs...)
}

// onAuthority runs on every replica when a scope's authority changes: a
// tombstone drops the scope from the session view.
func (n *notices) onAuthority(sc binding.Scope, a bus.Authority) {
	if a.State == bus.StateRemoved {
		n.view.DropScope(sc)
	}
}

// purgeScope removes a removed scope's data outside the buckets: blobs
// named by its history, its history subjects and its timers (spec §10).
// The runner purges the buckets afterwards, keeping the tombstone.
func (n *notices) purgeScope(ctx context.Context, sc binding.Scope) error {
	return n.st.SweepScope(ctx, sc)
}
