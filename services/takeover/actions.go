package takeover

import (
	"context"
	"strconv"
	"time"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// afterTakeover follows a committed start or extension: the schedule, the
// live event and, for a start, the takeover notice (spec §6, §3.7). With
// sync the notice's first try is made before returning (a reply's notice
// precedes the reply).
func (n *notices) afterTakeover(ctx context.Context, ses session, tr model.Transition, sync bool) {
	if err := n.st.Schedule(ctx, ses.sc, ses.sid, ses.rec.Takeover.ExpiresAt); err != nil {
		// the resume sweep or the next action re-arms it; the deadline still
		// holds for every decision
		n.log.ErrorContext(ctx, "arming the takeover expiry failed", "scope", ses.sc.String(), "sid", ses.sid, "err", err)
	}
	n.publishLive(ses.sc, model.Live{Type: model.LiveTakeover, SID: ses.sid, Data: n.takeoverView(ses.rec, ses.set)})
	n.armIdle(ctx, ses) // escalation.go
	if tr == model.Started {
		n.notify(ctx, ses, ses.set.NoticeOnTakeover, true, sync)
	}
}

// afterRelease follows a committed release: the timer is removed (a manual
// release), the live event, and the release notice.
func (n *notices) afterRelease(ctx context.Context, ses session, cancelTimer bool) {
	if cancelTimer {
		if err := n.st.CancelSchedule(ctx, ses.sc, ses.sid); err != nil {
			// a stray fire finds the record inactive and only acks
			n.log.WarnContext(ctx, "removing the takeover expiry failed", "scope", ses.sc.String(), "sid", ses.sid, "err", err)
		}
	}
	n.publishLive(ses.sc, model.Live{Type: model.LiveTakeover, SID: ses.sid, Data: n.takeoverView(ses.rec, ses.set)})
	// the satisfaction question follows the release notice's first try
	ask := surveyWanted(ses)
	n.notify(ctx, ses, ses.set.NoticeOnRelease, false, ask)
	n.resolveAlert(ctx, ses.sc, ses.set, ses.sid)
	if ask {
		n.askSatisfaction(ctx, ses)
	}
	n.relayReleased(ctx, ses) // relay.go
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

// takeoverView is rec's takeover as the console shows it now.
func (n *notices) takeoverView(rec *model.Record, set model.Settings) TakeoverView {
	now := n.now.ms()
	t := rec.Takeover
	return TakeoverView{
		Active: t.TakenOver(now), StartedAt: t.StartedAt, ExpiresAt: t.ExpiresAt, Remaining: t.Remaining(now),
		Operator: t.Operator, Via: t.Via, Timeout: set.TakeoverTimeout, Now: now,
	}
}

// notify sends a user notice (spec §3.7) and records it once delivered.
// With sync the first try happens before notify returns (a reply that
// starts a takeover sends the notice before itself); retries always run in
// the background.
func (n *notices) notify(ctx context.Context, ses session, text string, on bool, sync bool) {
	sc, b, sid, rec := ses.sc, ses.b, ses.sid, ses.rec
	if text == "" || rec.BotUUID == "" {
		return
	}
	startedAt := rec.Takeover.StartedAt
	idem := sendKey(sc, sid, strconv.FormatInt(startedAt, 10), model.OnOff(on))
	msg := wire.SendMessage{BotUUID: rec.BotUUID, TargetType: rec.Type, TargetID: rec.TargetID, MessageChain: wire.Plain(text)}
	gen := rec.Gen
	try := func(ctx context.Context) bool {
		tctx, cancel := context.WithTimeout(ctx, n.hostTimeout)
		defer cancel()
		if err := n.runner.Host().SendMessage(tctx, b, msg, idem); err != nil {
			return false
		}
		e := &model.Entry{V: 1, ID: model.NoticeEntryID(sc.String(), sid, startedAt, on), Gen: gen, TS: n.now.ms(), Role: model.RoleNotice,
			Parts: []model.Part{{Type: model.PartText, Text: text}}}
		if err := storeEntry(ctx, n.st, sc, sid, e, e.Parts); err != nil {
			n.log.WarnContext(ctx, "a delivered notice was not recorded", "scope", sc.String(), "sid", sid, "err", err)
			return true
		}
		n.publishLive(sc, model.Live{Type: model.LiveMessage, SID: sid, Data: map[string]any{"sid": sid, "gen": gen, "entry": e}})
		return true
	}
	retries := func(ctx context.Context, delays []time.Duration) {
		for _, d := range delays {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				n.metrics.noticeFailed.Inc()
				return
			case <-t.C:
			}
			if try(ctx) {
				return
			}
		}
		n.metrics.noticeFailed.Inc()
		n.log.ErrorContext(ctx, "a user notice was dropped after its retries", "scope", sc.String(), "sid", sid)
	}
	if sync {
		if try(ctx) {
			return
		}
		n.goBackground(ctx, func(bctx context.Context) { retries(bctx, n.noticeRetry) })
		return
	}
	n.goBackground(ctx, func(bctx context.Context) {
		if try(bctx) {
			return
		}
		retries(bctx, n.noticeRetry)
	})
}
