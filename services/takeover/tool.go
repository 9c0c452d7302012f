package takeover

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// toolRequestHuman is the handoff tool's name.
const toolRequestHuman = "request_human"

// requestHumanSchema is the tool's JSON Schema: one short reason.
const requestHumanSchema = `{"type":"object","properties":{"reason":{"type":"string","maxLength":200,"description":"One sentence: why a human is needed. Operators see it; do not include personal data."}},"required":["reason"],"additionalProperties":false}`

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

// handleTool serves request_human: the chat of the tool call is marked
// waiting (unread, as a trigger word marks it, without taking it over) and
// the operator chats are alerted; the result tells the model what to say.
func (s *Service) handleTool(ctx context.Context, inv *bus.Invocation) (any, error) {
	tool := inv.Tool
	if tool.Name != toolRequestHuman {
		return nil, wire.Errorf(wire.ErrNotFound, "unknown tool")
	}
	var p struct {
		Reason string `json:"reason"`
	}
	if len(tool.Parameters) > 0 && json.Unmarshal(tool.Parameters, &p) != nil {
		return nil, wire.Errorf(wire.ErrBadRequest, "parameters must be {\"reason\": string}")
	}
	reason := model.CutRunes(strings.TrimSpace(p.Reason), model.MaxHandoffReason)
	ses := tool.Session
	lid := string(ses.LauncherID)
	if !model.ValidBotUUID(ses.BotUUID) || (ses.LauncherType != model.LauncherPerson && ses.LauncherType != model.LauncherGroup) || lid == "" || len(lid) > 256 {
		return nil, wire.Errorf(wire.ErrBadRequest, "the tool call's session names no chat")
	}
	set := s.settingsFor(inv.Scope, inv.Binding, inv.Config)
	sid := model.SID(model.SessionKey(ses.BotUUID, ses.LauncherType, lid))
	now := s.nowMS()
	rec, rev, err := s.st.UpdateRecord(ctx, inv.Scope, sid, func(cur *model.Record) (*model.Record, error) {
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
	s.view.ApplyRecord(inv.Scope, sid, rec, rev)
	s.publishLive(inv.Scope, model.Live{Type: model.LiveSession, SID: sid, Data: s.summary(ctx, inv.Scope, inv.Binding, sid, rec)})
	s.raiseAlert(ctx, inv.Scope, set, sid, rec, causeTool, "", reason)
	return wire.ToolReply{Result: ToolResult{Status: "waiting", SayToUser: s.catalog.Text(set.Language, "tool.say_to_user", nil),
		Alerted: len(set.OperatorChats) > 0}}, nil
}
