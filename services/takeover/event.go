package takeover

import (
	"context"
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
	pathView     = "view"
	pathDirect   = "direct"
	pathFallback = "fallback"
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

// decidedEvents are the events the service decides (spec §3.1): the ones
// it declares and its event gate covers.
func decidedEvents() []string { return []string{EventPersonMessage, EventGroupMessage, EventResponded} }

// Span attributes of an event (spec §3.8).
var (
	attrPath    = attribute.Key("takeover.decision.path")
	attrBlocked = attribute.Key("takeover.blocked")
	// attrPassed marks an event the package's event gate let pass.
	attrPassed = attribute.Key("takeover.passed")
)

// unkeyed accounts an event without a valid trusted bot uuid, which
// cannot be keyed to a session.
func (rc *recording) unkeyed(ctx context.Context, inv *bus.Invocation) {
	rc.metrics.unkeyed.Inc()
	rc.log.ErrorContext(ctx, "event without a valid trusted bot uuid is not keyed", "scope", inv.Scope.String(), "event", inv.Event.Name)
}

// event answers a decoded event of chat lid: the blocking decision first,
// from the view (spec §3.2), then the recording within the budget (spec
// §3.3).
func (rc *recording) event(ctx context.Context, inv *bus.Invocation, data model.EventData, lid string) wire.EventReply {
	ev := inv.Event
	start := time.Now()
	set := rc.settings.get(inv.Scope, inv.Binding, inv.Config)
	now := rc.now.ms()
	sid := model.SID(model.SessionKey(ev.BotUUID, data.LauncherType, lid))
	key := store.SessionKey(inv.Scope, sid)
	taken, path := rc.decide(ctx, inv.Scope, sid, key, now)
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
		rc.view.AddPending(key, now+set.TimeoutMillis())
	}
	survey := surveyNone
	if message && !blocked && data.LauncherType == model.LauncherPerson {
		// a score answering the satisfaction question is not the AI's
		if survey = rc.surveyAnswer(key, chain.TriggerText(), now); survey > 0 {
			blocked = true
		}
	}
	if blocked && ev.Passed {
		// the package's gate let it pass before a revocation reached it
		rc.metrics.gateMissed.Inc()
		rc.log.WarnContext(ctx, "an event passed by the event gate would have been blocked", "scope", inv.Scope.String(), "event", ev.Name)
	}
	took := time.Since(start)
	rc.metrics.decisionSeconds.Observe(took.Seconds())
	if rc.onDecision != nil {
		rc.onDecision(took)
	}
	rc.metrics.decisions.WithLabelValues(path, strconv.FormatBool(blocked)).Inc()
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attrPath.String(path), attrBlocked.Bool(blocked), attrPassed.Bool(ev.Passed))
	reply := wire.EventReply{PreventDefault: blocked, PreventPostorder: blocked}

	job := newJob(inv, set, data, lid, sid, key, taken, now, span.SpanContext())
	job.survey = survey
	if message {
		job.withMessage(data, chain, lid)
		job.word, job.hit = word, hit
	} else {
		// a blocked reply was never seen by the user (unless the gate let
		// it pass); an empty one is not kept
		if (blocked && !ev.Passed) || data.ResponseText == "" {
			return reply
		}
		job.ai = true
		job.aiText = data.ResponseText
	}
	rc.pool.submitAndWait(ctx, job, rc.budget)
	return reply
}

// cancelWord records a user's cancel word, which ops answers
// (cancelEvent), as any message of the chat is recorded, so the console
// shows what the user said; it is matched against no trigger (a cancel
// word containing one must not raise the request it withdraws).
func (rc *recording) cancelWord(ctx context.Context, inv *bus.Invocation, data model.EventData, lid string) {
	set := rc.settings.get(inv.Scope, inv.Binding, inv.Config)
	now := rc.now.ms()
	sid := model.SID(model.SessionKey(inv.Event.BotUUID, data.LauncherType, lid))
	key := store.SessionKey(inv.Scope, sid)
	taken, _ := rc.decide(ctx, inv.Scope, sid, key, now)
	job := newJob(inv, set, data, lid, sid, key, taken, now, trace.SpanFromContext(ctx).SpanContext())
	job.withMessage(data, model.ParseChain(data.Chain()), lid)
	rc.pool.submitAndWait(ctx, job, rc.budget)
}

// newJob is the recording job of an event of chat lid (session sid, view
// key key).
func newJob(inv *bus.Invocation, set model.Settings, data model.EventData, lid, sid, key string, taken bool, now int64, span trace.SpanContext) *recordJob {
	ev := inv.Event
	return &recordJob{
		sc: inv.Scope, b: inv.Binding, set: set, event: ev.Name, invID: inv.ID,
		bot: ev.BotUUID, ltype: data.LauncherType, lid: lid, sid: sid, key: key,
		takenOver: taken, now: now, span: span, done: make(chan struct{}),
	}
}

// withMessage sets a user message's chain and sender on the job.
func (j *recordJob) withMessage(data model.EventData, chain model.Chain, lid string) {
	j.chain = chain
	j.senderID, j.senderName = data.Sender()
	j.sessionName = data.SessionName(lid)
}

// decide evaluates taken_over for a session key by the table of spec §3.2.
func (rc *recording) decide(ctx context.Context, sc binding.Scope, sid, key string, now int64) (bool, string) {
	if rc.view.PendingTakenOver(key, now) {
		return true, pathView
	}
	if rc.view.Live() {
		e, ok := rc.view.Lookup(key)
		return ok && e.TakenOver(now), pathView
	}
	rctx, cancel := context.WithTimeout(ctx, directReadWait)
	defer cancel()
	rec, _, err := rc.st.GetRecord(rctx, sc, sid)
	if err == nil {
		return rec != nil && rec.Takeover.TakenOver(now), pathDirect
	}
	e, ok := rc.view.Lookup(key)
	return ok && e.TakenOver(now), pathFallback
}
