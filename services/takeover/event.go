package takeover

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// Decision paths (spec §3.2).
const (
	PathView     = "view"
	PathDirect   = "direct"
	PathFallback = "fallback"
)

// directReadWait bounds the direct read of a decision while the view is
// not live (spec §3.2).
const directReadWait = 250 * time.Millisecond

// Events the service handles (spec §3.1).
const (
	EventPersonMessage = "PersonMessageReceived"
	EventGroupMessage  = "GroupMessageReceived"
	EventResponded     = "NormalMessageResponded"
)

// Span attributes of an event (spec §3.8).
var (
	attrPath    = attribute.Key("takeover.decision.path")
	attrBlocked = attribute.Key("takeover.blocked")
)

// handleEvent answers an event: the blocking decision first, from the view
// (spec §3.2), then the recording within the budget (spec §3.3).
func (s *Service) handleEvent(ctx context.Context, inv *bus.Invocation) (any, error) {
	ev := inv.Event
	switch ev.Name {
	case EventPersonMessage, EventGroupMessage, EventResponded:
	default:
		return wire.EventReply{}, nil
	}
	if !model.ValidBotUUID(ev.BotUUID) {
		s.metrics.unkeyed.Inc()
		s.log.ErrorContext(ctx, "event without a valid trusted bot uuid is not keyed", "scope", inv.Scope.String(), "event", ev.Name)
		return wire.EventReply{}, nil
	}
	var data model.EventData
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return nil, wire.Errorf(wire.ErrBadRequest, "event data is malformed")
	}
	if data.LauncherType != model.LauncherPerson && data.LauncherType != model.LauncherGroup {
		return nil, wire.Errorf(wire.ErrBadRequest, "launcher_type must be person or group")
	}
	lid, ok := model.LauncherID(data.LauncherID)
	if !ok {
		return nil, wire.Errorf(wire.ErrBadRequest, "launcher_id must be a string or number of 1 to 256 characters")
	}

	start := time.Now()
	set := s.settingsFor(inv.Scope, inv.Binding, inv.Config)
	now := s.nowMS()
	sid := model.SID(model.SessionKey(ev.BotUUID, data.LauncherType, lid))
	key := store.SessionKey(inv.Scope, sid)
	taken, path := s.decide(ctx, inv.Scope, sid, key, now)
	var chain model.Chain
	var word string
	var hit bool
	message := ev.Name != EventResponded
	if message {
		chain = model.ParseChain(data.Chain())
		word, hit = model.MatchTrigger(chain.TriggerText(), set)
	}
	auto := hit && set.AutoTakeoverOnTrigger
	blocked := taken || auto
	if blocked && !auto && message && model.IsOperatorCommand(chain.TriggerText(), set.CommandPrefix) {
		// `!ho resume` must reach the command endpoint of a paused chat
		blocked = false
	}
	if auto && !taken {
		s.view.AddPending(key, now+set.TimeoutMillis())
	}
	took := time.Since(start)
	s.metrics.decisionSeconds.Observe(took.Seconds())
	if s.onDecision != nil {
		s.onDecision(took)
	}
	s.metrics.decisions.WithLabelValues(path, strconv.FormatBool(blocked)).Inc()
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attrPath.String(path), attrBlocked.Bool(blocked))
	reply := wire.EventReply{PreventDefault: blocked, PreventPostorder: blocked}

	job := &recordJob{
		sc: inv.Scope, b: inv.Binding, set: set, event: ev.Name, invID: inv.ID,
		bot: ev.BotUUID, ltype: data.LauncherType, lid: lid, sid: sid, key: key,
		takenOver: taken, now: now, span: span.SpanContext(), done: make(chan struct{}),
	}
	if message {
		job.chain = chain
		job.word, job.hit = word, hit
		job.senderID, job.senderName = data.Sender()
		job.sessionName = data.SessionName(lid)
	} else {
		// a blocked reply was never seen by the user; an empty one is not kept
		if blocked || data.ResponseText == "" {
			return reply, nil
		}
		job.ai = true
		job.aiText = data.ResponseText
	}
	s.rec.submitAndWait(ctx, job, s.cfg.RecordBudget)
	return reply, nil
}

// decide evaluates taken_over for a session key by the table of spec §3.2.
func (s *Service) decide(ctx context.Context, sc binding.Scope, sid, key string, now int64) (bool, string) {
	if s.view.PendingTakenOver(key, now) {
		return true, PathView
	}
	if s.view.Live() {
		e, ok := s.view.Lookup(key)
		return ok && e.TakenOver(now), PathView
	}
	rctx, cancel := context.WithTimeout(ctx, directReadWait)
	defer cancel()
	rec, _, err := s.st.GetRecord(rctx, sc, sid)
	if err == nil {
		return rec != nil && rec.Takeover.TakenOver(now), PathDirect
	}
	e, ok := s.view.Lookup(key)
	return ok && e.TakenOver(now), PathFallback
}
