package takeover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// Why a chat asks for a human: the cause an alert names.
const (
	causeTrigger  = "trigger"  // a trigger word
	causeTool     = "tool"     // the model called request_human
	causeTakeover = "takeover" // a takeover started elsewhere (console, command, reply)
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

// alertJob is the durable delivery job of one alert on the timer stream
// (subject alert.<scope>.<sid>): what every operator chat is told.
type alertJob struct {
	SID      string `json:"sid"`
	N        int    `json:"n"`
	RaisedAt int64  `json:"raised_at"`
	Cause    string `json:"cause"`
	Who      string `json:"who"`
	Chat     string `json:"chat"`
	Type     string `json:"type"`
	Preview  string `json:"preview"`
}

// raiseAlert starts one alert for a chat that asks for a human, unless the
// installation names no operator chat, an alert of the chat is still
// pending (not answered, younger than alertPendingMax), or the last one
// is younger than Config.AlertInterval (the per-chat rate limit). The
// gate is one CAS on the chat's alert record, so concurrent triggers on
// several replicas raise one alert; the job is then published to the
// timer stream, where the alert consumer delivers it even after a
// restart.
func (s *Service) raiseAlert(ctx context.Context, sc binding.Scope, set model.Settings, sid string, rec *model.Record, cause, who, preview string) {
	if len(set.OperatorChats) == 0 || rec == nil {
		return
	}
	now := s.nowMS()
	var st alertState
	_, _, err := s.runner.Dedupe().Update(ctx, sc, store.KeyAlert, func(cur []byte, exists bool) ([]byte, error) {
		st = alertState{}
		if exists && json.Unmarshal(cur, &st) == nil {
			if st.Pending && now-st.RaisedAt < alertPendingMax.Milliseconds() {
				return nil, bus.ErrNoChange
			}
			if now-st.RaisedAt < s.cfg.AlertInterval.Milliseconds() {
				return nil, bus.ErrNoChange
			}
		}
		st = alertState{N: st.N + 1, Pending: true, RaisedAt: now}
		return json.Marshal(st)
	}, sid)
	if errors.Is(err, bus.ErrNoChange) {
		return
	}
	if err != nil {
		s.log.WarnContext(ctx, "raising an operator alert failed", "scope", sc.String(), "sid", sid, "err", err)
		return
	}
	chat := rec.Name
	if chat == "" {
		chat = rec.TargetID
	}
	if who == "" {
		who = chat
	}
	job := alertJob{SID: sid, N: st.N, RaisedAt: now, Cause: cause, Who: model.CutRunes(who, 64), Chat: model.CutRunes(chat, 64),
		Type: rec.Type, Preview: capPreview(preview)}
	body, _ := json.Marshal(job)
	subject, err := s.subj.Internal(Plugin, store.KindAlert, sc, sid)
	if err == nil {
		_, err = s.js.Publish(ctx, subject, body, jetstream.WithMsgID("alert|"+sc.String()+"|"+sid+"|"+strconv.Itoa(st.N)))
	}
	if err != nil {
		s.log.WarnContext(ctx, "queueing an operator alert failed", "scope", sc.String(), "sid", sid, "err", err)
	}
}

// capPreview makes the one-line quote an alert shows: at most
// model.MaxAlertPreview runes, whitespace collapsed, an ellipsis when cut.
func capPreview(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if cut := model.CutRunes(s, model.MaxAlertPreview); cut != s {
		return cut + "…"
	}
	return s
}

// resolveAlert marks a chat's pending alert answered (an operator
// replied, released or marked it handled), so the chat's next request
// alerts again. Installations without operator chats skip the write.
func (s *Service) resolveAlert(ctx context.Context, sc binding.Scope, set model.Settings, sid string) {
	if len(set.OperatorChats) == 0 {
		return
	}
	now := s.nowMS()
	_, _, err := s.runner.Dedupe().Update(ctx, sc, store.KeyAlert, func(cur []byte, exists bool) ([]byte, error) {
		var st alertState
		if !exists || json.Unmarshal(cur, &st) != nil || !st.Pending {
			return nil, bus.ErrNoChange
		}
		st.Pending, st.ResolvedAt = false, now
		return json.Marshal(st)
	}, sid)
	if err != nil && !errors.Is(err, bus.ErrNoChange) {
		s.log.WarnContext(ctx, "resolving an operator alert failed", "scope", sc.String(), "sid", sid, "err", err)
	}
}

// alertKey is the idempotency key of one alert to one operator chat:
// stable over retries and replicas, scoped, never reused by another alert.
func alertKey(sc binding.Scope, sid string, n int, o model.OperatorChat) string {
	h := sha256.Sum256([]byte(o.Key()))
	return "takeover:" + sc.String() + ":alert:" + sid + ":" + strconv.Itoa(n) + ":" + hex.EncodeToString(h[:8])
}

// handleAlert delivers a queued alert to every operator chat of the
// installation's current config (spec §3.7's retry rules: the first try,
// then one more after each Config.NoticeRetry delay, then it is dropped,
// logged and counted). An alert answered before it was delivered, or of a
// session deleted meanwhile, is not sent.
func (s *Service) handleAlert(ctx context.Context, f *bus.Fired) {
	var job alertJob
	if json.Unmarshal(f.Data, &job) != nil || !model.ValidSID(job.SID) || len(f.IDs) != 1 || f.IDs[0] != job.SID {
		s.log.ErrorContext(ctx, "malformed alert message", "scope", f.Scope.String())
		_ = f.Term()
		return
	}
	sc := f.Scope
	a, err := s.runner.Authority(ctx, sc)
	if err != nil {
		_ = f.Nak(5 * time.Second)
		return
	}
	if a == nil || !a.Active() {
		_ = f.Ack(ctx)
		return
	}
	if e, err := s.runner.Dedupe().Get(ctx, sc, store.KeyAlert, job.SID); err == nil {
		var st alertState
		if json.Unmarshal(e.Value(), &st) == nil && (st.N != job.N || !st.Pending) {
			_ = f.Ack(ctx) // answered already, or superseded by a newer alert
			return
		}
	}
	// a session deleted while its alert waited is not alerted later
	if rec, _, err := s.st.GetRecord(ctx, sc, job.SID); err == nil && rec == nil {
		_ = f.Ack(ctx)
		return
	}
	cfg, err := s.runner.OpenConfig(sc, a)
	if err != nil {
		cfg = nil
	}
	set := s.settingsFor(sc, a.Binding, cfg)
	text := s.alertText(set, job)
	failed := 0
	for _, o := range set.OperatorChats {
		tctx, cancel := context.WithTimeout(ctx, s.cfg.HostTimeout)
		err := s.runner.Host().SendMessage(tctx, a.Binding, bus.SendMessage{BotUUID: o.BotUUID, TargetType: o.Type, TargetID: o.ID,
			MessageChain: bus.Plain(text)}, alertKey(sc, job.SID, job.N, o))
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
	if try := int(f.Delivered); try <= len(s.cfg.NoticeRetry) {
		_ = f.Nak(s.cfg.NoticeRetry[try-1])
		return
	}
	s.metrics.alertFailed.Inc()
	s.log.ErrorContext(ctx, "an operator alert was dropped after its retries", "scope", sc.String(), "sid", job.SID, "failed_chats", failed)
	_ = f.Term()
}

// alertText is the alert in the installation's language: who, which
// chat, why, how long it has waited, the capped quote and how to answer.
func (s *Service) alertText(set model.Settings, job alertJob) string {
	cat := s.catalog
	lang := set.Language
	kind := cat.Text(lang, "chat.type."+job.Type, nil)
	args := map[string]string{
		"who": job.Who, "chat": job.Chat, "kind": kind,
		"cause":   cat.Text(lang, "alert.cause."+job.Cause, nil),
		"waited":  formatWait(lang, max(s.nowMS()-job.RaisedAt, 0)),
		"command": commandWord,
	}
	var b strings.Builder
	b.WriteString(cat.Text(lang, "alert.head", args))
	if job.Preview != "" {
		b.WriteString("\n")
		b.WriteString(cat.Text(lang, "alert.preview", map[string]string{"preview": job.Preview}))
	}
	b.WriteString("\n")
	b.WriteString(cat.Text(lang, "alert.howto", args))
	return b.String()
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
