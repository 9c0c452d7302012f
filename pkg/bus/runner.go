package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Invocation is one decoded, checked request handed to a Handler. It is
// valid for the duration of the handler call.
type Invocation struct {
	Endpoint wire.Endpoint
	// ID is the Langbot-Invocation-Id; a retry reuses it.
	ID      string
	Scope   binding.Scope
	Binding binding.Binding
	// Config is the installation's config snapshot for this invocation.
	Config json.RawMessage
	// Authority is the authority the invocation is served under.
	Authority Authority
	// Exactly one of these is set, according to Endpoint.
	Command *wire.Command
	Event   *wire.Event
	Tool    *wire.Tool
	Page    *wire.Page
}

// Name returns the command, event, tool or page-endpoint name.
func (inv *Invocation) Name() string {
	switch {
	case inv.Command != nil:
		return inv.Command.Name
	case inv.Event != nil:
		return inv.Event.Name
	case inv.Tool != nil:
		return inv.Tool.Name
	case inv.Page != nil:
		return inv.Page.Endpoint
	}
	return ""
}

// Handler serves one invocation. It returns the reply value (marshalled to
// JSON by the runner: a CommandReply, EventReply, ToolReply or PageReply) or
// an error; an *Error (or a wrapped sentinel) goes on the wire as is,
// anything else as 500 internal. A handler never sees NATS types.
type Handler func(ctx context.Context, inv *Invocation) (any, error)

// NotFinal wraps a successful reply that must not be kept for retries:
// the request is answered with reply, but its dedupe marker is deleted as
// after a 5xx, so a retry with the same invocation id runs again. Tools use
// it for results that report a temporary failure in their body (spec
// schenotify 3.1.5).
func NotFinal(reply any) any { return notFinal{reply} }

type notFinal struct{ reply any }

// Handlers are a plugin's endpoint handlers. A nil handler makes its
// endpoint answer 404 not_found (event: both flags false).
type Handlers struct {
	Command Handler
	Event   Handler
	Tool    Handler
	Page    Handler
	// Dedupe reports whether an invocation changes state and so must not
	// repeat its effect when retried with the same invocation id (DESIGN
	// 3.1). Nil: nothing is deduplicated.
	Dedupe func(inv *Invocation) bool
	// ServeInactive reports whether an invocation whose binding equals a
	// disabled or superseded authority is still served (read-only page
	// calls of takeover). Nil: never.
	ServeInactive func(inv *Invocation) bool
}

func (h *Handlers) of(ep wire.Endpoint) Handler {
	switch ep {
	case wire.EndpointCommand:
		return h.Command
	case wire.EndpointEvent:
		return h.Event
	case wire.EndpointTool:
		return h.Tool
	case wire.EndpointPage:
		return h.Page
	}
	return nil
}

// RunnerConfig is what a service declares: its name, its handlers, the
// streams, fired-message consumers and background parts it needs, and its
// limits. The runner creates, starts and stops all of it (see Run).
type RunnerConfig struct {
	Plugin      string // plugin name: micro service name, queue group, subject token
	Version     string // semantic version for micro INFO; default 0.1.0
	Description string

	Handlers Handlers
	// ObserveEvents is the plugin's plugin.Declaration.ObserveEvents: its
	// packages forward events without waiting and ignore the answer, so
	// every event is answered with both flags false. An Event handler
	// that returns anything else is a bug: its decision would be lost
	// without a word in the packages, so the runner drops it here and
	// logs an error.
	ObserveEvents bool

	// Streams are the service's own streams, created or updated first, in
	// order; Stream returns their handles.
	Streams []StreamSpec
	// Consumers are the service's fired-message consumers, opened with the
	// other intake once every part runs, and drained first at shutdown.
	Consumers []Consumer
	// Parts are the service's background work, started in order after the
	// streams, buckets and authority view and before intake, stopped in
	// reverse order after intake drained.
	Parts []Part
	// HostTimeout bounds a host action of the runner's Host whose ctx has
	// no earlier deadline; default DefaultHostTimeout.
	HostTimeout time.Duration
	// SetupTimeout bounds Run's start (streams, buckets, view, consumers);
	// default 1 min.
	SetupTimeout time.Duration
	// ShutdownTimeout bounds Run's shutdown (intake drain, workers, parts);
	// default DefaultShutdownTimeout. Handlers still running when it ends
	// have their context cancelled and are no longer waited for.
	ShutdownTimeout time.Duration

	Workers int // concurrent handlers; default 64
	// Queue bounds the requests waiting for a worker, all installations
	// together (Workers+Queue held at once, running or waiting); default
	// 4*Workers. Waiting requests are served round
	// robin across installations (docs/reliability.md "Shared pools"):
	// one installation's backlog never sits in front of another's
	// request.
	Queue int
	// ScopeQueue bounds the requests of one installation waiting beyond
	// the workers: an installation holds at most Workers+ScopeQueue
	// requests at once, running or waiting. Default Queue/2, so that one
	// flooding installation leaves the other half of the queue to the
	// rest, while an installation alone may use every worker.
	ScopeQueue int
	// BodyBudget bounds the bytes of request bodies held at once, waiting
	// or running, all installations together; default the larger of
	// 64 MiB and 4*MaxBody. At least MaxBody.
	BodyBudget int
	// ScopeBytes bounds the body bytes of one installation's requests
	// held at once, waiting or running; default BodyBudget/2. At least
	// MaxBody.
	ScopeBytes int
	// A request beyond Queue, ScopeQueue, BodyBudget or ScopeBytes is
	// answered 503 unavailable at once and changes nothing.
	MaxBody           int           // request body limit in bytes (413 at once beyond it); default 1 MiB
	InvocationTimeout time.Duration // per-request deadline; default 30 s
	DedupeTTL         time.Duration // dedupe bucket TTL; default 24 h
	Replicas          int           // replicas of the plugin's buckets; default 1
	// SecretFields are top-level config fields sealed at rest in the
	// authority record (githubkit: the token).
	SecretFields []string
	// Purge removes a removed scope's data kept outside the plugin's two
	// buckets (streams, schedules, blobs). The runner purges the buckets
	// itself afterwards (all but the tombstone). It must be idempotent.
	Purge func(ctx context.Context, sc binding.Scope) error
	// OnTransition is called on the replica that changed a scope's
	// authority (lifecycle message, or an invocation with a newer binding),
	// after the record is stored and, for a lifecycle message, before it is
	// acked: pause, resume or reschedule work here. It must be idempotent;
	// an error makes the lifecycle message redeliver.
	OnTransition func(ctx context.Context, sc binding.Scope, prev *Authority, next Authority) error
	// OnAuthority is called on every replica, from the view's watch, when a
	// scope's state or binding changes. It must not block.
	OnAuthority func(sc binding.Scope, a Authority)
	// Retention, when not 0, removes (as a revoke uninstall does) every
	// installation whose authority was last written more than Retention
	// ago: the LangBot packages never revoke, and refresh their attach
	// periodically (spec/langbot-packages.md 6). 0 (the default) is off;
	// otherwise at least MinRetention (24 h; the packages refresh hourly).
	Retention time.Duration
	// RetentionSweep is the period of the retention sweep; default
	// Retention/24 within [1 min, 1 h].
	RetentionSweep time.Duration
}

// Consumer is a fired-message consumer a service declares: the durable
// consumer's settings and the handler of its messages (see ConsumeFired).
type Consumer struct {
	FiredConfig
	Handler FiredHandler
}

// Runner serves one plugin on NATS: the micro service with the four
// endpoints, the bounded worker pool, binding and authority checks,
// invocation dedupe, the lifecycle consumer, and the fired-message
// consumers and background parts a service declares. Create it with
// NewRunner and Run it (or Start it and Shutdown it); shutdown stops
// intake, waits for every worker, then stops the parts.
type Runner struct {
	cfg      RunnerConfig
	nc       *nats.Conn
	js       jetstream.JetStream
	keyring  *Keyring
	now      func() time.Time
	log      *slog.Logger
	tracer   trace.Tracer
	subjects wire.Subjects
	metrics  *runnerMetrics

	view     *AuthorityView
	kv       *KV
	dedupe   jetstream.KeyValue
	dedupeKV *KV
	store    *AuthorityStore
	host     *Host

	// queue holds the waiting jobs, fair across scopes; ready carries one
	// token per job pushed, so a worker that receives one finds a job,
	// and closing it lets the workers drain the queue and stop.
	queue *fairQueue
	ready chan struct{}
	// intake guards ready: micro drains subscriptions asynchronously, so
	// the dispatcher may still run after Stop returns and must not send on
	// a closed channel.
	intake       sync.RWMutex
	intakeClosed bool
	baseCtx      context.Context
	cancel       context.CancelFunc
	wg           sync.WaitGroup // workers and async writes
	bg           sync.WaitGroup // consumers and watches

	mu        sync.Mutex
	started   bool
	serving   bool // Start completed: everything runs
	stopped   bool
	svc       micro.Service
	stops     []func()
	stopWatch func()
	lifecycle jetstream.ConsumeContext
	streams   map[string]jetstream.Stream
	parts     []Part // started, in start order
}

type job struct {
	ep      wire.Endpoint
	subject string
	reply   string
	header  nats.Header
	data    []byte
	start   time.Time
	scope   *scopeQueue // set by fairQueue.push
	// fired is the message of a fired-message pool's job (ConsumeFired),
	// which uses subject and start only; nil for an invocation.
	fired jetstream.Msg
}

// NewRunner checks cfg, fills deps' defaults and returns a Runner; it does
// no I/O.
func NewRunner(cfg RunnerConfig, deps Deps) (*Runner, error) {
	if err := checkPlugin(cfg.Plugin); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	deps, err := deps.WithDefaults()
	if err != nil {
		return nil, err
	}
	if len(cfg.SecretFields) > 0 && deps.Keyring == nil {
		return nil, fmt.Errorf("%w: secret fields need a state keyring", ErrInvalidConfig)
	}
	for _, p := range cfg.Parts {
		if p == nil {
			return nil, fmt.Errorf("%w: nil part", ErrInvalidConfig)
		}
	}
	for _, c := range cfg.Consumers {
		if c.Handler == nil || c.Stream == "" || c.Durable == "" {
			return nil, fmt.Errorf("%w: consumer %q needs a stream, a durable name and a handler", ErrInvalidConfig, c.Durable)
		}
	}
	if cfg.Version == "" {
		cfg.Version = "0.1.0"
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 64
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 4 * cfg.Workers
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.ScopeQueue <= 0 {
		cfg.ScopeQueue = max(cfg.Queue/2, 1)
	}
	cfg.ScopeQueue = min(cfg.ScopeQueue, cfg.Queue)
	if cfg.BodyBudget <= 0 {
		cfg.BodyBudget = max(64<<20, 4*cfg.MaxBody)
	}
	if cfg.ScopeBytes <= 0 {
		cfg.ScopeBytes = cfg.BodyBudget / 2
	}
	if cfg.BodyBudget < cfg.MaxBody || cfg.ScopeBytes < cfg.MaxBody {
		return nil, fmt.Errorf("%w: body budget %d and scope bytes %d must each be at least max body %d",
			ErrInvalidConfig, cfg.BodyBudget, cfg.ScopeBytes, cfg.MaxBody)
	}
	if cfg.InvocationTimeout <= 0 {
		cfg.InvocationTimeout = 30 * time.Second
	}
	if cfg.DedupeTTL <= 0 {
		cfg.DedupeTTL = 24 * time.Hour
	}
	if cfg.HostTimeout <= 0 {
		cfg.HostTimeout = wire.DefaultHostTimeout
	}
	if cfg.Retention != 0 && cfg.Retention < MinRetention {
		return nil, fmt.Errorf("%w: retention %v: want 0 (off) or at least %v", ErrInvalidConfig, cfg.Retention, MinRetention)
	}
	if cfg.RetentionSweep <= 0 {
		cfg.RetentionSweep = min(max(cfg.Retention/24, time.Minute), time.Hour)
	}
	if cfg.SetupTimeout <= 0 {
		cfg.SetupTimeout = time.Minute
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	m, err := newRunnerMetrics(deps.Registerer, cfg.Plugin)
	if err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", ErrInvalidConfig, err)
	}
	r := &Runner{
		cfg: cfg, nc: deps.Conn, js: deps.JetStream, keyring: deps.Keyring, now: deps.Clock, log: deps.Logger,
		tracer: tracerOrNoop(deps.TracerProvider), subjects: deps.Subjects, metrics: m,
		queue:   newFairQueue(cfg.Workers+cfg.Queue, cfg.Workers+cfg.ScopeQueue, cfg.ScopeBytes, cfg.BodyBudget),
		ready:   make(chan struct{}, cfg.Workers+cfg.Queue),
		streams: map[string]jetstream.Stream{},
	}
	r.view = newAuthorityView(cfg.OnAuthority)
	r.host = &Host{nc: deps.Conn, subjects: deps.Subjects, plugin: cfg.Plugin, tracer: r.tracer, timeout: cfg.HostTimeout, onRefused: r.markStale}
	return r, nil
}

// DefaultShutdownTimeout is the runner's default drain bound: well under
// the 30 s terminationGracePeriodSeconds of deploy/k8s, leaving the process
// time to close its HTTP server and connections after it.
const DefaultShutdownTimeout = 15 * time.Second

// Stream returns the handle of one of the declared Streams (valid after
// Start; nil for a name not declared).
func (r *Runner) Stream(name string) jetstream.Stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.streams[name]
}

// Run serves the plugin until ctx is done: it creates the streams and
// buckets, loads the authority view, starts the parts, opens intake
// (workers, lifecycle and fired-message consumers, endpoints) and reports
// Ready; then it shuts down in reverse: intake drains and every handler
// returns, the parts stop, the buckets close. A start that fails is undone
// the same way. It returns nil for a ctx-requested stop and never closes
// the connection it was given. Run is called once.
func (r *Runner) Run(ctx context.Context) error {
	setup, cancel := context.WithTimeout(ctx, r.cfg.SetupTimeout)
	err := r.Start(setup)
	cancel()
	if err == nil {
		<-ctx.Done()
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.ShutdownTimeout)
	defer cancel()
	return errors.Join(err, r.Shutdown(sctx))
}

// Subjects returns the subject builder of the runner's prefix.
func (r *Runner) Subjects() wire.Subjects { return r.subjects }

// JetStream returns the JetStream context.
func (r *Runner) JetStream() jetstream.JetStream { return r.js }

// Conn returns the NATS connection.
func (r *Runner) Conn() *nats.Conn { return r.nc }

// KV returns the plugin's main bucket (valid after Start).
func (r *Runner) KV() *KV { return r.kv }

// Dedupe returns the plugin's dedupe bucket (valid after Start), for a
// service's own idempotency records (<scope>.<kind>.<hash>, DESIGN 4).
func (r *Runner) Dedupe() *KV { return r.dedupeKV }

// Host returns the host-action client; a 403 binding_refused it receives
// marks the scope's authority superseded.
func (r *Runner) Host() *Host { return r.host }

// Keyring returns the state keyring (nil when none was given).
func (r *Runner) Keyring() *Keyring { return r.keyring }

// View returns the in-process authority view.
func (r *Runner) View() *AuthorityView { return r.view }

// Authority reads the stored authority of sc (not the view): background
// work calls it when it runs. Nil means no record.
func (r *Runner) Authority(ctx context.Context, sc binding.Scope) (*Authority, error) {
	return r.store.Get(ctx, sc)
}

// MovedOn reports whether sc's stored authority is active under another
// binding than sent: the installation has left the binding a refused host
// action carried (a config save between the refusal and the caller's
// reaction), so the work must be retried under the current binding, not
// parked or dropped as for a superseded installation. A read failure
// reports false.
func (r *Runner) MovedOn(ctx context.Context, sc binding.Scope, sent binding.Binding) bool {
	a, err := r.store.Get(ctx, sc)
	return err == nil && a.Active() && a.Binding != sent
}

// OpenConfig returns a's config with its secret fields opened.
func (r *Runner) OpenConfig(sc binding.Scope, a *Authority) (json.RawMessage, error) {
	return r.store.OpenConfig(sc, a)
}

// Ready reports whether the runner serves: started with every part and
// consumer running, not stopping, the authority view loaded and the
// connection up. It is the service's readiness (/readyz).
func (r *Runner) Ready() bool {
	r.mu.Lock()
	ok := r.serving && !r.stopped
	r.mu.Unlock()
	return ok && r.view.Ready() && r.nc.IsConnected()
}

// Start creates the declared streams and the plugin's buckets, loads the
// authority view, starts the parts, then the workers, the lifecycle
// consumer, the declared fired-message consumers and the micro service.
// The context bounds the setup only; Shutdown ends the service (and undoes
// a Start that failed).
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("bus: runner already started")
	}
	r.started = true
	r.mu.Unlock()

	for _, spec := range r.cfg.Streams {
		st, err := EnsureStream(ctx, r.js, spec)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.streams[spec.Name] = st
		r.mu.Unlock()
	}
	main, err := EnsureBucket(ctx, r.js, Bucket(r.cfg.Plugin), BucketSpec{Replicas: r.cfg.Replicas})
	if err != nil {
		return err
	}
	r.dedupe, err = EnsureBucket(ctx, r.js, DedupeBucket(r.cfg.Plugin), BucketSpec{Replicas: r.cfg.Replicas, TTL: r.cfg.DedupeTTL})
	if err != nil {
		return err
	}
	r.kv = NewKV(r.nc, main)
	r.dedupeKV = NewKV(r.nc, r.dedupe)
	r.store = NewAuthorityStore(main, r.keyring, r.cfg.SecretFields, r.now)
	r.baseCtx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))

	stopWatch, err := r.view.watch(r.baseCtx, main, func(err error) {
		r.log.Error("authority view: bad record", "err", err)
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.stopWatch = stopWatch
	r.mu.Unlock()
	select {
	case <-r.view.ready:
	case <-ctx.Done():
		return fmt.Errorf("bus: loading authority view: %w", ctx.Err())
	}

	for _, p := range r.cfg.Parts {
		if err := p.Start(r.baseCtx); err != nil {
			return fmt.Errorf("bus: start part: %w", err)
		}
		r.mu.Lock()
		r.parts = append(r.parts, p)
		r.mu.Unlock()
	}

	for i := 0; i < r.cfg.Workers; i++ {
		r.wg.Add(1)
		go r.worker()
	}
	if err := r.startLifecycle(ctx); err != nil {
		return err
	}
	for _, c := range r.cfg.Consumers {
		if err := r.ConsumeFired(ctx, c.FiredConfig, c.Handler); err != nil {
			return err
		}
	}

	svc, err := micro.AddService(r.nc, micro.Config{
		Name:        r.cfg.Plugin,
		Version:     r.cfg.Version,
		Description: r.cfg.Description,
		QueueGroup:  r.cfg.Plugin,
	})
	if err != nil {
		return fmt.Errorf("bus: micro service: %w", err)
	}
	for _, ep := range wire.Endpoints {
		if err := svc.AddEndpoint(string(ep), micro.HandlerFunc(r.dispatcher(ep)),
			micro.WithEndpointSubject(r.subjects.InvocationAll(r.cfg.Plugin, ep)),
			micro.WithEndpointQueueGroup(r.cfg.Plugin),
			micro.WithEndpointPendingLimits(nats.DefaultSubPendingMsgsLimit, pendingBytes(r.cfg))); err != nil {
			_ = svc.Stop()
			return fmt.Errorf("bus: endpoint %s: %w", ep, err)
		}
	}
	r.mu.Lock()
	r.svc = svc
	r.mu.Unlock()
	// The server must know the endpoint subscriptions before Start
	// reports the service up, or a host's first request finds no
	// responders.
	fctx, cancel := withDefault(ctx)
	defer cancel()
	if err := r.nc.FlushWithContext(fctx); err != nil {
		return fmt.Errorf("bus: flush subscriptions: %w", err)
	}
	r.mu.Lock()
	r.serving = true
	r.mu.Unlock()
	return nil
}

func (r *Runner) addStop(f func()) {
	r.mu.Lock()
	r.stops = append(r.stops, f)
	r.mu.Unlock()
}

// Shutdown stops intake (micro endpoints, consumers), lets queued and
// running invocations and fired messages finish, waits for every goroutine
// the runner started, then stops the parts in reverse order, giving up
// when ctx is done. It is idempotent and never closes the connection it
// was given.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	if r.stopped || !r.started {
		r.stopped = true
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	svc, stops, parts, stopWatch := r.svc, r.stops, r.parts, r.stopWatch
	r.mu.Unlock()

	var errs []error
	if svc != nil {
		if err := svc.Stop(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, err)
		}
	}
	if r.lifecycle != nil {
		r.lifecycle.Drain()
		select {
		case <-r.lifecycle.Closed():
		case <-ctx.Done():
		}
	}
	// fired-message consumers, newest first
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	r.intake.Lock()
	r.intakeClosed = true
	close(r.ready)
	r.intake.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); r.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		// a stuck handler must not hold the process past the pod's grace
		// period: cancel what still runs and go on
		if r.cancel != nil {
			r.cancel()
		}
		errs = append(errs, fmt.Errorf("bus: shutdown: %w", ctx.Err()))
	}
	// intake drained and every handler returned: the parts may stop
	for i := len(parts) - 1; i >= 0; i-- {
		if err := parts[i].Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("bus: stop part: %w", err))
		}
	}
	if stopWatch != nil {
		stopWatch()
	}
	if r.cancel != nil {
		r.cancel()
	}
	for _, kv := range []*KV{r.kv, r.dedupeKV} {
		if kv != nil {
			errs = append(errs, kv.Close())
		}
	}
	return errors.Join(errs...)
}

// dispatcher is the micro handler: it runs serially per subscription, so
// it only captures what the worker needs and queues it under its scope
// (fairQueue); a body over MaxBody is answered 413 and a request over a
// bound 503, at once. It never keeps the micro request.
func (r *Runner) dispatcher(ep wire.Endpoint) func(micro.Request) {
	prefix := strings.TrimSuffix(r.subjects.InvocationAll(r.cfg.Plugin, ep), "*.*.*")
	return func(req micro.Request) {
		j := job{ep: ep, subject: req.Subject(), reply: req.Reply(), header: nats.Header(req.Headers()), data: req.Data(), start: time.Now()}
		if j.reply == "" {
			r.metrics.outcome(ep, "no_reply")
			return
		}
		if len(j.data) > r.cfg.MaxBody {
			r.metrics.outcome(ep, "too_large")
			r.answerError(j.reply, wire.Errorf(wire.ErrTooLarge, "request body of %d bytes exceeds %d", len(j.data), r.cfg.MaxBody))
			return
		}
		// A scope no attach has reached is refused here, before it takes
		// a place in the queue: an invented installation gets no fair
		// share of the pools and creates nothing (DESIGN 3.3).
		if _, _, sc, err := r.subjects.ParseInvocation(j.subject); err == nil {
			if _, ok := r.view.Lookup(sc); !ok {
				r.metrics.outcome(ep, wire.ReasonNotAttached)
				r.answerError(j.reply, wire.ErrNotAttached)
				return
			}
		}
		res := fullQueue
		r.intake.RLock()
		if !r.intakeClosed {
			if res = r.queue.push(scopeKey(j.subject, prefix), j); res == accepted {
				// never blocks: ready holds at most one token per waiting
				// job, and at most Workers+Queue are held
				r.ready <- struct{}{}
			}
		}
		r.intake.RUnlock()
		if res == accepted {
			return
		}
		r.metrics.rejected.Inc()
		r.metrics.outcome(ep, "rejected")
		if res == fullScope {
			r.answerError(j.reply, wire.Errorf(wire.ErrUnavailable, "this installation has %d requests in progress at %s, retry later", r.cfg.Workers+r.cfg.ScopeQueue, r.cfg.Plugin))
			return
		}
		r.answerError(j.reply, wire.Errorf(wire.ErrUnavailable, "%s is at capacity or stopping, retry later", r.cfg.Plugin))
	}
}

func (r *Runner) worker() {
	defer r.wg.Done()
	for range r.ready {
		j, ok := r.queue.pop()
		if !ok {
			continue // cannot happen: one token per job
		}
		r.serve(j)
		r.queue.done(j)
	}
}

// Queued returns the invocations waiting for a worker and the number of
// installations with invocations waiting or running: a figure for dashboards and for tests that
// must know a request is queued before they go on.
func (r *Runner) Queued() (invocations, installations int) { return r.queue.queued() }

// serve runs one invocation end to end and answers it.
func (r *Runner) serve(j job) {
	ctx := Extract(r.baseCtx, j.header)
	ctx, span := r.tracer.Start(ctx, "process "+r.subjects.InvocationAll(r.cfg.Plugin, j.ep),
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(MessagingAttrs(j.subject, r.subjects.InvocationAll(r.cfg.Plugin, j.ep), "process", string(j.ep))...),
		trace.WithAttributes(AttrPlugin.String(r.cfg.Plugin), AttrEndpoint.String(string(j.ep)), attrBodySize.Int(len(j.data))),
	)
	defer span.End()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.InvocationTimeout)
	defer cancel()

	h, body, outcome := r.handle(ctx, span, j)
	if err := r.nc.PublishMsg(&nats.Msg{Subject: j.reply, Header: h, Data: body}); err != nil {
		r.log.ErrorContext(ctx, "reply not sent", "endpoint", j.ep, "err", err)
	}
	span.SetAttributes(AttrOutcome.String(outcome))
	r.metrics.outcome(j.ep, outcome)
	r.metrics.latency.WithLabelValues(string(j.ep)).Observe(time.Since(j.start).Seconds())
}

// handle returns the reply headers, body and outcome label.
func (r *Runner) handle(ctx context.Context, span trace.Span, j job) (nats.Header, []byte, string) {
	fail := func(e *wire.Error) (nats.Header, []byte, string) {
		span.SetStatus(codes.Error, e.Word)
		span.SetAttributes(attrErrorType.String(e.Word))
		h, b := e.Encode()
		return h, b, e.Word
	}
	_, ep, subjScope, err := r.subjects.ParseInvocation(j.subject)
	if err != nil || ep != j.ep {
		return fail(wire.Errorf(wire.ErrBadRequest, "invalid scope in subject"))
	}
	span.SetAttributes(AttrScope.String(subjScope.String()))
	req, err := wire.DecodeRequest(j.ep, j.data)
	if err != nil {
		// the refusal's Reason never quotes the body; anything else might
		reason := "malformed request body"
		if env := (*wire.EnvelopeError)(nil); errors.As(err, &env) {
			reason = env.Reason
		}
		return fail(wire.Errorf(wire.ErrBadRequest, "%s", reason))
	}
	bodyScope, _ := req.Binding.Scope()
	if bodyScope != subjScope {
		return fail(wire.WithReason(wire.ErrBindingRefused, wire.ReasonScopeMismatch, "the subject's scope differs from the body's binding"))
	}
	id := j.header.Get(wire.HeaderInvocationID)
	if id == "" || len(id) > 256 {
		return fail(wire.Errorf(wire.ErrBadRequest, "missing or oversized %s header", wire.HeaderInvocationID))
	}
	inv := &Invocation{Endpoint: j.ep, ID: id, Scope: subjScope, Binding: req.Binding, Config: req.Config,
		Command: req.Command, Event: req.Event, Tool: req.Tool, Page: req.Page}

	write, err := r.admit(ctx, inv)
	if err != nil {
		e, _ := wire.AsError(err)
		if e.Code >= 500 {
			r.log.ErrorContext(ctx, "authority check failed", "scope", subjScope.String(), "err", err)
		}
		return fail(e)
	}

	handler := r.cfg.Handlers.of(j.ep)
	var reply any
	var herr error
	dedupe := handler != nil && r.cfg.Handlers.Dedupe != nil && r.cfg.Handlers.Dedupe(inv)
	if dedupe {
		var stored *dedupeRecord
		stored, herr = r.claim(ctx, inv)
		if herr == nil && stored != nil {
			waitWrite(write)
			return stored.header(), stored.Body, "replayed"
		}
	}
	if herr == nil {
		switch {
		case handler != nil:
			reply, herr = r.call(ctx, handler, inv)
			if j.ep == wire.EndpointEvent && r.cfg.ObserveEvents && herr == nil {
				reply = r.observed(ctx, inv, reply)
			}
		case j.ep == wire.EndpointEvent:
			reply = wire.EventReply{}
		default:
			herr = wire.Errorf(wire.ErrNotFound, "%s has no %s endpoint", r.cfg.Plugin, j.ep)
		}
	}
	// a newer binding must be stored before the reply claims success
	if werr := waitWrite(write); werr != nil && herr == nil {
		herr = fmt.Errorf("store authority: %w: %w", wire.ErrUnavailable, werr)
	}

	keep := true
	if nf, ok := reply.(notFinal); ok {
		reply, keep = nf.reply, false
	}
	var h nats.Header
	var body []byte
	outcome := "ok"
	if herr != nil {
		e, known := wire.AsError(herr)
		if !known || e.Code >= 500 {
			r.log.ErrorContext(ctx, "invocation failed", "scope", subjScope.String(), "endpoint", j.ep, "err", herr)
		}
		h, body, outcome = fail(e)
	} else {
		body, err = json.Marshal(reply)
		if err != nil {
			r.log.ErrorContext(ctx, "reply not encodable", "endpoint", j.ep, "err", err)
			h, body, outcome = fail(&wire.Error{Code: 500, Word: "internal", Message: "internal error"})
		} else {
			h = nats.Header{}
			h.Set(wire.HeaderContentType, wire.ContentTypeJSON)
		}
	}
	if dedupe && !errors.Is(herr, wire.ErrInProgress) {
		r.settle(ctx, inv, h, body, keep)
	}
	return h, body, outcome
}

// call runs a handler, turning a panic into a 500 so one bad request cannot
// take the service down.
func (r *Runner) call(ctx context.Context, h Handler, inv *Invocation) (reply any, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.ErrorContext(ctx, "handler panic", "endpoint", inv.Endpoint, "panic", fmt.Sprint(p))
			reply, err = nil, &wire.Error{Code: 500, Word: "internal", Message: "internal error"}
		}
	}()
	return h(ctx, inv)
}

// observed is the reply to an event of an ObserveEvents plugin: always
// both flags false. A decision its handler returned is logged and dropped.
func (r *Runner) observed(ctx context.Context, inv *Invocation, reply any) wire.EventReply {
	if er, ok := reply.(wire.EventReply); !ok || er.PreventDefault || er.PreventPostorder || er.ReplyMessageChain != nil {
		r.log.ErrorContext(ctx, "an observed event's handler returned a decision; answered with none", "scope", inv.Scope.String(), "event", inv.Event.Name)
	}
	return wire.EventReply{}
}

// admit decides from the in-process view whether inv is served (DESIGN
// 3.3). A newer binding is written asynchronously: the returned channel
// yields the write's result.
func (r *Runner) admit(ctx context.Context, inv *Invocation) (<-chan error, error) {
	a, ok := r.view.Lookup(inv.Scope)
	var cur *Authority
	if ok {
		cur = &a
	}
	d := Transition(cur, Input{Kind: InputInvocation, Binding: inv.Binding, Config: inv.Config}, r.now())
	switch d.Outcome {
	case Serve:
		inv.Authority = a
		return nil, nil
	case Refuse:
		if cur != nil && cur.State != StateRemoved && inv.Binding.Compare(cur.Binding) == 0 &&
			r.cfg.Handlers.ServeInactive != nil && r.cfg.Handlers.ServeInactive(inv) {
			inv.Authority = a
			return nil, nil
		}
		switch reason := refuseReason(cur, inv.Binding); reason {
		case wire.ReasonNotAttached:
			return nil, wire.ErrNotAttached
		case wire.ReasonTooFarAhead:
			return nil, wire.WithReason(wire.ErrBindingRefused, reason, "the binding is too far ahead of the installation's newest attach; its attach must be applied first")
		default:
			return nil, wire.WithReason(wire.ErrBindingRefused, reason, "the binding is not the installation's active one")
		}
	case Write:
		// Serve at once under the new binding; the view sees it now so the
		// next invocation with the same binding is served without a write
		// (until the write fails: then the view takes back what it had).
		inv.Authority = d.Next
		before, had := r.view.entry(inv.Scope)
		r.view.apply(inv.Scope, d.Next, 0)
		ch := make(chan error, 1)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			prev, dec, err := r.store.Apply(wctx, inv.Scope, Input{Kind: InputInvocation, Binding: inv.Binding, Config: inv.Config})
			if err == nil && dec.Outcome == Write {
				r.view.apply(inv.Scope, dec.Next, dec.Revision)
			}
			if err != nil {
				// not stored: the next invocation must try again, not be
				// served from a view that never reached storage
				r.view.revert(inv.Scope, d.Next, before, had)
			}
			if err == nil && dec.Outcome == Write && r.cfg.OnTransition != nil {
				if terr := r.cfg.OnTransition(wctx, inv.Scope, prev, dec.Next); terr != nil {
					r.log.ErrorContext(wctx, "authority transition hook failed", "scope", inv.Scope.String(), "err", terr)
				}
			}
			ch <- err
		}()
		return ch, nil
	}
	return nil, wire.WithReason(wire.ErrBindingRefused, "ignored", "the binding is not the installation's active one")
}

// refuseReason is the reason of a refused invocation with binding b.
func refuseReason(cur *Authority, b binding.Binding) string {
	switch {
	case cur == nil:
		return wire.ReasonNotAttached
	case cur.State == StateRemoved:
		return wire.ReasonRemoved
	case b.Compare(cur.Binding) < 0:
		return wire.ReasonStaleBinding
	case b.Compare(cur.Binding) > 0:
		return wire.ReasonTooFarAhead
	}
	return wire.ReasonInstallationInactive
}

func waitWrite(ch <-chan error) error {
	if ch == nil {
		return nil
	}
	return <-ch
}

func (r *Runner) answerError(reply string, e *wire.Error) {
	h, b := e.Encode()
	if err := r.nc.PublishMsg(&nats.Msg{Subject: reply, Header: h, Data: b}); err != nil {
		r.log.Error("error reply not sent", "err", err)
	}
}

// markStale is the host client's hook for 403 binding_refused to an
// action sent with b: the authority becomes superseded only if b is its
// binding (and it is active); a refusal of any other binding changes
// nothing. It returns the stored authority's binding when that is active
// and not b, for the client to retry with.
func (r *Runner) markStale(ctx context.Context, sc binding.Scope, b binding.Binding) (binding.Binding, bool) {
	if r.store == nil {
		return binding.Binding{}, false
	}
	prev, d, err := r.store.Apply(ctx, sc, Input{Kind: InputStale, Binding: b})
	if err != nil {
		r.log.ErrorContext(ctx, "marking authority superseded failed", "scope", sc.String(), "err", err)
		return binding.Binding{}, false
	}
	if d.Outcome != Write {
		if prev.Active() && prev.Binding != b {
			return prev.Binding, true
		}
		return binding.Binding{}, false
	}
	r.view.apply(sc, d.Next, d.Revision)
	if r.cfg.OnTransition != nil {
		if err := r.cfg.OnTransition(ctx, sc, prev, d.Next); err != nil {
			r.log.ErrorContext(ctx, "authority transition hook failed", "scope", sc.String(), "err", err)
		}
	}
	return binding.Binding{}, false
}
