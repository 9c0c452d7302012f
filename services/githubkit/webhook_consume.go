package githubkit

// The webhook consumer: a durable consumer shared by the replicas takes
// each recorded delivery, maps it with webhookEvent, applies every
// subscriber's filters and pushes through the poller's formatter, then
// acks once the host accepted (or the retries of spec §7 ran out).

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Hook stream and consumer: recorded deliveries, pushed in order.
const (
	// HookStreamName is the work-queue stream of recorded deliveries.
	HookStreamName = "LANGBOT_GITHUBKIT_HOOKS"
	// HookConsumer is its durable consumer.
	HookConsumer = "githubkit-hook"
	// hookDuplicates is the stream's duplicate window for Nats-Msg-Id,
	// shorter than the body markers' life (the dedupe bucket's TTL).
	hookDuplicates = 2 * time.Minute
	// hookMaxAge drops a delivery that could not be handled for a day.
	hookMaxAge = 24 * time.Hour
)

// hookRetry is the delay before the n-th redelivery of a delivery whose
// push failed: 5 s doubling, at most 5 min.
func hookRetry(n uint64) time.Duration {
	d := 5 * time.Second
	for i := uint64(1); i < n && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// handleHook handles one recorded delivery.
func (s *webhooks) handleHook(ctx context.Context, f *bus.Fired) {
	ctx = ghclient.WithInstallation(ctx, f.Scope.String())
	opts := []trace.SpanStartOption{trace.WithAttributes(bus.AttrScope.String(f.Scope.String()))}
	if f.Origin.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: f.Origin}))
	}
	ctx, span := s.tracer.Start(ctx, "githubkit.webhook.push", opts...)
	defer span.End()
	outcome, retry := s.pushDelivery(ctx, f)
	span.SetAttributes(attribute.String("githubkit.webhook.outcome", outcome))
	s.hm.pushed.WithLabelValues(outcome).Inc()
	if retry {
		span.SetStatus(codes.Error, outcome)
		_ = f.Nak(hookRetry(f.Delivered))
		return
	}
	_ = f.Ack(ctx)
}

// pushDelivery does the work of one delivery; retry asks for redelivery.
func (s *webhooks) pushDelivery(ctx context.Context, f *bus.Fired) (outcome string, retry bool) {
	if f.Kind != KindHook || len(f.IDs) != 1 {
		_ = f.Term()
		return "malformed", false
	}
	var m hookMessage
	if err := json.Unmarshal(f.Data, &m); err != nil || m.V != 1 {
		s.log.ErrorContext(ctx, "webhook: undecodable recorded delivery")
		return "malformed", false
	}
	sc, id := f.Scope, f.IDs[0]
	a, err := s.runner.Authority(ctx, sc)
	if err != nil {
		return "store", true
	}
	if a == nil || !a.Active() {
		// a paused installation's poller catches up from its cursors
		return "inactive", false
	}
	kv := s.runner.KV()
	hook, _, err := hookStore(kv).Get(ctx, sc, id)
	if err != nil {
		return "store", true
	}
	if hook == nil {
		return "no_hook", false
	}
	if hook.Org != "" {
		return s.orgs.pushDelivery(ctx, f, a, id, hook, m)
	}
	cur, err := getRecord(ctx, kv, sc, hook.RepoKey)
	if err != nil {
		return "store", true
	}
	if cur == nil || cur.Rec.HookID != id || len(cur.Rec.Subscribers) == 0 {
		return "no_subscription", false
	}
	if f.Delivered == 1 {
		if _, err := s.touchHook(ctx, sc, id, false); err != nil {
			s.log.WarnContext(ctx, "webhook: liveness not recorded", "scope", sc.String(), "err", err)
		}
	}
	raw, err := s.runner.OpenConfig(sc, a)
	if err != nil {
		return "config_error", false
	}
	st, _ := s.settings(raw)
	x := s.texts(st.Language)
	if run, ok := webhookRun(m.Event, m.Body); ok {
		return s.pushRun(ctx, f, a, hook.RepoKey, cur.Rec, x, run, m)
	}
	ev, ok := webhookEvent(m.Event, m.Body)
	if !ok {
		return "ignored", false
	}
	// one event, selected per subscriber by the poller's own rule (ids
	// only order a feed: any id above the cursor passes)
	ev.ID = "1"
	s.me.notify(ctx, sc, a, st, cur.Rec.FullName, []ghclient.Event{ev})
	ln := events.NewLinks(events.WebBase(st.APIURL), cur.Rec.FullName)
	var sends []hookSend
	for _, sub := range cur.Rec.Subscribers {
		if len(SelectRefined([]ghclient.Event{ev}, "0", sub.Kinds, sub.Refine, 0).Events) == 0 {
			continue
		}
		if line, ok := x.EventLine(ev, nil, ln); ok {
			sends = append(sends, hookSend{sub: sub, text: x.PushMessage(cur.Rec.FullName, []string{line}, 0),
				idem: pushIdem(sc, hook.RepoKey, sub, "hook", m.Delivery)})
		}
	}
	if len(sends) == 0 {
		return "filtered", false
	}
	mine, _, err := s.claimDelivery(ctx, sc, hook.RepoKey, eventIdentity(ev), m)
	if err != nil {
		return "store", true
	}
	if !mine {
		return "seen", false
	}
	return s.sendBudgeted(ctx, f, a, id, hook.RepoKey, cur.Rec.FullName, st.Language, sends)
}

// sendBudgeted sends the sends the push budget admits and holds the
// others for their chat's summary (pushbudget.go). A redelivery after a
// failed send is budgeted again, so a chat's summary may count an event
// held on a retry once more: it over-counts, it never loses one.
func (s *webhooks) sendBudgeted(ctx context.Context, f *bus.Fired, a *bus.Authority, hookID, repoKey, fullName, lang string, sends []hookSend) (string, bool) {
	sends, err := s.noise.holdSends(ctx, f.Scope, a, fullName, sends)
	if err != nil {
		return "store", true
	}
	if len(sends) == 0 {
		return "held", false
	}
	sends, n := s.pushes.admit(f.Scope, hookID, repoKey, fullName, lang, sends)
	if n > 0 {
		s.metrics.push.WithLabelValues("held").Add(float64(n))
	}
	if len(sends) == 0 {
		return "held", false
	}
	return s.sendHook(ctx, f, a, sends)
}

// pushRun alerts a delivered workflow run as a poll alerts it (ci.go):
// the subscribers' CI words and branch refinements, the same line and
// idempotency key, and the record's CI state as the dedupe shared with
// the poller.
func (s *webhooks) pushRun(ctx context.Context, f *bus.Fired, a *bus.Authority, repoKey string, r *RepoRecord, x texts, run ghclient.WorkflowRun, m hookMessage) (string, bool) {
	sc := f.Scope
	// a passing run is claimed even when no subscriber wants passing runs:
	// it may be the one that fixed a failure (ci_fixed.go)
	sends := runSends(x, sc, repoKey, r, run, false)
	if len(sends) == 0 && (run.Conclusion != "success" || !ciWanted(r)) {
		return "filtered", false
	}
	mine, own, err := s.claimDelivery(ctx, sc, repoKey, runIdentity(run), m)
	if err != nil {
		return "store", true
	}
	if !mine {
		return "seen", false
	}
	mine, fixed, err := s.claimRun(ctx, sc, repoKey, run, m.At, own)
	if err != nil {
		return "store", true
	} else if !mine {
		return "seen", false
	}
	if fixed {
		sends = runSends(x, sc, repoKey, r, run, true)
	}
	if len(sends) == 0 {
		return "filtered", false
	}
	return s.sendBudgeted(ctx, f, a, f.IDs[0], repoKey, r.FullName, x.Lang(), sends)
}

// runSends are the messages of one delivered run to the subscribers that
// want it (ciLine).
func runSends(x texts, sc binding.Scope, repoKey string, r *RepoRecord, run ghclient.WorkflowRun, fixed bool) []hookSend {
	var sends []hookSend
	for _, sub := range r.Subscribers {
		if line, ok := ciLine(x, sub, run, fixed); ok {
			sends = append(sends, hookSend{sub: sub, text: x.PushMessage(r.FullName, []string{line}, 0),
				idem: ciIdem(sc, repoKey, sub, []string{run.Key()})})
		}
	}
	return sends
}

// hookSend is one message a delivery sends to one subscriber.
type hookSend struct {
	sub        *Subscriber
	text, idem string
}

// sendHook sends a claimed delivery's messages; a failed send asks for
// redelivery until SendFailuresToDrop.
func (s *webhooks) sendHook(ctx context.Context, f *bus.Fired, a *bus.Authority, sends []hookSend) (string, bool) {
	failed := false
	for _, sd := range sends {
		sctx, cancel := context.WithTimeout(ctx, s.cfg.HostTimeout)
		err := s.runner.Host().SendMessage(sctx, a.Binding, wire.SendMessage{
			BotUUID: sd.sub.BotUUID, TargetType: sd.sub.TargetType, TargetID: sd.sub.TargetID, MessageChain: wire.Plain(sd.text),
		}, sd.idem)
		cancel()
		switch {
		case err == nil:
			s.metrics.push.WithLabelValues("sent").Inc()
		case errors.Is(err, wire.ErrBindingRefused) && !s.runner.MovedOn(ctx, f.Scope, a.Binding):
			// the runner's host client marked the authority superseded
			// (had the installation moved on to another binding meanwhile,
			// the delivery is retried under it, as a failed send)
			s.metrics.push.WithLabelValues("failed").Inc()
			return "stale", false
		default:
			s.metrics.push.WithLabelValues("failed").Inc()
			failed = true
		}
	}
	if failed {
		if f.Delivered >= SendFailuresToDrop {
			s.metrics.push.WithLabelValues("dropped").Inc()
			s.log.WarnContext(ctx, "webhook: event dropped after repeated send failures", "scope", f.Scope.String())
			return "dropped", false
		}
		return "retry", true
	}
	return "pushed", false
}

// hookStream declares the stream of recorded deliveries.
func (s *webhooks) hookStream() bus.StreamSpec {
	return bus.StreamSpec{
		Name:       HookStreamName,
		Subjects:   []string{s.subj.InternalAll(Plugin, KindHook)},
		Replicas:   s.cfg.Replicas,
		WorkQueue:  true,
		MaxAge:     hookMaxAge,
		Duplicates: hookDuplicates,
	}
}

// hookConsumer declares the consumer of recorded deliveries, shared by the
// replicas. Its redeliveries are the send retries: SendFailuresToDrop of
// them, as the poller allows a subscriber.
func (s *webhooks) hookConsumer() bus.Consumer {
	return bus.Consumer{FiredConfig: bus.FiredConfig{
		Stream: HookStreamName, Durable: HookConsumer, Filter: s.subj.InternalAll(Plugin, KindHook),
		Workers: s.cfg.PollWorkers, AckWait: s.cfg.AckWait, MaxDeliver: SendFailuresToDrop + 1,
		Timeout: s.cfg.HostTimeout*time.Duration(events.MaxSubscribersRepo) + 10*time.Second,
	}, Handler: s.handleHook}
}

// purgeHooks drops a removed scope's recorded deliveries.
func (s *webhooks) purgeHooks(ctx context.Context, sc binding.Scope) error {
	st := s.runner.Stream(HookStreamName)
	if st == nil {
		return errors.New("githubkit: hook stream not ready")
	}
	return bus.PurgeSubjects(ctx, st, s.subj.InternalScope(Plugin, KindHook, sc))
}
