package takeover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// Why a chat asks for a human: the cause an alert names. A takeover that
// an operator starts raises no alert: a human has the chat already, so the
// operator chats get the "taken by" note (noteTaken) instead.
const (
	causeTrigger = "trigger" // a trigger word
	causeTool    = "tool"    // the model called request_human
)

// alertPendingMax is how long an unanswered alert keeps repeated triggers
// of its chat quiet; after it a trigger alerts again.
const alertPendingMax = time.Hour

// alertState is a chat's alert record (<scope>.alert.<sid> in the dedupe
// bucket): the number of the last alert and whether an operator has
// answered it since.
type alertState struct {
	N          int   `json:"n"`
	Pending    bool  `json:"pending"`
	RaisedAt   int64 `json:"raised_at"`
	ResolvedAt int64 `json:"resolved_at,omitempty"`
}

// claimState is a chat's "taken by" record (<scope>.claim.<sid> in the
// dedupe bucket): the number of the last note, the takeover and the
// claimer (operator and origin) it named, and when it was raised.
type claimState struct {
	N         int    `json:"n"`
	StartedAt int64  `json:"started_at"`
	Claimer   string `json:"claimer"`
	RaisedAt  int64  `json:"raised_at"`
}

// alertJob is the durable delivery job of one alert, or of one "taken by"
// note (Taken), on the timer stream (subject alert.<scope>.<sid>): what the
// operator chats are told.
type alertJob struct {
	SID      string `json:"sid"`
	N        int    `json:"n"`
	RaisedAt int64  `json:"raised_at"`
	Cause    string `json:"cause,omitempty"`
	Who      string `json:"who"`
	Chat     string `json:"chat"`
	Type     string `json:"type"`
	Preview  string `json:"preview,omitempty"`
	// Taken is a note that Who took the chat over from Origin; the chat it
	// came from (Origin.Chat of an originChat) is not told. StartedAt is
	// the takeover's start: a note whose takeover ended before delivery is
	// dropped.
	Taken     bool   `json:"taken,omitempty"`
	Origin    string `json:"origin,omitempty"`
	From      string `json:"from,omitempty"`
	FromType  string `json:"from_type,omitempty"`
	FromID    string `json:"from_id,omitempty"`
	StartedAt int64  `json:"started_at,omitempty"`
}

// raiseAlert starts one alert for a chat that asks for a human, unless the
// installation names no operator chat, an alert of the chat is still
// pending (not answered, younger than alertPendingMax), or the last one
// is younger than Config.AlertInterval (the per-chat rate limit). The
// gate is one CAS on the chat's alert record, so concurrent triggers on
// several replicas raise one alert; the job is then published to the
// timer stream, where the alert consumer delivers it even after a
// restart.
func (n *notices) raiseAlert(ctx context.Context, ses session, cause, who, preview string) {
	sc, set, sid, rec := ses.sc, ses.set, ses.sid, ses.rec
	if len(set.OperatorChats) == 0 || rec == nil {
		return
	}
	now := n.now.ms()
	var st alertState
	raised := false // KV.Update answers a "no change" with no error
	_, _, err := n.runner.Dedupe().Update(ctx, sc, store.KeyAlert, func(cur []byte, exists bool) ([]byte, error) {
		st, raised = alertState{}, false
		if exists && json.Unmarshal(cur, &st) == nil {
			if st.Pending && now-st.RaisedAt < alertPendingMax.Milliseconds() {
				return nil, bus.ErrNoChange
			}
			if now-st.RaisedAt < n.alertInterval.Milliseconds() {
				return nil, bus.ErrNoChange
			}
		}
		st, raised = alertState{N: st.N + 1, Pending: true, RaisedAt: now}, true
		return json.Marshal(st)
	}, sid)
	if err == nil && !raised {
		return
	}
	if err != nil {
		n.log.WarnContext(ctx, "raising an operator alert failed", "scope", sc.String(), "sid", sid, "err", err)
		return
	}
	chat := rec.ChatName()
	if who == "" {
		who = chat
	}
	job := alertJob{SID: sid, N: st.N, RaisedAt: now, Cause: cause, Who: settings.CutRunes(who, 64), Chat: settings.CutRunes(chat, 64),
		Type: rec.Type, Preview: capPreview(preview)}
	n.queueAlert(ctx, sc, job, "alert")
	n.askedHuman(ctx, ses, now) // escalation.go
}

// queueAlert publishes an alert or note job to the timer stream, where the
// alert consumer delivers it even after a restart. The message id makes a
// second publish of the same job (a retried action) a no-op.
func (n *notices) queueAlert(ctx context.Context, sc binding.Scope, job alertJob, kind string) {
	body, _ := json.Marshal(job)
	subject, err := n.subj.Internal(Plugin, store.KindAlert, sc, job.SID)
	if err == nil {
		_, err = n.js.Publish(ctx, subject, body, jetstream.WithMsgID(kind+"|"+sc.String()+"|"+job.SID+"|"+strconv.Itoa(job.N)))
	}
	if err != nil {
		n.log.WarnContext(ctx, "queueing an operator "+kind+" failed", "scope", sc.String(), "sid", job.SID, "err", err)
	}
}

// noteTaken tells the operator chats, except the one the takeover came
// from, that an operator took a chat over, so that two operators do not
// answer the same chat. rec is the committed record. Like an alert it is
// one CAS on the chat's claim record: no note when the takeover and the
// claimer (operator and origin) are those of the last note (a repeated
// take, a reply's extension), or the last note is younger than
// Config.AlertInterval (the per-chat rate limit).
func (n *notices) noteTaken(ctx context.Context, c pageCall, sid string, rec *model.Record) {
	kind, from := c.Origin.Kind, ""
	if kind == "" {
		kind = originConsole
	}
	if kind == originChat {
		from = c.Origin.Chat.Key()
	}
	if rec == nil || !rec.Takeover.Active || len(noteRecipients(c.Settings, from)) == 0 {
		return
	}
	claimer := c.Operator + "|" + kind + "|" + from
	now := n.now.ms()
	var st claimState
	noted := false // KV.Update answers a "no change" with no error
	_, _, err := n.runner.Dedupe().Update(ctx, c.Scope, store.KeyClaim, func(cur []byte, exists bool) ([]byte, error) {
		st, noted = claimState{}, false
		if exists && json.Unmarshal(cur, &st) == nil {
			if st.StartedAt == rec.Takeover.StartedAt && st.Claimer == claimer {
				return nil, bus.ErrNoChange
			}
			if now-st.RaisedAt < n.alertInterval.Milliseconds() {
				return nil, bus.ErrNoChange
			}
		}
		st, noted = claimState{N: st.N + 1, StartedAt: rec.Takeover.StartedAt, Claimer: claimer, RaisedAt: now}, true
		return json.Marshal(st)
	}, sid)
	if err == nil && !noted {
		return
	}
	if err != nil {
		n.log.WarnContext(ctx, "raising a taken-by note failed", "scope", c.Scope.String(), "sid", sid, "err", err)
		return
	}
	chat := rec.ChatName()
	job := alertJob{SID: sid, N: st.N, RaisedAt: now, Who: settings.CutRunes(c.Operator, 64), Chat: settings.CutRunes(chat, 64), Type: rec.Type,
		Taken: true, Origin: kind, StartedAt: rec.Takeover.StartedAt}
	if kind == originChat {
		job.From, job.FromType, job.FromID = from, c.Origin.Chat.Type, settings.CutRunes(c.Origin.Chat.ID, 64)
		if from == model.SessionKey(rec.BotUUID, rec.Type, rec.TargetID) {
			job.Origin = originItself
		}
	}
	n.queueAlert(ctx, c.Scope, job, "taken")
}

// noteRecipients is the operator chats a "taken by" note goes to: all of
// them but the chat of session key from ("" when the takeover came from
// no chat).
func noteRecipients(set model.Settings, from string) []model.OperatorChat {
	var out []model.OperatorChat
	for _, oc := range set.OperatorChats {
		if from == "" || oc.Key() != from {
			out = append(out, oc)
		}
	}
	return out
}

// capPreview makes the one-line quote an alert shows: at most
// model.MaxAlertPreview runes, whitespace collapsed, an ellipsis when cut.
func capPreview(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if cut := settings.CutRunes(s, model.MaxAlertPreview); cut != s {
		return cut + "…"
	}
	return s
}

// resolveAlert marks a chat's pending alert answered (an operator
// replied, released or marked it handled), so the chat's next request
// alerts again. Installations without operator chats skip the write.
func (n *notices) resolveAlert(ctx context.Context, sc binding.Scope, set model.Settings, sid string) {
	if len(set.OperatorChats) == 0 {
		return
	}
	now := n.now.ms()
	_, _, err := n.runner.Dedupe().Update(ctx, sc, store.KeyAlert, func(cur []byte, exists bool) ([]byte, error) {
		var st alertState
		if !exists || json.Unmarshal(cur, &st) != nil || !st.Pending {
			return nil, bus.ErrNoChange
		}
		st.Pending, st.ResolvedAt = false, now
		return json.Marshal(st)
	}, sid)
	if err != nil {
		n.log.WarnContext(ctx, "resolving an operator alert failed", "scope", sc.String(), "sid", sid, "err", err)
	}
}

// alertKey is the idempotency key of one alert (kind "alert") or note
// ("taken") to one operator chat: stable over retries and replicas,
// scoped, never reused by another alert or note.
func alertKey(sc binding.Scope, kind, sid string, n int, o model.OperatorChat) string {
	h := sha256.Sum256([]byte(o.Key()))
	return sendKey(sc, kind, sid, strconv.Itoa(n), hex.EncodeToString(h[:8]))
}

// handleAlert delivers a queued alert to every operator chat of the
// installation's current config, and a "taken by" note to every one but
// the chat it came from (spec §3.7's retry rules: the first try, then one
// more after each Config.NoticeRetry delay, then it is dropped, logged and
// counted). An alert answered before it was delivered, a note whose
// takeover ended meanwhile, either superseded by a newer one, or of a
// session deleted meanwhile, is not sent.
func (n *notices) handleAlert(ctx context.Context, f *bus.Fired) {
	var job alertJob
	decoded := json.Unmarshal(f.Data, &job) == nil
	a, ok := n.activeFired(ctx, f, job.SID, decoded, "alert")
	if !ok {
		return
	}
	sc := f.Scope
	if job.Taken {
		if e, err := n.runner.Dedupe().Get(ctx, sc, store.KeyClaim, job.SID); err == nil {
			var st claimState
			if json.Unmarshal(e.Value(), &st) == nil && st.N != job.N {
				_ = f.Ack(ctx) // superseded by a newer note
				return
			}
		}
	} else if e, err := n.runner.Dedupe().Get(ctx, sc, store.KeyAlert, job.SID); err == nil {
		var st alertState
		if json.Unmarshal(e.Value(), &st) == nil && (st.N != job.N || !st.Pending) {
			_ = f.Ack(ctx) // answered already, or superseded by a newer alert
			return
		}
	}
	// a session deleted while its alert waited is not alerted later; a
	// note of a takeover that ended meanwhile would mislead
	if rec, _, err := n.st.GetRecord(ctx, sc, job.SID); err == nil &&
		(rec == nil || job.Taken && (!rec.Takeover.TakenOver(n.now.ms()) || rec.Takeover.StartedAt != job.StartedAt)) {
		_ = f.Ack(ctx)
		return
	}
	set := n.settingsOf(sc, a)
	text, kind, to := n.alertText(set, job), "alert", set.OperatorChats
	if job.Taken {
		text, kind = n.noteText(set, job), "taken"
		to = noteRecipients(set, job.From)
	}
	text = n.withAISummary(ctx, f, a.Binding, set, job, text)
	failed := 0
	for _, o := range to {
		tctx, cancel := context.WithTimeout(ctx, n.hostTimeout)
		err := n.runner.Host().SendMessage(tctx, a.Binding, wire.SendMessage{BotUUID: o.BotUUID, TargetType: o.Type, TargetID: o.ID,
			MessageChain: wire.Plain(text)}, alertKey(sc, kind, job.SID, job.N, o))
		cancel()
		if err != nil {
			// a retry resends to every chat: the key lets the host drop the
			// ones already delivered
			failed++
		}
	}
	if failed == 0 {
		_ = f.Ack(ctx)
		return
	}
	if try := int(f.Delivered); try <= len(n.noticeRetry) {
		_ = f.Nak(n.noticeRetry[try-1])
		return
	}
	n.metrics.alertFailed.Inc()
	n.log.ErrorContext(ctx, "an operator alert was dropped after its retries", "scope", sc.String(), "sid", job.SID, "failed_chats", failed)
	_ = f.Term()
}

// alertText is the alert in the installation's language: who, which
// chat, why, how long it has waited, the capped quote and how to answer
// (the commands with the installation's command_prefix: no user typed
// one).
func (n *notices) alertText(set model.Settings, job alertJob) string {
	cat := n.catalog
	lang := set.Language
	kind := cat.Text(lang, "chat.type."+job.Type, nil)
	args := map[string]string{
		"who": job.Who, "chat": job.Chat, "kind": kind,
		"cause":  cat.Text(lang, "alert.cause."+job.Cause, nil),
		"waited": formatWait(lang, max(n.now.ms()-job.RaisedAt, 0)),
	}
	var b strings.Builder
	b.WriteString(text(n.catalog, set, "alert.head", args))
	if job.Preview != "" {
		b.WriteString("\n")
		b.WriteString(text(n.catalog, set, "alert.preview", map[string]string{"preview": job.Preview}))
	}
	b.WriteString("\n")
	b.WriteString(text(n.catalog, set, "alert.howto", args))
	return b.String()
}

// originItself is a note's origin when the command came from the taken
// chat itself (an admin's pause).
const originItself = "itself"

// noteText is the "taken by" note in the installation's language: which
// chat, by whom, from where.
func (n *notices) noteText(set model.Settings, job alertJob) string {
	cat, lang := n.catalog, set.Language
	who := job.Who
	if who == "" || who == hostOperator {
		who = cat.Text(lang, "note.who.host", nil)
	}
	where := cat.Text(lang, "note.where."+job.Origin, map[string]string{
		"kind": cat.Text(lang, "chat.type."+job.FromType, nil), "id": job.FromID,
	})
	return text(n.catalog, set, "note.taken", map[string]string{
		"who": who, "where": where, "chat": job.Chat, "kind": cat.Text(lang, "chat.type."+job.Type, nil),
	})
}

// formatWait renders a wait as "45s", "12m" or "2h5m" (秒, 分钟, 小时 in
// zh_Hans).
func formatWait(lang string, ms int64) string {
	sec := ms / 1000
	units := [3]string{"s", "m", "h"}
	if lang == model.LanguageZhHans {
		units = [3]string{"秒", "分钟", "小时"}
	}
	switch {
	case sec < 60:
		return strconv.FormatInt(sec, 10) + units[0]
	case sec < 3600:
		return strconv.FormatInt(sec/60, 10) + units[1]
	}
	out := strconv.FormatInt(sec/3600, 10) + units[2]
	if m := sec % 3600 / 60; m > 0 {
		out += strconv.FormatInt(m, 10) + units[1]
	}
	return out
}
