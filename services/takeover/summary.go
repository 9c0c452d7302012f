package takeover

import (
	"context"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// Summary is a session in the list (spec §7.3).
type Summary struct {
	SID           string        `json:"sid"`
	SessionKey    string        `json:"session_key"`
	Type          string        `json:"type"`
	TargetID      string        `json:"target_id"`
	Name          string        `json:"name"`
	BotUUID       string        `json:"bot_uuid"`
	BotName       string        `json:"bot_name"`
	Adapter       string        `json:"adapter"`
	Legacy        bool          `json:"legacy"`
	MemberCount   int           `json:"member_count"`
	LastMsgAt     int64         `json:"last_msg_at"`
	LastPreview   model.Preview `json:"last_msg_preview"`
	Unread        bool          `json:"unread"`
	TriggeredWord string        `json:"triggered_word"`
	Takeover      *TakeoverView `json:"takeover,omitempty"`
	Error         string        `json:"error,omitempty"`
	// Satisfaction is the question asked after the last release and its
	// score, when one was asked.
	Satisfaction *model.Satisfaction `json:"satisfaction,omitempty"`
}

// summary builds a session's Summary as the live events show it (the
// recording's and the tool's); bot names come from the cache without
// waiting.
func (n *notices) summary(ctx context.Context, sc binding.Scope, b binding.Binding, sid string, rec *model.Record) Summary {
	return n.summaryWith(sid, rec, model.Settings{TakeoverTimeout: model.DefaultTakeoverTimeout}, n.botName(sc, b, rec.BotUUID))
}

// botName is a bot's name from the cache, without waiting.
func (n *notices) botName(sc binding.Scope, b binding.Binding, bot string) string {
	if bot == "" {
		return ""
	}
	return n.bots.lookup(sc, b, bot).name
}

// summaryWith builds a Summary with the given settings and bot name.
func (n *notices) summaryWith(sid string, rec *model.Record, set model.Settings, botName string) Summary {
	tv := n.takeoverView(rec, set)
	return Summary{
		SID: sid, SessionKey: rec.SessionKey, Type: rec.Type, TargetID: rec.TargetID, Name: rec.Name,
		BotUUID: rec.BotUUID, BotName: botName, Adapter: rec.Adapter, Legacy: model.IsLegacy(rec),
		MemberCount: len(rec.Members), LastMsgAt: rec.LastMsgAt, LastPreview: rec.LastPreview,
		Unread: rec.Unread, TriggeredWord: rec.TriggeredWord, Takeover: &tv, Satisfaction: rec.Satisfaction,
	}
}
