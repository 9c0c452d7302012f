package takeover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// Escalation (settings in model.Escalation): a chat that asked
// for a human is told its place in the queue (or, outside the working
// hours, when operators are back); if no operator takes it within
// escalate_after it is alerted again to every operator chat, and after as
// long again to the fallback chats; a chat whose operator says nothing for
// operator_idle_return goes back to the queue; a user's cancel word ends it
// all. Timers are JetStream schedules (one per session on the timer
// stream, consumer takeover-escalate), never in-process timers: a restart
// loses none. Each fire is only a wake-up: the stored record and alert
// state decide, as for the expiry.

// Escalation kinds of a schedule.
const (
	escQueue = "queue" // a waiting chat's re-alert
	escIdle  = "idle"  // a taken chat's idle return
)

// cancelOperator is the audit operator of a user's own cancel.
const cancelOperator = "user"

// escalationBody is the body of an escalation schedule. Ref is what the
// schedule was armed for: the alert's raised_at (queue) or the takeover's
// last_human_at (idle); a fire whose Ref no longer matches is stale.
type escalationBody struct {
	SID   string `json:"sid"`
	Kind  string `json:"kind"`
	Level int    `json:"level,omitempty"`
	Ref   int64  `json:"ref"`
}

// askedHuman follows a raised alert: the user's queue or out-of-hours
// notice and the first re-alert's schedule.
func (n *notices) askedHuman(ctx context.Context, ses session, raisedAt int64) {
	sc, set, sid, rec := ses.sc, ses.set, ses.sid, ses.rec
	if set.EscalateAfter > 0 {
		n.armEscalation(ctx, sc, escalationBody{SID: sid, Kind: escQueue, Level: 1, Ref: raisedAt}, raisedAt+int64(set.EscalateAfter)*1000)
	}
	if rec.BotUUID == "" {
		return
	}
	cancelWord := ""
	if len(set.CancelWords) > 0 {
		cancelWord = set.CancelWords[0]
	}
	var msg, kind string
	switch {
	case !set.InWorkingHours(raisedAt):
		kind, msg = "ooh", set.OutOfHoursReply
		if msg == "" {
			msg = n.catalog.Text(set.Language, "escalate.out_of_hours", map[string]string{"hours": set.WorkingHours, "zone": set.Timezone, "cancel": cancelWord})
		}
	case set.QueueNotice:
		place, err := n.queuePlace(ctx, sc, sid, rec)
		if err != nil {
			n.log.WarnContext(ctx, "the queue place could not be read", "scope", sc.String(), "sid", sid, "err", err)
			return
		}
		kind, msg = "queue", n.catalog.Text(set.Language, "escalate.queue", map[string]string{"n": strconv.Itoa(place), "cancel": cancelWord})
	default:
		return
	}
	key := sendKey(sc, sid, kind, strconv.FormatInt(raisedAt, 10))
	to := model.OperatorChat{BotUUID: rec.BotUUID, Type: rec.Type, ID: rec.TargetID}
	n.goBackground(ctx, func(ctx context.Context) { n.sendWithRetry(ctx, ses.b, to, wire.Plain(msg), key) })
}

// queuePlace is the chat's place among the scope's chats waiting for a
// human (unread and held by no operator), oldest request first.
func (n *notices) queuePlace(ctx context.Context, sc binding.Scope, sid string, rec *model.Record) (int, error) {
	stored, err := n.st.ListRecords(ctx, sc)
	if err != nil {
		return 0, err
	}
	now := n.now.ms()
	place := 1
	for _, l := range stored {
		r := l.Rec
		if l.SID == sid || r == nil || model.IsLegacy(r) || !waiting(r, now) {
			continue
		}
		if r.TriggeredAt < rec.TriggeredAt || r.TriggeredAt == rec.TriggeredAt && l.SID < sid {
			place++
		}
	}
	return place, nil
}

// waiting reports whether a chat waits for a human: it asked (unread) and
// no operator holds it (a trigger's own takeover holds the AI, not a human).
func waiting(r *model.Record, now int64) bool {
	return r.Unread && !(r.Takeover.TakenOver(now) && r.Takeover.Operator != "")
}

// armIdle follows a takeover start or extension: with operator_idle_return
// on and an operator holding the chat, the idle return is scheduled from
// the operator's last message (each reply re-arms it).
func (n *notices) armIdle(ctx context.Context, ses session) {
	t := ses.rec.Takeover
	if ses.set.OperatorIdle <= 0 || t.Operator == "" || !t.Active {
		return
	}
	// not before now: on resume the time may have passed while paused
	at := max(t.LastHumanAt+int64(ses.set.OperatorIdle)*1000, n.now.ms())
	if at >= t.ExpiresAt {
		return // the expiry comes first
	}
	n.armEscalation(ctx, ses.sc, escalationBody{SID: ses.sid, Kind: escIdle, Ref: t.LastHumanAt}, at)
}

// rearmEscalation gives a chat its escalation timer back on resume (the
// fires of a paused installation are acked and dropped): a chat still
// waiting for the request its alert record holds gets the re-alert, due
// escalate_after after the request or now if that passed; a chat an
// operator holds gets the idle return. The re-alert starts again at level
// 1: a level the host already delivered is dropped there by its key, and
// level 2 follows as usual.
func (n *notices) rearmEscalation(ctx context.Context, ses session) {
	now := n.now.ms()
	if ses.rec.Takeover.TakenOver(now) && ses.rec.Takeover.Operator != "" {
		n.armIdle(ctx, ses)
		return
	}
	if ses.set.EscalateAfter <= 0 || !waiting(ses.rec, now) {
		return
	}
	e, err := n.runner.Dedupe().Get(ctx, ses.sc, store.KeyAlert, ses.sid)
	if err != nil {
		return // no alert record: nothing raised to escalate
	}
	var st alertState
	if json.Unmarshal(e.Value(), &st) != nil || !st.Pending {
		return
	}
	at := max(st.RaisedAt+int64(ses.set.EscalateAfter)*1000, now)
	n.armEscalation(ctx, ses.sc, escalationBody{SID: ses.sid, Kind: escQueue, Level: 1, Ref: st.RaisedAt}, at)
}

func (n *notices) armEscalation(ctx context.Context, sc binding.Scope, body escalationBody, at int64) {
	b, _ := json.Marshal(body)
	if err := n.st.ScheduleEscalation(ctx, sc, body.SID, at, b); err != nil {
		n.log.WarnContext(ctx, "arming an escalation failed", "scope", sc.String(), "sid", body.SID, "kind", body.Kind, "err", err)
	}
}

// handleEscalate handles a fired escalation schedule.
func (n *notices) handleEscalate(ctx context.Context, f *bus.Fired) {
	var body escalationBody
	decoded := json.Unmarshal(f.Data, &body) == nil && (body.Kind == escQueue || body.Kind == escIdle)
	a, rec, ok := n.loadFired(ctx, f, body.SID, decoded, "escalation")
	if !ok {
		return
	}
	if rec == nil || model.IsLegacy(rec) {
		_ = f.Ack(ctx)
		return
	}
	sc := f.Scope
	ses := session{sc: sc, b: a.Binding, set: n.settingsOf(sc, a), sid: body.SID, rec: rec}
	var err error
	var done bool
	if body.Kind == escQueue {
		done, err = n.reAlert(ctx, ses, body)
	} else {
		done, err = n.idleReturn(ctx, ses, body)
	}
	switch {
	case err != nil:
		_ = f.Nak(retryFired)
	case done:
		_ = f.Ack(ctx)
	case int(f.Delivered) <= len(n.noticeRetry):
		_ = f.Nak(n.noticeRetry[f.Delivered-1])
	default:
		n.metrics.alertFailed.Inc()
		n.log.ErrorContext(ctx, "an escalation was dropped after its retries", "scope", sc.String(), "sid", body.SID)
		_ = f.Term()
	}
}

// reAlert alerts a chat still waiting for the same request again: level 1
// to every operator chat (and arms level 2), level 2 to the fallback
// chats. It reports false when a send failed (the fire is retried; the
// keys let the host drop what was delivered).
func (n *notices) reAlert(ctx context.Context, ses session, body escalationBody) (bool, error) {
	sc, set, rec := ses.sc, ses.set, ses.rec
	now := n.now.ms()
	if !waiting(rec, now) {
		return true, nil
	}
	e, err := n.runner.Dedupe().Get(ctx, sc, store.KeyAlert, body.SID)
	if err != nil {
		return true, nil //nolint:nilerr // no alert record: nothing to escalate
	}
	var st alertState
	if json.Unmarshal(e.Value(), &st) != nil || !st.Pending || st.RaisedAt != body.Ref {
		return true, nil // answered, or superseded by a newer request
	}
	to := set.OperatorChats
	if body.Level >= 2 {
		to = set.FallbackChats
	}
	chat := rec.ChatName()
	msg := text(n.catalog, set, "escalate.alert", map[string]string{
		"wait": formatWait(set.Language, max(now-body.Ref, 0)), "kind": n.catalog.Text(set.Language, "chat.type."+rec.Type, nil),
		"chat": settings.CutRunes(chat, 64),
	})
	failed := 0
	for _, o := range to {
		tctx, cancel := context.WithTimeout(ctx, n.hostTimeout)
		err := n.runner.Host().SendMessage(tctx, ses.b, wire.SendMessage{BotUUID: o.BotUUID, TargetType: o.Type, TargetID: o.ID,
			MessageChain: wire.Plain(msg)}, alertKey(sc, "escalate"+strconv.Itoa(body.Level), body.SID, st.N, o))
		cancel()
		if err != nil {
			failed++
		}
	}
	if failed > 0 {
		return false, nil
	}
	if body.Level == 1 && len(set.FallbackChats) > 0 && set.EscalateAfter > 0 {
		next := body
		next.Level = 2
		n.armEscalation(ctx, sc, next, now+int64(set.EscalateAfter)*1000)
	}
	return true, nil
}

// idleReturn returns a chat whose operator said nothing since body.Ref to
// the queue: the takeover ends (reason idle), the chat is unread again and
// alerted, and the operator chats are told.
func (n *notices) idleReturn(ctx context.Context, ses session, body escalationBody) (bool, error) {
	sc, set := ses.sc, ses.set
	now := n.now.ms()
	idle := int64(set.OperatorIdle) * 1000
	t := ses.rec.Takeover
	if idle <= 0 || !t.TakenOver(now) || t.Operator == "" || t.LastHumanAt != body.Ref {
		return true, nil // off, over, or the operator spoke since (re-armed)
	}
	if now < t.LastHumanAt+idle {
		// the service's clock is behind the schedule's: wake up again
		n.armEscalation(ctx, sc, body, t.LastHumanAt+idle)
		return true, nil
	}
	operator := t.Operator
	rec, rev, err := n.st.UpdateRecord(ctx, sc, body.SID, func(cur *model.Record) (*model.Record, error) {
		if cur == nil || !cur.Takeover.TakenOver(now) || cur.Takeover.LastHumanAt != body.Ref || cur.Takeover.Operator == "" {
			return nil, store.ErrNoChange
		}
		r := cur.Clone()
		r.Takeover.Release(now, "", model.ReasonIdle)
		r.Unread, r.TriggeredAt, r.UpdatedAt = true, now, now
		return r, nil
	})
	if err != nil {
		return false, err
	}
	if rec == nil || rec.Takeover.ReleaseReason != model.ReasonIdle || rec.Takeover.ReleasedAt != now {
		return true, nil
	}
	n.view.ApplyRecord(sc, body.SID, rec, rev)
	ses.rec = rec
	n.afterRelease(ctx, ses, true)
	chat := rec.ChatName()
	msg := text(n.catalog, set, "escalate.idle", map[string]string{
		"kind": n.catalog.Text(set.Language, "chat.type."+rec.Type, nil), "chat": settings.CutRunes(chat, 64),
		"operator": operator, "wait": formatWait(set.Language, idle),
	})
	for _, o := range set.OperatorChats {
		h := sha256.Sum256([]byte(o.Key()))
		key := sendKey(sc, "idle", body.SID, strconv.FormatInt(body.Ref, 10), hex.EncodeToString(h[:8]))
		n.goBackground(ctx, func(ctx context.Context) { n.sendWithRetry(ctx, ses.b, o, wire.Plain(msg), key) })
	}
	n.requeue(ctx, ses, now)
	return true, nil
}

// requeue puts a chat back in the queue as a new request: its alert record
// is pending again from now (the idle note above was its alert, so no
// alert job is queued and the per-chat alert interval does not apply),
// then the user's queue notice and the re-alert follow as for any request.
func (n *notices) requeue(ctx context.Context, ses session, now int64) {
	_, _, err := n.runner.Dedupe().Update(ctx, ses.sc, store.KeyAlert, func(cur []byte, exists bool) ([]byte, error) {
		var st alertState
		if exists {
			_ = json.Unmarshal(cur, &st)
		}
		return json.Marshal(alertState{N: st.N + 1, Pending: true, RaisedAt: now})
	}, ses.sid)
	if err != nil {
		n.log.WarnContext(ctx, "putting a chat back in the queue failed", "scope", ses.sc.String(), "sid", ses.sid, "err", err)
		return
	}
	n.askedHuman(ctx, ses, now)
}

// cancelEvent answers a user's cancel word in a chat waiting for a human
// or taken over: the AI is blocked for the cancel word itself (the
// service answers it), and off the event's path the takeover is released,
// the chat marked handled and the user told the AI is back. It reports
// false for every other message.
func (o *ops) cancelEvent(ctx context.Context, inv *bus.Invocation, set model.Settings, data model.EventData, lid string) (wire.EventReply, bool) {
	ev := inv.Event
	if len(set.CancelWords) == 0 || inv.Authority.State != bus.StateActive {
		return wire.EventReply{}, false
	}
	// the view first (memory), so an ordinary chat's message is not
	// parsed twice
	sid := model.SID(model.SessionKey(ev.BotUUID, data.LauncherType, lid))
	e, ok := o.view.Lookup(store.SessionKey(inv.Scope, sid))
	now := o.now.ms()
	if !ok || e.Head == nil || !(e.Head.Unread || e.TakenOver(now)) {
		return wire.EventReply{}, false
	}
	if !set.IsCancel(model.ParseChain(data.Chain()).TriggerText()) {
		return wire.EventReply{}, false
	}
	taken := e.TakenOver(now)
	c := pageCall{Scope: inv.Scope, Binding: inv.Binding, Settings: set, Operator: cancelOperator,
		Origin: origin{Kind: originChat, Chat: model.OperatorChat{BotUUID: ev.BotUUID, Type: data.LauncherType, ID: lid}}}
	invID := inv.ID
	o.notices.goBackground(ctx, func(ctx context.Context) {
		if taken {
			if _, err := o.operate(ctx, c, PageRequest{Op: opRelease, SID: sid}); err != nil {
				o.log.WarnContext(ctx, "a user's cancel did not release the chat", "scope", c.Scope.String(), "sid", sid, "err", err)
				return
			}
		}
		if _, err := o.operate(ctx, c, PageRequest{Op: opMarkHandled, SID: sid}); err != nil {
			o.log.WarnContext(ctx, "a user's cancel did not mark the chat handled", "scope", c.Scope.String(), "sid", sid, "err", err)
			return
		}
		if err := o.st.CancelEscalation(ctx, c.Scope, sid); err != nil {
			o.log.WarnContext(ctx, "removing an escalation failed", "scope", c.Scope.String(), "sid", sid, "err", err)
		}
		sum := sha256.Sum256([]byte(invID))
		to := model.OperatorChat{BotUUID: ev.BotUUID, Type: data.LauncherType, ID: lid}
		o.notices.sendWithRetry(ctx, c.Binding, to, wire.Plain(text(o.catalog, set, "escalate.cancelled", nil)),
			sendKey(c.Scope, sid, "cancel", hex.EncodeToString(sum[:16])))
	})
	return wire.EventReply{PreventDefault: true, PreventPostorder: true}, true
}
