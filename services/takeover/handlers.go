package takeover

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// The invocation handlers: each decodes what the part needs, calls one
// part and encodes its answer. The fired-message handlers (expiry and
// alerts) and the lifecycle hooks are the notices' own (expire.go,
// alerts.go).

// handleEvent answers an event (spec §3.1): the recording part decides
// and records it; the reply carries the event gate when asked for it
// (gate.go).
func (s *Service) handleEvent(ctx context.Context, inv *bus.Invocation) (any, error) {
	reply, err := s.event(ctx, inv)
	if err != nil {
		return nil, err
	}
	if inv.Event.WantGate {
		reply.Gate = s.gate(inv.Scope, s.settings.get(inv.Scope, inv.Binding, inv.Config), s.now.ms())
	}
	return reply, nil
}

// event decides and records an event.
func (s *Service) event(ctx context.Context, inv *bus.Invocation) (wire.EventReply, error) {
	ev := inv.Event
	switch ev.Name {
	case EventPersonMessage, EventGroupMessage, EventResponded:
	default:
		return wire.EventReply{}, nil
	}
	if !model.ValidBotUUID(ev.BotUUID) {
		s.rec.unkeyed(ctx, inv)
		return wire.EventReply{}, nil
	}
	var data model.EventData
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return wire.EventReply{}, wire.Errorf(wire.ErrBadRequest, "event data is malformed")
	}
	if data.LauncherType != model.LauncherPerson && data.LauncherType != model.LauncherGroup {
		return wire.EventReply{}, wire.Errorf(wire.ErrBadRequest, "launcher_type must be person or group")
	}
	lid, ok := model.LauncherID(data.LauncherID)
	if !ok {
		return wire.EventReply{}, wire.Errorf(wire.ErrBadRequest, "launcher_id must be a string or number of 1 to 256 characters")
	}
	if ev.Name != EventResponded {
		set := s.settings.get(inv.Scope, inv.Binding, inv.Config)
		// an operator chat's plain message to the chat it relays (relay.go)
		if reply, ok := s.ops.relayEvent(ctx, inv, set, data, lid); ok {
			return reply, nil
		}
		// a user's cancel word (escalation.go), recorded as any message
		if reply, ok := s.ops.cancelEvent(ctx, inv, set, data, lid); ok {
			s.rec.cancelWord(ctx, inv, data, lid)
			return reply, nil
		}
	}
	return s.rec.event(ctx, inv, data, lid), nil
}

// handleCommand serves the operators' `!ho` command (commands.go).
func (s *Service) handleCommand(ctx context.Context, inv *bus.Invocation) (any, error) {
	if inv.Command.Name != commandWord {
		return nil, wire.Errorf(wire.ErrNotFound, "unknown command")
	}
	return s.ops.command(ctx, inv)
}

// handleTool serves request_human (tool.go).
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
	reason := settings.CutRunes(strings.TrimSpace(p.Reason), model.MaxHandoffReason)
	ses := tool.Session
	lid := string(ses.LauncherID)
	if !model.ValidBotUUID(ses.BotUUID) || (ses.LauncherType != model.LauncherPerson && ses.LauncherType != model.LauncherGroup) || lid == "" || len(lid) > 256 {
		return nil, wire.Errorf(wire.ErrBadRequest, "the tool call's session names no chat")
	}
	return s.ops.requestHuman(ctx, inv, lid, reason)
}

// handlePage is the NATS page endpoint over the console operations.
func (s *Service) handlePage(ctx context.Context, inv *bus.Invocation) (any, error) {
	p := inv.Page
	if p.PageID != ConsolePageID {
		return nil, wire.Errorf(wire.ErrNotFound, "unknown page")
	}
	req, err := ParsePageRequest(p.Method, p.Endpoint, p.Body)
	if err != nil {
		return nil, wireError(err)
	}
	var caller struct {
		Operator string `json:"operator"`
	}
	if len(p.Caller) > 0 {
		_ = json.Unmarshal(p.Caller, &caller)
	}
	c := pageCall{
		Scope: inv.Scope, Binding: inv.Binding,
		Settings: s.settings.get(inv.Scope, inv.Binding, inv.Config),
		Operator: OperatorOf(caller.Operator),
		Inactive: inv.Authority.State != bus.StateActive,
		Origin:   origin{Kind: originPage},
	}
	data, err := s.ops.operate(ctx, c, req)
	if err != nil {
		return nil, wireError(err)
	}
	return wire.PageReply{Data: data}, nil
}

// dedupePage: page actions run under the invocation dedupe record; reads
// skip it (spec §7.1 rule 5).
func dedupePage(inv *bus.Invocation) bool {
	if inv.Page == nil {
		return false
	}
	op, err := ParseOp(inv.Page.Method, inv.Page.Endpoint)
	return err == nil && op.IsAction()
}

// pageRead: reads are served under a disabled or superseded authority.
func pageRead(inv *bus.Invocation) bool {
	if inv.Page == nil {
		return false
	}
	op, err := ParseOp(inv.Page.Method, inv.Page.Endpoint)
	return err == nil && !op.IsAction()
}
