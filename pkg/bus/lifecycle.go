package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// LifecycleMaxAge is how long LANGBOT_LIFECYCLE keeps a message: long
// enough for a service that was down over a weekend to read the revokes it
// missed (an attach is republished every hour anyway), and no longer,
// because an attach carries the installation's plaintext config (the
// LangBot packages cannot seal it: they have no crypto library).
const LifecycleMaxAge = 72 * time.Hour

// LifecycleStreamConfig returns the configuration of LANGBOT_LIFECYCLE
// (DESIGN 3.2, docs/protocol.md): file storage, limits retention, one
// message per subject (the newest attach, the newest revoke of each
// installation: the authority needs no older one), LifecycleMaxAge, 2 min
// duplicate window.
func LifecycleStreamConfig(subjects wire.Subjects, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              wire.LifecycleStream,
		Subjects:          []string{subjects.LifecycleAll()},
		Storage:           jetstream.FileStorage,
		Retention:         jetstream.LimitsPolicy,
		MaxAge:            LifecycleMaxAge,
		MaxMsgsPerSubject: 1,
		Duplicates:        2 * time.Minute,
		Replicas:          max(replicas, 1),
	}
}

// EnsureLifecycleStream creates or updates LANGBOT_LIFECYCLE. It is the one
// function the deployment (lbctl setup), the dev stack and the test harness
// use; services never call it.
func EnsureLifecycleStream(ctx context.Context, js jetstream.JetStream, subjects wire.Subjects, replicas int) (jetstream.Stream, error) {
	ctx, cancel := withDefault(ctx)
	defer cancel()
	s, err := js.CreateOrUpdateStream(ctx, LifecycleStreamConfig(subjects, replicas))
	if err != nil {
		return nil, fmt.Errorf("bus: lifecycle stream: %w", err)
	}
	return s, nil
}

// PublishAttach publishes an attach message for plugin as a host does, with
// a JetStream publish; msgID (optional) sets Nats-Msg-Id for the duplicate
// window. It returns the stream sequence.
func PublishAttach(ctx context.Context, js jetstream.JetStream, subjects wire.Subjects, plugin string, a wire.Attach, msgID string) (uint64, error) {
	return publishLifecycle(ctx, js, subjects, plugin, wire.LifecycleAttach, a.Binding, a, msgID)
}

// PublishRevoke publishes a revoke message for plugin as a host does.
func PublishRevoke(ctx context.Context, js jetstream.JetStream, subjects wire.Subjects, plugin string, r wire.Revoke, msgID string) (uint64, error) {
	return publishLifecycle(ctx, js, subjects, plugin, wire.LifecycleRevoke, r.Binding, r, msgID)
}

func publishLifecycle(ctx context.Context, js jetstream.JetStream, subjects wire.Subjects, plugin, kind string, b binding.Binding, body any, msgID string) (uint64, error) {
	if err := b.Validate(); err != nil {
		return 0, err
	}
	sc, _ := b.Scope()
	data, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	msg := &nats.Msg{Subject: subjects.Lifecycle(plugin, kind, sc), Header: nats.Header{}, Data: data}
	msg.Header.Set(wire.HeaderContentType, wire.ContentTypeJSON)
	Inject(ctx, msg.Header)
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	ctx, cancel := withDefault(ctx)
	defer cancel()
	ack, err := js.PublishMsg(ctx, msg, opts...)
	if err != nil {
		return 0, fmt.Errorf("bus: publish %s: %w", kind, err)
	}
	return ack.Sequence, nil
}

// startLifecycle creates the plugin's durable lifecycle consumer and
// consumes it until Shutdown.
func (r *Runner) startLifecycle(ctx context.Context) error {
	var cons jetstream.Consumer
	err := retrySetup(ctx, func(ctx context.Context) (err error) {
		cons, err = r.js.CreateOrUpdateConsumer(ctx, wire.LifecycleStream, jetstream.ConsumerConfig{
			Durable:       LifecycleConsumer(r.cfg.Plugin),
			FilterSubject: r.subjects.LifecycleFilter(r.cfg.Plugin),
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       time.Minute,
			MaxAckPending: 64,
			DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("bus: lifecycle consumer: %w", err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { r.handleLifecycle(m) },
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if !errors.Is(err, jetstream.ErrNoHeartbeat) {
				r.log.Warn("lifecycle consumer", "err", err)
			}
		}))
	if err != nil {
		return fmt.Errorf("bus: lifecycle consume: %w", err)
	}
	r.lifecycle = cc
	r.startRetention()
	return nil
}

// handleLifecycle applies one lifecycle message and acks it once the effect
// is durable. Malformed messages are terminated: redelivery cannot fix them.
func (r *Runner) handleLifecycle(m jetstream.Msg) {
	ctx := Extract(r.baseCtx, m.Headers())
	_, kind, sc, err := r.subjects.ParseLifecycle(m.Subject())
	template := r.subjects.LifecycleFilter(r.cfg.Plugin)
	ctx, span := r.tracer.Start(ctx, "process "+template, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(MessagingAttrs(m.Subject(), template, "process", "lifecycle")...),
		trace.WithAttributes(AttrPlugin.String(r.cfg.Plugin)))
	defer span.End()
	ctx, cancel := context.WithTimeout(ctx, 50*time.Second)
	defer cancel()

	term := func(why string) {
		span.SetStatus(codes.Error, why)
		r.metrics.lifecycle.WithLabelValues(kind, "malformed").Inc()
		r.log.ErrorContext(ctx, "lifecycle message refused", "subject_kind", kind, "why", why)
		_ = m.Term()
	}
	if err != nil {
		term("bad subject")
		return
	}
	span.SetAttributes(AttrScope.String(sc.String()))
	meta, err := m.Metadata()
	if err != nil {
		term("no metadata")
		return
	}
	if !utf8.Valid(m.Data()) {
		term("body is not valid UTF-8")
		return
	}
	in := Input{Seq: meta.Sequence.Stream}
	switch kind {
	case wire.LifecycleAttach:
		var a wire.Attach
		if err := json.Unmarshal(m.Data(), &a); err != nil {
			term("bad attach body")
			return
		}
		if len(a.Config) == 0 || string(a.Config) == "null" {
			a.Config = json.RawMessage("{}")
		}
		if settings.CheckSizes(a.Config) != nil {
			term("config string over settings.MaxStringBytes")
			return
		}
		in.Kind, in.Binding, in.Config, in.Enabled = InputAttach, a.Binding, a.Config, a.Enabled
	case wire.LifecycleRevoke:
		var rv wire.Revoke
		if err := json.Unmarshal(m.Data(), &rv); err != nil {
			term("bad revoke body")
			return
		}
		switch rv.Reason {
		case wire.ReasonUninstall, wire.ReasonWorkspaceRemoved, wire.ReasonDisable, wire.ReasonUpgrade, wire.ReasonConfigChange:
		default:
			term("unknown revoke reason")
			return
		}
		in.Kind, in.Binding, in.Reason = InputRevoke, rv.Binding, rv.Reason
	default:
		term("unknown lifecycle kind")
		return
	}
	if err := in.Binding.Validate(); err != nil {
		term("invalid binding")
		return
	}
	if bs, _ := in.Binding.Scope(); bs != sc {
		term("scope mismatch")
		return
	}

	prev, d, err := r.store.Apply(ctx, sc, in)
	if err != nil {
		r.retryLifecycle(ctx, span, m, kind, err)
		return
	}
	purge := d.Purge
	if d.Outcome != Write && in.Kind == InputRevoke && isRemoval(in.Reason) && prev != nil && prev.State == StateRemoved {
		// A redelivered removal: the tombstone is there, but the purge may
		// not have finished before a crash. Purging again is harmless.
		purge = true
	}
	if d.Outcome == Write {
		// in-flight invocations on this replica see the change at once; the
		// revision keeps a late watch delivery of an older record out
		r.view.apply(sc, d.Next, d.Revision)
	}
	if purge {
		if err := r.purgeScope(ctx, sc); err != nil {
			r.retryLifecycle(ctx, span, m, kind, err)
			return
		}
	}
	if d.Outcome == Write {
		if r.cfg.OnTransition != nil {
			if err := r.cfg.OnTransition(ctx, sc, prev, d.Next); err != nil {
				r.retryLifecycle(ctx, span, m, kind, err)
				return
			}
		}
	}
	result := "ignored"
	if d.Outcome == Write {
		result = string(d.Next.State)
	}
	r.metrics.lifecycle.WithLabelValues(kind, result).Inc()
	if err := m.DoubleAck(ctx); err != nil {
		r.log.WarnContext(ctx, "lifecycle ack", "err", err)
	}
}

func (r *Runner) retryLifecycle(ctx context.Context, span trace.Span, m jetstream.Msg, kind string, err error) {
	span.SetStatus(codes.Error, "retry")
	r.metrics.lifecycle.WithLabelValues(kind, "retry").Inc()
	r.log.ErrorContext(ctx, "lifecycle message will be retried", "err", err)
	_ = m.NakWithDelay(2 * time.Second)
}

// purgeScope removes everything of a removed scope but its tombstone: the
// service's own data first (streams, schedules, blobs), then the buckets.
func (r *Runner) purgeScope(ctx context.Context, sc binding.Scope) error {
	if r.cfg.Purge != nil {
		if err := r.cfg.Purge(ctx, sc); err != nil {
			return fmt.Errorf("service purge: %w", err)
		}
	}
	if err := r.kv.PurgeScope(ctx, sc, KeyAuthority); err != nil {
		return err
	}
	return purgeScope(ctx, r.dedupe, sc)
}

// MinRetention is the shortest retention a runner accepts: far above any
// attach refresh period, so a live installation is never taken for gone.
const MinRetention = 24 * time.Hour

// retentionBatch bounds the removals of one sweep; the rest wait for the
// next one.
const retentionBatch = 100

// startRetention runs the retention sweep (RunnerConfig.Retention) every
// RetentionSweep until Shutdown: one goroutine per runner, whatever the
// number of installations. Replicas sweep independently; the removal is a
// compare-and-set on the authority, so a scope is removed once.
func (r *Runner) startRetention() {
	if r.cfg.Retention <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(r.baseCtx)
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		// replicas started together would sweep together: a random first
		// delay spreads them over the period
		t := time.NewTimer(rand.N(r.cfg.RetentionSweep) + time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, err := r.SweepRetention(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("retention sweep", "err", err)
			}
			t.Reset(r.cfg.RetentionSweep)
		}
	}()
	r.addStop(cancel)
}

// SweepRetention runs one retention sweep: it removes, as a revoke
// uninstall does (tombstone, purge, OnTransition), up to 100 scopes whose
// authority was last written (updated_at) more than Retention before the
// runner's clock, oldest first, and purges again the tombstones of the last
// two sweep periods (a removal cut short by a crash between tombstone and
// purge). Each removal re-checks updated_at on the stored record, so an
// attach that refreshed it meanwhile keeps the installation. A record
// without updated_at is never removed. With Retention 0 it does nothing.
// It returns the number of scopes removed.
func (r *Runner) SweepRetention(ctx context.Context) (int, error) {
	if r.cfg.Retention <= 0 || r.store == nil {
		return 0, nil
	}
	now := r.now()
	cutoff := now.Add(-r.cfg.Retention)
	recent := now.Add(-2 * r.cfg.RetentionSweep)
	type cand struct {
		sc   binding.Scope
		seen time.Time
	}
	var stale []cand
	var repurge []binding.Scope
	for sc, a := range r.view.snapshot() {
		switch {
		case a.State == StateRemoved:
			if a.UpdatedAt.After(recent) {
				repurge = append(repurge, sc)
			}
		case !a.UpdatedAt.IsZero() && a.UpdatedAt.Before(cutoff):
			stale = append(stale, cand{sc, a.UpdatedAt})
		}
	}
	slices.SortFunc(stale, func(a, b cand) int { return a.seen.Compare(b.seen) })
	if len(stale) > retentionBatch {
		stale = stale[:retentionBatch]
	}
	var errs []error
	for _, sc := range repurge {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err := r.retentionPurge(ctx, sc); err != nil {
			errs = append(errs, err)
		}
	}
	removed := 0
	for _, c := range stale {
		if ctx.Err() != nil {
			break
		}
		ok, err := r.expire(ctx, c.sc, cutoff)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// expire removes sc if its stored authority is older than cutoff. A removal
// once started finishes (bounded) even if ctx ends, so that Shutdown does
// not leave a tombstone without its purge.
func (r *Runner) expire(ctx context.Context, sc binding.Scope, cutoff time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 50*time.Second)
	defer cancel()
	ctx, span := r.tracer.Start(ctx, "retention "+r.cfg.Plugin, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(AttrPlugin.String(r.cfg.Plugin), AttrScope.String(sc.String())))
	defer span.End()
	fail := func(what string, err error) (bool, error) {
		span.SetStatus(codes.Error, what)
		r.metrics.lifecycle.WithLabelValues("retention", "retry").Inc()
		return false, fmt.Errorf("bus: retention %s of %s: %w", what, sc, err)
	}
	prev, d, err := r.store.Apply(ctx, sc, Input{Kind: InputExpire, Before: cutoff})
	if err != nil {
		return fail("tombstone", err)
	}
	if d.Outcome != Write {
		return false, nil // refreshed or removed meanwhile
	}
	r.view.apply(sc, d.Next, d.Revision)
	if err := r.purgeScope(ctx, sc); err != nil {
		return fail("purge", err)
	}
	if r.cfg.OnTransition != nil {
		if err := r.cfg.OnTransition(ctx, sc, prev, d.Next); err != nil {
			return fail("transition", err)
		}
	}
	r.metrics.lifecycle.WithLabelValues("retention", string(StateRemoved)).Inc()
	r.log.InfoContext(ctx, "installation removed by retention", "scope", sc.String(),
		"last_seen", prev.UpdatedAt, "retention", r.cfg.Retention.String())
	return true, nil
}

// retentionPurge purges a recent tombstone's data again (idempotent).
func (r *Runner) retentionPurge(ctx context.Context, sc binding.Scope) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 50*time.Second)
	defer cancel()
	if err := r.purgeScope(ctx, sc); err != nil {
		return fmt.Errorf("bus: retention purge of %s: %w", sc, err)
	}
	return nil
}
