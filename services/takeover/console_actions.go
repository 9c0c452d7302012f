package takeover

import (
	"context"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// consoleUpdate is the one load-check-CAS of the console actions: the session
// must exist and be current-format before anything is tried, and the CAS
// re-checks existence on every attempt before it hands the record to change.
// change returns store.ErrNoChange when there is nothing to write.
func (o *ops) consoleUpdate(ctx context.Context, c pageCall, sid string, change func(cur *model.Record) (*model.Record, error)) (*model.Record, uint64, error) {
	rec, err := o.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return nil, 0, err
	}
	if model.IsLegacy(rec) {
		return nil, 0, legacyErr()
	}
	return o.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil {
			return nil, wire.Errorf(wire.ErrNotFound, "no such session")
		}
		return change(cur)
	})
}

func (o *ops) consoleTakeover(ctx context.Context, c pageCall, sid string) (TakeoverView, error) {
	now := o.now.ms()
	var tr model.Transition
	rec, rev, err := o.consoleUpdate(ctx, c, sid, func(cur *model.Record) (*model.Record, error) {
		if model.IsLegacy(cur) {
			return nil, legacyErr()
		}
		r := cur.Clone()
		tr = r.Takeover.TakeOver(now, c.Settings.TimeoutMillis(), model.ViaConsole, c.Operator)
		r.UpdatedAt = now
		return r, nil
	})
	if err != nil {
		return TakeoverView{}, err
	}
	o.view.ApplyRecord(c.Scope, sid, rec, rev)
	o.notices.afterTakeover(ctx, c.session(sid, rec), tr, false)
	o.notices.noteTaken(ctx, c, sid, rec)
	return o.notices.takeoverView(rec, c.Settings), nil
}

func (o *ops) consoleRelease(ctx context.Context, c pageCall, sid string) (TakeoverView, error) {
	now := o.now.ms()
	released := false
	rec, rev, err := o.consoleUpdate(ctx, c, sid, func(cur *model.Record) (*model.Record, error) {
		released = false
		r := cur.Clone()
		if r.Takeover.Release(now, c.Operator, model.ReasonManual) == model.Unchanged {
			return nil, store.ErrNoChange
		}
		released = true
		r.UpdatedAt = now
		return r, nil
	})
	if err != nil {
		return TakeoverView{}, err
	}
	if released {
		o.view.ApplyRecord(c.Scope, sid, rec, rev)
		o.notices.afterRelease(ctx, c.session(sid, rec), true)
	}
	return o.notices.takeoverView(rec, c.Settings), nil
}

func (o *ops) markHandled(ctx context.Context, c pageCall, sid string) (Summary, error) {
	rec, rev, err := o.consoleUpdate(ctx, c, sid, func(cur *model.Record) (*model.Record, error) {
		if !cur.Unread && cur.TriggeredWord == "" {
			return nil, store.ErrNoChange
		}
		r := cur.Clone()
		r.Unread, r.TriggeredWord = false, ""
		r.UpdatedAt = o.now.ms()
		return r, nil
	})
	if err != nil {
		return Summary{}, err
	}
	o.view.ApplyRecord(c.Scope, sid, rec, rev)
	o.notices.resolveAlert(ctx, c.Scope, c.Settings, sid)
	sum := o.notices.summaryWith(sid, rec, c.Settings, o.notices.botName(c.Scope, c.Binding, rec.BotUUID))
	o.notices.publishLive(c.Scope, model.Live{Type: model.LiveSession, SID: sid, Data: sum})
	return sum, nil
}
