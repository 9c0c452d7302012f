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

// handleFired handles a fired expiry schedule (spec §6 rule 5). The fire
// is only a wake-up: the stored record decides.
func (n *notices) handleFired(ctx context.Context, f *bus.Fired) {
	var body model.TimerBody
	if json.Unmarshal(f.Data, &body) != nil || !model.ValidSID(body.SID) || len(f.IDs) != 1 || f.IDs[0] != body.SID {
		n.log.ErrorContext(ctx, "malformed expiry message", "scope", f.Scope.String())
		_ = f.Term()
		return
	}
	sc, sid := f.Scope, body.SID
	a, err := n.runner.Authority(ctx, sc)
	if err != nil {
		_ = f.Nak(5 * time.Second)
		return
	}
	if a == nil || !a.Active() {
		// paused or removed: the resume sweep handles it on re-attach
		_ = f.Ack(ctx)
		return
	}
	rec, _, err := n.st.GetRecord(ctx, sc, sid)
	if err != nil {
		if errors.Is(err, store.ErrCorrupt) {
			_ = f.Ack(ctx)
			return
		}
		_ = f.Nak(5 * time.Second)
		return
	}
	now := n.now.ms()
	switch model.OnFire(rec, body.ExpiresAt, now) {
	case model.FireAck:
		_ = f.Ack(ctx)
	case model.FireNakUntil:
		_ = f.Nak(time.Duration(rec.Takeover.ExpiresAt-now)*time.Millisecond + 50*time.Millisecond)
	case model.FireRearm:
		if err := n.st.Schedule(ctx, sc, sid, rec.Takeover.ExpiresAt); err != nil {
			_ = f.Nak(5 * time.Second)
			return
		}
		_ = f.Ack(ctx)
	case model.FireRelease:
		if err := n.expire(ctx, sc, a, sid); err != nil {
			n.log.WarnContext(ctx, "expiry failed, will retry", "scope", sc.String(), "sid", sid, "err", err)
			_ = f.Nak(5 * time.Second)
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
	cfg, err := n.runner.OpenConfig(sc, a)
	if err != nil {
		cfg = nil
	}
	set := n.settings.get(sc, a.Binding, cfg)
	n.afterRelease(ctx, session{sc: sc, b: a.Binding, set: set, sid: sid, rec: rec}, false)
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
	cfg, err := n.runner.OpenConfig(sc, a)
	if err != nil {
		cfg = nil
	}
	set := n.settings.get(sc, a.Binding, cfg)
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
