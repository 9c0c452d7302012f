package bus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// StreamSpec is the configuration of a plugin stream (DESIGN 4, 5); the
// settings that vary between dev and production come from configuration.
type StreamSpec struct {
	Name              string
	Subjects          []string
	Replicas          int
	Schedules         bool          // AllowMsgSchedules: the stream holds message schedules
	MaxMsgsPerSubject int64         // 0: unlimited
	MaxAge            time.Duration // 0: none (schedule streams must not age out schedules)
	Duplicates        time.Duration // duplicate window for Nats-Msg-Id
	AllowDirect       bool
	AllowRollup       bool
	AtomicPublish     bool // AllowAtomicPublish: the stream takes atomic batches (takeover's history: services/takeover/batch)
	Memory            bool
	// WorkQueue gives the stream work-queue retention: a message is
	// removed once its one consumer acknowledged it (githubkit's webhook
	// deliveries), so the stream holds only what is still to be done.
	WorkQueue bool
}

// EnsureStream creates or updates a stream with file storage, limits
// retention (work-queue when spec says so) and discard old.
func EnsureStream(ctx context.Context, js jetstream.JetStream, spec StreamSpec) (jetstream.Stream, error) {
	cfg := jetstream.StreamConfig{
		Name:               spec.Name,
		Subjects:           spec.Subjects,
		Storage:            jetstream.FileStorage,
		Retention:          jetstream.LimitsPolicy,
		Discard:            jetstream.DiscardOld,
		Replicas:           max(spec.Replicas, 1),
		MaxMsgsPerSubject:  spec.MaxMsgsPerSubject,
		MaxAge:             spec.MaxAge,
		Duplicates:         spec.Duplicates,
		AllowDirect:        spec.AllowDirect,
		AllowRollup:        spec.AllowRollup || spec.Schedules,
		AllowMsgSchedules:  spec.Schedules,
		AllowAtomicPublish: spec.AtomicPublish,
	}
	if spec.Memory {
		cfg.Storage = jetstream.MemoryStorage
	}
	if spec.WorkQueue {
		cfg.Retention = jetstream.WorkQueuePolicy
	}
	if cfg.MaxMsgsPerSubject == 0 {
		cfg.MaxMsgsPerSubject = -1
	}
	var s jetstream.Stream
	err := retrySetup(ctx, func(ctx context.Context) (err error) {
		s, err = js.CreateOrUpdateStream(ctx, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", spec.Name, err)
	}
	return s, nil
}

// ScheduleAt arms a one-shot schedule on subject that the server republishes
// onto target at the given second (DESIGN 5: "@at <RFC 3339 UTC>"; a past
// instant fires at once). Republishing on the same subject replaces the
// schedule. ctx's trace context travels with it.
//
// The target keeps the fired messages its stream's limits keep: on a
// stream whose MaxMsgsPerSubject is 1 (every schedule stream we run) a
// firing replaces the previous fired message of its target, by the limit,
// which removes that one message. No rollup header is set on the fired
// message: a rollup purges the target subject, and nats-server (2.15)
// empties the redelivery queue of the consumer reading the target on every
// such purge (see Fired.Remove).
func ScheduleAt(ctx context.Context, js jetstream.JetStream, subject, target string, at time.Time, body []byte) error {
	opts := []jetstream.PublishOpt{jetstream.WithScheduleAt(at.UTC().Truncate(time.Second)), jetstream.WithScheduleTarget(target)}
	return publishSchedule(ctx, js, subject, body, opts)
}

// ScheduleEvery arms a repeating schedule ("@every <duration>") on subject
// firing onto target.
func ScheduleEvery(ctx context.Context, js jetstream.JetStream, subject, target string, every time.Duration, body []byte) error {
	opts := []jetstream.PublishOpt{jetstream.WithScheduleEvery(every), jetstream.WithScheduleTarget(target)}
	return publishSchedule(ctx, js, subject, body, opts)
}

func publishSchedule(ctx context.Context, js jetstream.JetStream, subject string, body []byte, opts []jetstream.PublishOpt) error {
	// the fired message will link to this span
	ctx, end := startClientSpan(ctx, "publish schedule", trace.SpanKindProducer,
		MessagingAttrs(subject, "", "publish", "schedule")...)
	msg := &nats.Msg{Subject: subject, Header: nats.Header{}, Data: body}
	Inject(ctx, msg.Header)
	ctx, cancel := withDefault(ctx)
	defer cancel()
	_, err := js.PublishMsg(ctx, msg, opts...)
	end(err)
	if err != nil {
		return fmt.Errorf("bus: arm schedule: %w", err)
	}
	return nil
}

// PurgeSubjects removes every message of the given subjects from stream:
// for a schedule subject this cancels the schedule, for a target subject it
// drops fired messages not yet handled. A subject may be a wildcard.
func PurgeSubjects(ctx context.Context, stream jetstream.Stream, subjects ...string) error {
	ctx, cancel := withDefault(ctx)
	defer cancel()
	var errs []error
	for _, s := range subjects {
		sctx, end := startClientSpan(ctx, "purge stream", trace.SpanKindClient,
			MessagingAttrs(s, "", "purge", "purge")...)
		err := stream.Purge(sctx, jetstream.WithPurgeSubject(s))
		end(err)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("bus: purge: %w", errors.Join(errs...))
	}
	return nil
}

// FiredConfig configures a shared durable pull consumer of fired schedule
// messages (DESIGN 5).
//
// The pool is fair across installations (docs/reliability.md "Shared
// pools"): fetched messages wait in one FIFO per installation scope,
// served round robin (the invocation intake's fairQueue); one installation
// runs at most max(1, Workers/2) handlers at once, and holds at most
// Workers+2*Workers messages fetched (running or waiting) of the
// 5*Workers a replica holds. A message of an installation at that bound is
// deferred: nak'd with a delay, which counts as a delivery, except on the
// last delivery MaxDeliver allows, which is admitted. The delays of one
// installation's deferrals are paced (pacer): each takes the next slot
// after the installation's previous deferral, slots a handler's service
// time (measured) apart divided by the handlers it may run, and at most a
// minute ahead; so deferred messages come back at the rate the pool takes
// them, and a burst of N is handled in about N service times, never in
// doubling waves (with a delay doubling per delivery, 300
// reminders of one installation on two workers were 139 delivered after
// 120 s). Waiting messages have their ack deadline extended every
// AckWait/3.
type FiredConfig struct {
	Stream     string
	Durable    string
	Filter     string
	Workers    int           // handlers running at once; default 16
	AckWait    time.Duration // default 30 s
	MaxDeliver int           // 0: unlimited
	Timeout    time.Duration // per-message deadline; default AckWait
	// MaxAckPending bounds the unacked messages; default max(1000, 4*Workers).
	// A handler that keeps messages unacked beyond its return (schenotify's
	// held deliveries) raises it.
	MaxAckPending int
}

// Fired is one fired schedule message. The handler must Ack (or Remove),
// Nak or Term it; a message left alone is redelivered after AckWait.
type Fired struct {
	msg    jetstream.Msg
	stream jetstream.Stream // the stream it was fired into
	seq    uint64           // its stream sequence
	// Subject is the target subject the schedule fired onto.
	Subject string
	// Scope and IDs are parsed from Subject: <prefix>.<plugin>.<kind>.<scope>.<ids...>.
	Kind  string
	Scope binding.Scope
	IDs   []string
	Data  []byte
	// Delivered counts deliveries of this message, 1 the first time;
	// deferrals of a flooding installation (FiredConfig) count too.
	Delivered uint64
	// Published is when the server published the fired message.
	Published time.Time
	// Origin is the span context of the trace that armed the schedule.
	Origin trace.SpanContext
}

// Ack acknowledges the message without waiting for the server to confirm:
// a lost ack only redelivers a wake-up, which the handler compares with the
// stored record, and waiting would cost a round trip (and an fsync) per
// fired message.
func (f *Fired) Ack(context.Context) error { return f.msg.Ack() }

// Remove acks the message and deletes it from its stream by its sequence.
// A handler that is done with a fired message removes it this way rather
// than by purging its subject: nats-server (2.15) empties a consumer's
// whole redelivery queue on any purge of a subject the consumer's filter
// covers, so each such purge left every message already due for
// redelivery (nak'd with a delay, deferred by the pool) waiting a full
// AckWait more (docs/reliability.md, the second "Hardening" section). A rollup on a fired subject is such a purge too, which is
// why ScheduleAt relies on the stream's per-subject limit instead. The ack
// stands when the delete fails; the error says why.
func (f *Fired) Remove(ctx context.Context) error {
	ackErr := f.msg.Ack()
	if f.stream == nil || f.seq == 0 {
		return ackErr
	}
	ctx, cancel := withDefault(ctx)
	defer cancel()
	sctx, end := startClientSpan(ctx, "delete fired message", trace.SpanKindClient,
		MessagingAttrs(f.Subject, "", "delete", "delete")...)
	err := f.stream.DeleteMsg(sctx, f.seq)
	end(err)
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return errors.Join(ackErr, fmt.Errorf("bus: delete fired message: %w", err))
	}
	return ackErr
}

// Nak asks for redelivery after delay.
func (f *Fired) Nak(delay time.Duration) error { return f.msg.NakWithDelay(delay) }

// Term stops redelivery of a message that can never be handled.
func (f *Fired) Term() error { return f.msg.Term() }

// InProgress extends the ack deadline while work continues.
func (f *Fired) InProgress() error { return f.msg.InProgress() }

// FiredHandler handles one fired message.
type FiredHandler func(ctx context.Context, f *Fired)

// firedPool is the bounded pool of one fired-message consumer: a fair
// queue of the fetched messages and the handlers running, at most
// cfg.Workers.
type firedPool struct {
	r        *Runner
	cfg      FiredConfig
	h        FiredHandler
	queue    *fairQueue
	stream   jetstream.Stream // the consumer's stream (Fired.Remove)
	held     chan struct{}    // one token per message fetched and not yet done
	inflight sync.WaitGroup
	closing  atomic.Bool // stopping: messages not yet started are nak'd

	mu      sync.Mutex
	running int

	pace *pacer // the delays of deferred messages
}

// admit queues a fetched message under its installation, or defers it
// when the installation holds its bound.
func (p *firedPool) admit(m jetstream.Msg) {
	j := job{subject: m.Subject(), start: time.Now(), fired: m}
	bound := p.queue.scopeHeld
	if p.cfg.MaxDeliver > 0 {
		if meta, err := m.Metadata(); err == nil && meta.NumDelivered >= uint64(p.cfg.MaxDeliver) {
			bound = p.queue.maxHeld // the last delivery allowed: deferring it would drop it
		}
	}
	key := firedKey(j.subject)
	res := p.queue.pushWithin(key, j, bound)
	if res != accepted {
		<-p.held
		p.r.metrics.deferred.WithLabelValues(p.cfg.Durable).Inc()
		_ = m.NakWithDelay(p.pace.defer1(key, j.start))
		return
	}
	p.pump()
}

// pump starts handlers for the jobs the queue hands out while fewer than
// Workers run. Every change that may let a job start (a push, a job done)
// calls it; the mutex makes the check and the start one step.
func (p *firedPool) pump() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.running < p.cfg.Workers {
		j, ok := p.queue.pop()
		if !ok {
			return
		}
		p.running++
		p.inflight.Add(1) // the caller is counted (loop or handler), so no Wait has returned
		go p.run(j)
	}
}

func (p *firedPool) run(j job) {
	defer p.inflight.Done()
	if p.closing.Load() {
		// a stop does not wait for a backlog: the server redelivers it
		_ = j.fired.Nak()
	} else {
		start := time.Now()
		p.r.handleFired(p.cfg, p.stream, j.fired, p.h)
		p.pace.observe(j.scope.key, time.Since(start))
	}
	p.queue.done(j)
	<-p.held
	p.mu.Lock()
	p.running--
	p.mu.Unlock()
	p.pump()
}

// keepWaiting extends the ack deadline of the waiting messages every
// AckWait/3 until stop is closed.
func (p *firedPool) keepWaiting(stop <-chan struct{}) {
	t := time.NewTicker(max(p.cfg.AckWait/3, 10*time.Millisecond))
	defer t.Stop()
	var buf []job
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		buf = p.queue.appendWaiting(buf[:0])
		for _, j := range buf {
			_ = j.fired.InProgress()
		}
		clear(buf)
		p.pace.forget(time.Now())
	}
}

// firedPullExpiry and firedHeartbeat bound the life of one fetch of a
// fired-message pool and the wait for the server's idle heartbeat on it:
// a pull request lost on the way costs at most two seconds.
const (
	firedPullExpiry = 5 * time.Second
	firedHeartbeat  = time.Second
)

// firedKey is the fairness key of a fired subject
// "<prefix>.<plugin>.<kind>.<scope>.<ids...>": its three scope tokens, a
// substring (no parse, no copy). A subject without them, or with a longer
// scope part than any valid one, has the key "": the handler terms those.
func firedKey(subject string) string {
	i := 0
	for range 3 {
		k := strings.IndexByte(subject[i:], '.')
		if k < 0 {
			return ""
		}
		i += k + 1
	}
	end := i
	for range 3 {
		k := strings.IndexByte(subject[end:], '.')
		if k < 0 {
			end = len(subject)
			break
		}
		end += k + 1
	}
	k := strings.TrimSuffix(subject[i:end], ".")
	if strings.Count(k, ".") != 2 || len(k) > maxScopeKey {
		return ""
	}
	return k
}

// ConsumeFired creates (or updates) the durable consumer and hands each
// fired message to h on a bounded pool, fair across installations (see
// FiredConfig): a message is fetched only while fewer than 5*Workers are
// held. The handler's span is a CONSUMER span linked to the trace that
// armed the schedule. Consumption stops at Shutdown: fetching stops, the
// handlers running finish, messages not yet started are nak'd.
func (r *Runner) ConsumeFired(ctx context.Context, cfg FiredConfig, h FiredHandler) error {
	if cfg.Workers <= 0 {
		cfg.Workers = 16
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = cfg.AckWait
	}
	cc := jetstream.ConsumerConfig{
		Durable:       cfg.Durable,
		FilterSubject: cfg.Filter,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    cfg.MaxDeliver,
		MaxAckPending: cfg.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	if cc.MaxAckPending <= 0 {
		cc.MaxAckPending = max(1000, cfg.Workers*4)
	}
	if cc.MaxDeliver == 0 {
		cc.MaxDeliver = -1
	}
	var (
		stream jetstream.Stream
		cons   jetstream.Consumer
	)
	err := retrySetup(ctx, func(ctx context.Context) (err error) {
		if stream, err = r.js.Stream(ctx, cfg.Stream); err != nil {
			return err
		}
		cons, err = stream.CreateOrUpdateConsumer(ctx, cc)
		return err
	})
	if err != nil {
		return fmt.Errorf("bus: consumer %s: %w", cfg.Durable, err)
	}
	// held in all: the workers and 4 per worker waiting; per installation:
	// the workers and half the waiting ones (the runner's intake ratios)
	queue := 4 * cfg.Workers
	p := &firedPool{r: r, cfg: cfg, h: h, stream: stream,
		queue: newFairQueue(cfg.Workers+queue, cfg.Workers+queue/2, math.MaxInt, math.MaxInt),
		held:  make(chan struct{}, cfg.Workers+queue)}
	p.queue.scopeRun = max(1, cfg.Workers/2)
	p.pace = newPacer(p.queue.scopeRun, maxDeferral)
	loopDone := make(chan struct{})
	keepStop, keepDone := make(chan struct{}), make(chan struct{})
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		defer close(keepDone)
		p.keepWaiting(keepStop)
	}()
	stopCtx, stop := context.WithCancel(context.Background())
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		defer close(loopDone)
		p.fetchLoop(stopCtx, cons)
	}()
	r.addStop(func() {
		p.closing.Store(true)
		stop()
		<-loopDone
		p.inflight.Wait()
		close(keepStop)
		<-keepDone
	})
	return nil
}

// fetchLoop fetches fired messages while ctx lives, one pull request at a
// time for as many messages as the pool has room for (at most Workers),
// and admits each as it arrives.
//
// It fetches rather than using nats.go's message iterator (Messages):
// the iterator delivers into a channel whose capacity is its batch, shared
// with the server's heartbeats and status messages, and drops what does
// not fit. With a batch of Workers (2 in the small configuration) a
// dropped message left the iterator counting on a pull the server had
// finished, so nothing was fetched until a missed heartbeat (15 s twice)
// reset it, and the dropped message itself came back only after AckWait:
// under the race detector about one run in four of 300 reminders due at
// once stalled for 30 s with 172 messages undelivered and no pull request
// waiting. A fetch's channel holds twice its batch and is
// drained by its own goroutine. An error (the server answers a pending
// pull with a terminal status when a node holding the consumer restarts)
// is retried after a second, so fired messages never stop for good.
func (p *firedPool) fetchLoop(ctx context.Context, cons jetstream.Consumer) {
	for {
		// one place for the first message (waiting for it), then as many
		// more as are free, up to Workers
		select {
		case p.held <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := 1
	more:
		for n < p.cfg.Workers {
			select {
			case p.held <- struct{}{}:
				n++
			default:
				break more
			}
		}
		got := 0
		fctx, cancel := context.WithTimeout(ctx, firedPullExpiry)
		batch, err := cons.Fetch(n, jetstream.FetchContext(fctx), jetstream.FetchHeartbeat(firedHeartbeat))
		if err == nil {
			for m := range batch.Messages() {
				got++
				p.admit(m) // takes one place
			}
			err = batch.Error()
		}
		cancel()
		for range n - got {
			<-p.held
		}
		if ctx.Err() != nil || p.r.nc.IsClosed() {
			return
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
			p.r.log.Warn("fired-message fetch failed; retrying", "consumer", p.cfg.Durable, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

func (r *Runner) handleFired(cfg FiredConfig, stream jetstream.Stream, m jetstream.Msg, h FiredHandler) {
	f := &Fired{msg: m, stream: stream, Subject: m.Subject(), Data: m.Data(), Origin: RemoteSpanContext(m.Headers())}
	if meta, err := m.Metadata(); err == nil {
		f.Delivered, f.Published, f.seq = meta.NumDelivered, meta.Timestamp, meta.Sequence.Stream
	}
	kind, sc, ids, err := r.subjects.ParseInternal(r.cfg.Plugin, f.Subject)
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(MessagingAttrs(f.Subject, cfg.Filter, "process", cfg.Durable)...),
		trace.WithAttributes(AttrPlugin.String(r.cfg.Plugin), attrConsumerGroup.String(cfg.Durable)),
	}
	if f.Origin.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: f.Origin}))
	}
	// a fired message starts its own trace, linked to the one that armed it
	ctx, span := r.tracer.Start(trace.ContextWithSpanContext(r.baseCtx, trace.SpanContext{}), "process "+cfg.Filter, opts...)
	defer span.End()
	if err != nil {
		r.log.ErrorContext(ctx, "fired message with a malformed subject", "consumer", cfg.Durable)
		_ = m.Term()
		return
	}
	f.Kind, f.Scope, f.IDs = kind, sc, ids
	span.SetAttributes(AttrScope.String(sc.String()))
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	r.metrics.fired.WithLabelValues(cfg.Durable).Inc()
	h(ctx, f)
}
