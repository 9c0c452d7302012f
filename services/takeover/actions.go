package takeover

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// afterTakeover follows a committed start or extension: the schedule, the
// live event and, for a start, the takeover notice (spec §6, §3.7).
func (s *Service) afterTakeover(ctx context.Context, sc binding.Scope, b binding.Binding, set model.Settings, sid string, rec *model.Record, tr model.Transition) {
	if err := s.st.Schedule(ctx, sc, sid, rec.Takeover.ExpiresAt); err != nil {
		// the resume sweep or the next action re-arms it; the deadline still
		// holds for every decision
		s.log.ErrorContext(ctx, "arming the takeover expiry failed", "scope", sc.String(), "sid", sid, "err", err)
	}
	s.publishLive(sc, model.Live{Type: model.LiveTakeover, SID: sid, Data: s.takeoverView(rec, set)})
	if tr == model.Started {
		s.notify(ctx, sc, b, sid, rec, set.NoticeOnTakeover, true, false)
	}
}

// afterRelease follows a committed release: the timer is removed (a manual
// release), the live event, and the release notice.
func (s *Service) afterRelease(ctx context.Context, sc binding.Scope, b binding.Binding, set model.Settings, sid string, rec *model.Record, cancelTimer bool) {
	if cancelTimer {
		if err := s.st.CancelSchedule(ctx, sc, sid); err != nil {
			// a stray fire finds the record inactive and only acks
			s.log.WarnContext(ctx, "removing the takeover expiry failed", "scope", sc.String(), "sid", sid, "err", err)
		}
	}
	s.publishLive(sc, model.Live{Type: model.LiveTakeover, SID: sid, Data: s.takeoverView(rec, set)})
	s.notify(ctx, sc, b, sid, rec, set.NoticeOnRelease, false, false)
	s.resolveAlert(ctx, sc, set, sid)
}

// TakeoverView is the console's Takeover shape (spec §7.3).
type TakeoverView struct {
	Active    bool   `json:"active"`
	StartedAt int64  `json:"started_at"`
	ExpiresAt int64  `json:"expires_at"`
	Remaining int64  `json:"remaining"`
	Operator  string `json:"operator"`
	Via       string `json:"via"`
	Timeout   int    `json:"timeout"`
	Now       int64  `json:"now"`
}

func (s *Service) takeoverView(rec *model.Record, set model.Settings) TakeoverView {
	now := s.nowMS()
	t := rec.Takeover
	return TakeoverView{
		Active: t.TakenOver(now), StartedAt: t.StartedAt, ExpiresAt: t.ExpiresAt, Remaining: t.Remaining(now),
		Operator: t.Operator, Via: t.Via, Timeout: set.TakeoverTimeout, Now: now,
	}
}

// publishLive sends a live message to the scope's live subject (best
// effort, spec §7.5).
func (s *Service) publishLive(sc binding.Scope, l model.Live) {
	subject, err := s.subj.Internal(Plugin, store.KindLive, sc)
	if err != nil {
		return
	}
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	_ = s.nc.Publish(subject, b)
}

// notify sends a user notice (spec §3.7) and records it once delivered.
// With sync the first try happens before notify returns (a reply that
// starts a takeover sends the notice before itself); retries always run in
// the background.
func (s *Service) notify(ctx context.Context, sc binding.Scope, b binding.Binding, sid string, rec *model.Record, text string, on bool, sync bool) {
	if text == "" || rec.BotUUID == "" {
		return
	}
	startedAt := rec.Takeover.StartedAt
	idem := "takeover:" + sc.String() + ":" + sid + ":" + strconv.FormatInt(startedAt, 10) + ":" + model.OnOff(on)
	msg := wire.SendMessage{BotUUID: rec.BotUUID, TargetType: rec.Type, TargetID: rec.TargetID, MessageChain: wire.Plain(text)}
	gen := rec.Gen
	try := func(ctx context.Context) bool {
		tctx, cancel := context.WithTimeout(ctx, s.cfg.HostTimeout)
		defer cancel()
		if err := s.runner.Host().SendMessage(tctx, b, msg, idem); err != nil {
			return false
		}
		e := &model.Entry{V: 1, ID: model.NoticeEntryID(sc.String(), sid, startedAt, on), Gen: gen, TS: s.nowMS(), Role: model.RoleNotice,
			Parts: []model.Part{{Type: model.PartText, Text: text}}}
		if err := s.storeEntry(ctx, sc, sid, e, e.Parts); err != nil {
			s.log.WarnContext(ctx, "a delivered notice was not recorded", "scope", sc.String(), "sid", sid, "err", err)
			return true
		}
		s.publishLive(sc, model.Live{Type: model.LiveMessage, SID: sid, Data: map[string]any{"sid": sid, "gen": gen, "entry": e}})
		return true
	}
	retries := func(ctx context.Context, delays []time.Duration) {
		for _, d := range delays {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				s.metrics.noticeFailed.Inc()
				return
			case <-t.C:
			}
			if try(ctx) {
				return
			}
		}
		s.metrics.noticeFailed.Inc()
		s.log.ErrorContext(ctx, "a user notice was dropped after its retries", "scope", sc.String(), "sid", sid)
	}
	if sync {
		if try(ctx) {
			return
		}
		s.goBackground(ctx, func(bctx context.Context) { retries(bctx, s.cfg.NoticeRetry) })
		return
	}
	s.goBackground(ctx, func(bctx context.Context) {
		if try(bctx) {
			return
		}
		retries(bctx, s.cfg.NoticeRetry)
	})
}
