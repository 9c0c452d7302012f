package takeover

import (
	"context"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// toolRequestHuman is the handoff tool's name.
const toolRequestHuman = "request_human"

// requestHumanSchema is the tool's JSON Schema: one short reason.
const requestHumanSchema = `{"type":"object","properties":{"reason":{"type":"string","maxLength":200,"description":"Why a human is needed: one sentence, no personal data (operators see it)."}},"required":["reason"],"additionalProperties":false}`

// ToolResult is what request_human tells the model.
type ToolResult struct {
	// Status is "waiting": the chat is flagged for a human.
	Status string `json:"status"`
	// SayToUser is what the model should tell the user, in the
	// installation's language.
	SayToUser string `json:"say_to_user"`
	// Alerted reports whether operator chats are configured to be alerted.
	Alerted bool `json:"operators_alerted"`
}

// requestHuman serves request_human for the chat lid of the tool call's
// session: the chat is marked waiting (unread, as a trigger word marks
// it, without taking it over) and the operator chats are alerted; the
// result tells the model what to say.
func (o *ops) requestHuman(ctx context.Context, inv *bus.Invocation, lid, reason string) (any, error) {
	ses := inv.Tool.Session
	set := o.settings.get(inv.Scope, inv.Binding, inv.Config)
	sid := model.SID(model.SessionKey(ses.BotUUID, ses.LauncherType, lid))
	now := o.now.ms()
	rec, rev, err := o.st.UpdateRecord(ctx, inv.Scope, sid, func(cur *model.Record) (*model.Record, error) {
		var r *model.Record
		if cur == nil {
			r = model.NewRecord(ses.BotUUID, ses.LauncherType, lid, lid, now)
		} else {
			if model.IsLegacy(cur) || model.IdentityConflict(cur, ses.BotUUID, "") {
				return nil, wire.Errorf(wire.ErrConflict, "the chat's session belongs to another bot")
			}
			if cur.Unread {
				return nil, store.ErrNoChange
			}
			r = cur.Clone()
		}
		r.Unread, r.TriggeredAt, r.UpdatedAt = true, now, now
		return r, nil
	})
	if err != nil {
		return nil, wireError(err)
	}
	o.view.ApplyRecord(inv.Scope, sid, rec, rev)
	o.notices.publishLive(inv.Scope, model.Live{Type: model.LiveSession, SID: sid, Data: o.notices.summary(ctx, inv.Scope, inv.Binding, sid, rec)})
	o.notices.raiseAlert(ctx, session{sc: inv.Scope, b: inv.Binding, set: set, sid: sid, rec: rec}, causeTool, "", reason)
	return wire.ToolReply{Result: ToolResult{Status: "waiting", SayToUser: o.catalog.Text(set.Language, "tool.say_to_user", nil),
		Alerted: len(set.OperatorChats) > 0}}, nil
}
