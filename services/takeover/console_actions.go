package takeover

import (
	"context"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

func (s *Service) consoleTakeover(ctx context.Context, c PageCall, sid string) (TakeoverView, error) {
	rec, err := s.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return TakeoverView{}, err
	}
	if model.IsLegacy(rec) {
		return TakeoverView{}, legacyErr()
	}
	now := s.nowMS()
	var tr model.Transition
	rec, rev, err := s.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil {
			return nil, bus.Errorf(bus.ErrNotFound, "no such session")
		}
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
	return s.takeoverView(rec, c.Settings), nil
}

func (s *Service) consoleRelease(ctx context.Context, c PageCall, sid string) (TakeoverView, error) {
	rec, err := s.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return TakeoverView{}, err
	}
	if model.IsLegacy(rec) {
		return TakeoverView{}, legacyErr()
	}
	now := s.nowMS()
	released := false
	rec, rev, err := s.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
		released = false
		if cur == nil {
			return nil, bus.Errorf(bus.ErrNotFound, "no such session")
		}
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
	rec, err := s.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return Summary{}, err
	}
	if model.IsLegacy(rec) {
		return Summary{}, legacyErr()
	}
	rec, rev, err := s.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil {
			return nil, bus.Errorf(bus.ErrNotFound, "no such session")
		}
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
	sum := s.summaryWith(sid, rec, c.Settings, s.botName(c.Scope, c.Binding, rec.BotUUID))
	s.publishLive(c.Scope, model.Live{Type: model.LiveSession, SID: sid, Data: sum})
	return sum, nil
}
