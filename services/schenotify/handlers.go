package schenotify

import (
	"context"
	"encoding/json"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// The runner's handlers: each decodes, calls one part and encodes.

// handleCommand answers !sche and !dsche (replies).
func (s *Service) handleCommand(ctx context.Context, inv *bus.Invocation) (any, error) {
	set := NormalizeConfig(inv.Config, s.zone)
	// the answer names commands with the prefix the user typed
	set.CommandPrefix = plugin.CommandPrefix(plugin.TypedPrefix(inv.Command.Name, inv.Command.Prefix, inv.Command.FullText), set.CommandPrefix)
	in := CommandIn{Name: inv.Command.Name, Params: inv.Command.Params, FullText: inv.Command.FullText, Prefix: inv.Command.Prefix}
	var body string
	switch inv.Command.Name {
	case CommandSche:
		body = s.rp.sche(ctx, inv, set, ParseSche(in))
	case CommandDsche:
		body = s.rp.dsche(ctx, inv, set, ParseDsche(in))
	default:
		return nil, wire.Errorf(wire.ErrNotFound, "schenotify has no such command")
	}
	return wire.CommandReply{Returns: []wire.Return{{Text: s.rp.rd.Reply(set, body)}}}, nil
}

// handleTool answers the tools (replies).
func (s *Service) handleTool(ctx context.Context, inv *bus.Invocation) (any, error) {
	return s.rp.tool(ctx, inv)
}

// Events schenotify listens to: a chat's incoming message is when a chat
// that refused proactive messages can be answered (waiting.go).
const (
	EventPersonMessage = "PersonMessageReceived"
	EventGroupMessage  = "GroupMessageReceived"
)

// eventData is what the event handler reads of a message event.
type eventData struct {
	LauncherType string          `json:"launcher_type"`
	LauncherID   json.RawMessage `json:"launcher_id"`
}

// handleEvent answers every event at once with both prevent flags false:
// reminders never block a message. A message event is the chat's next
// message for delivery (nextmessage.go).
func (s *Service) handleEvent(ctx context.Context, inv *bus.Invocation) (any, error) {
	reply := wire.EventReply{}
	ev := inv.Event
	if ev == nil || (ev.Name != EventPersonMessage && ev.Name != EventGroupMessage) {
		return reply, nil
	}
	var d eventData
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return reply, nil
	}
	sess, _, ok := sessionIn{LauncherType: d.LauncherType, LauncherID: d.LauncherID, BotUUID: ev.BotUUID}.resolve()
	if !ok {
		return reply, nil
	}
	s.dl.nextMessage(ctx, inv.Scope, sess)
	return reply, nil
}

// handleFired handles one fired message of the due consumer (delivery).
func (s *Service) handleFired(ctx context.Context, f *bus.Fired) { s.dl.fired(ctx, f) }
