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
func (s *Service) consoleUpdate(ctx context.Context, c PageCall, sid string, change func(cur *model.Record) (*model.Record, error)) (*model.Record, uint64, error) {
	rec, err := s.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return nil, 0, err
	}
	if model.IsLegacy(rec) {
		return nil, 0, legacyErr()
	}
	return s.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil {
			return nil, wire.Errorf(wire.ErrNotFound, "no such session")
		}
		return change(cur)
	})
}

func (s *Service) consoleTakeover(ctx context.Context, c PageCall, sid string) (TakeoverView, error) {
	now := s.nowMS()
	var tr model.Transition
	rec, rev, err := s.consoleUpdate(ctx, c, sid, func(cur *model.Record) (*model.Record, error) {
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
	s.view.ApplyRecord(c.Scope, sid, rec, rev)
	s.afterTakeover(ctx, c.Scope, c.Binding, c.Settings, sid, rec, tr)
	s.noteTaken(ctx, c, sid, rec)
	return s.takeoverView(rec, c.Settings), nil
}

func (s *Service) consoleRelease(ctx context.Context, c PageCall, sid string) (TakeoverView, error) {
	now := s.nowMS()
	released := false
	rec, rev, err := s.consoleUpdate(ctx, c, sid, func(cur *model.Record) (*model.Record, error) {
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
		s.view.ApplyRecord(c.Scope, sid, rec, rev)
		s.afterRelease(ctx, c.Scope, c.Binding, c.Settings, sid, rec, true)
	}
	return s.takeoverView(rec, c.Settings), nil
}

func (s *Service) markHandled(ctx context.Context, c PageCall, sid string) (Summary, error) {
	rec, rev, err := s.consoleUpdate(ctx, c, sid, func(cur *model.Record) (*model.Record, error) {
		if !cur.Unread && cur.TriggeredWord == "" {
			return nil, store.ErrNoChange
		}
		r := cur.Clone()
		r.Unread, r.TriggeredWord = false, ""
		r.UpdatedAt = s.nowMS()
		return r, nil
	})
	if err != nil {
		return Summary{}, err
	}
	s.view.ApplyRecord(c.Scope, sid, rec, rev)
	s.resolveAlert(ctx, c.Scope, c.Settings, sid)
	sum := s.summaryWith(sid, rec, c.Settings, s.botName(c.Scope, c.Binding, rec.BotUUID))
	s.publishLive(c.Scope, model.Live{Type: model.LiveSession, SID: sid, Data: sum})
	return sum, nil
}
