package schenotify

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// Plugin is the plugin name: micro service name, subject and key token.
const Plugin = "schenotify"

// Stream and consumer names (spec 7.1).
const (
	StreamName   = "LANGBOT_SCHENOTIFY"
	DueConsumer  = "schenotify-due"
	tracerName   = "github.com/langbot-nats/plugins/services/schenotify"
	defaultClaim = 30 * time.Second
)

// Config holds the service settings. The zero value means the defaults.
type Config struct {
	Replicas          int           // replicas of the stream and buckets; default 1
	Workers           int           // invocation workers; default 64
	DueWorkers        int           // fired-message handlers at once; default 64
	InvocationTimeout time.Duration // default 30 s
	Retention         time.Duration // remove installations not attached for this long (bus.RunnerConfig.Retention); 0: off
	// MinEvery is the shortest @every interval; default 1 min (tests lower it).
	MinEvery time.Duration
	// Retry is the delivery retry schedule (spec 7.5).
	Retry RetryPolicy
	// Claim is how long a send claim holds; default 30 s.
	Claim time.Duration
	// AckWait of the due consumer; default 30 s.
	AckWait time.Duration
	// HostTimeout bounds send_message; default 15 s.
	HostTimeout time.Duration
	// SweepInterval is the period of the recovery sweep; default 30 min.
	SweepInterval time.Duration
	// SweepDelay is the upper bound of the random delay before the first
	// sweep; default 30 s; negative means none.
	SweepDelay time.Duration
	// Replica names this instance in claims; default random.
	Replica string
	// DefaultZone is the zone used when an installation sets none; default
	// the process zone (spec 2 rule 2).
	DefaultZone string
	// Lead is how far ahead of its due instant a schedule fires, so that the
	// claimed delivery waits in memory and is sent at the instant (hold.go);
	// default DefaultLead, at most MaxLead, negative for none. It is used up
	// to a third of AckWait.
	Lead time.Duration
	// MaxHeld bounds the deliveries waiting in memory; default
	// DefaultMaxHeld. Fires beyond it wait on the server as without a lead.
	MaxHeld int
}

// Service is the reminder service. Create it with New and serve with Run.
type Service struct {
	cfg     Config
	zone    *time.Location
	nc      *nats.Conn
	now     func() time.Time
	log     *slog.Logger
	tracer  trace.Tracer
	rd      Renderer
	metrics *metrics
	runner  *bus.Runner
	subj    wire.Subjects

	// writes counts the JetStream writes the service asked for (KV writes,
	// schedule publishes, purges), for the benchmark's writes per delivery.
	writes atomic.Int64
	// active counts fired messages being handled (the janitor yields to them).
	active activity

	mu      sync.Mutex
	janitor chan janitorItem // finished deliveries whose fired messages are to be removed

	lead  time.Duration // the effective lead (Config.Lead)
	holds *holder       // deliveries waiting for their instant
	// indexLocks lets the updates of one installation's index take turns
	// (updateIndex)
	indexLocks *keyLocks
	// flusher sends a refusing chat's reminders on its next message
	flusher *flusher

	hooks hooks // tests only (export_test.go)
}

// hooks let tests hold a handler at a chosen point.
type hooks struct {
	beforeClaim func(ctx context.Context, sc binding.Scope, id string)
	afterSend   func(ctx context.Context, sc binding.Scope, id string)
	onFired     func(f *bus.Fired, fetched time.Time)
}

// New checks cfg, fills defaults and returns the service; it does no I/O.
func New(cfg Config, deps bus.Deps) (*Service, error) {
	deps, err := deps.WithDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.MinEvery <= 0 {
		cfg.MinEvery = when.DefaultMinEvery
	}
	if cfg.Claim <= 0 {
		cfg.Claim = defaultClaim
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.HostTimeout <= 0 {
		cfg.HostTimeout = wire.DefaultHostTimeout
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = 30 * time.Minute
	}
	if cfg.SweepDelay == 0 {
		cfg.SweepDelay = 30 * time.Second
	}
	if cfg.DueWorkers <= 0 {
		cfg.DueWorkers = 64
	}
	switch {
	case cfg.Lead == 0:
		cfg.Lead = DefaultLead
	case cfg.Lead > MaxLead:
		return nil, fmt.Errorf("%w: lead %v is over %v", bus.ErrInvalidConfig, cfg.Lead, MaxLead)
	case cfg.Lead < 0:
		cfg.Lead = 0
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = DefaultMaxHeld
	}
	if cfg.Replica == "" {
		var b [6]byte
		_, _ = crand.Read(b[:])
		cfg.Replica = hex.EncodeToString(b[:])
	}
	if cfg.DefaultZone == "" {
		cfg.DefaultZone = when.ProcessZoneName()
	}
	zone, ok := when.LoadZone(cfg.DefaultZone)
	if !ok {
		return nil, fmt.Errorf("%w: default zone %q is not an IANA zone", bus.ErrInvalidConfig, cfg.DefaultZone)
	}
	cat, err := LoadCatalog()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", bus.ErrInvalidConfig, err)
	}
	s := &Service{cfg: cfg, zone: zone, nc: deps.Conn, now: deps.Clock, log: deps.Logger, subj: deps.Subjects,
		rd: Renderer{Cat: cat}, tracer: deps.TracerProvider.Tracer(tracerName),
		lead: min(cfg.Lead, cfg.AckWait/3), holds: newHolder(cfg.MaxHeld), flusher: newFlusher(),
		indexLocks: newKeyLocks()}
	if s.metrics, err = newMetrics(deps.Registerer); err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", bus.ErrInvalidConfig, err)
	}
	s.runner, err = bus.NewRunner(bus.RunnerConfig{
		Plugin:            Plugin,
		Description:       "Reminders delivered into the chat at the due second",
		Workers:           cfg.Workers,
		InvocationTimeout: cfg.InvocationTimeout,
		Retention:         cfg.Retention,
		Replicas:          cfg.Replicas,
		Handlers: bus.Handlers{
			Command: s.handleCommand,
			Tool:    s.handleTool,
			Event:   s.handleEvent,
			Dedupe:  dedupes,
		},
		Purge:        s.purgeScope,
		OnTransition: s.onTransition,
		Streams: []bus.StreamSpec{{
			Name:      StreamName,
			Subjects:  []string{s.subj.InternalAll(Plugin, KindSched), s.subj.InternalAll(Plugin, KindDue)},
			Replicas:  cfg.Replicas,
			Schedules: true,
			// one schedule per sched subject, and a firing replaces the
			// previous fired message of its due subject (bus.ScheduleAt)
			MaxMsgsPerSubject: 1,
		}},
		Consumers: []bus.Consumer{{FiredConfig: bus.FiredConfig{
			Stream:  StreamName,
			Durable: DueConsumer,
			Filter:  s.subj.InternalAll(Plugin, KindDue),
			Workers: cfg.DueWorkers,
			AckWait: cfg.AckWait,
			// held deliveries stay unacked until their instant (hold.go)
			MaxAckPending: cfg.MaxHeld + max(1000, cfg.DueWorkers*4),
			Timeout:       cfg.HostTimeout + 10*time.Second,
		}, Handler: s.handleFired}},
		// the janitor outlives the due consumer's handlers, which queue
		// work for it; the sweep runs beside them
		// held deliveries and next-message sends stop before the janitor
		Parts:           []bus.Part{s.janitorPart(), s.holdPart(), bus.Loop(s.sweepLoop)},
		HostTimeout:     cfg.HostTimeout,
		ShutdownTimeout: cfg.HostTimeout + 15*time.Second,
	}, deps)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Zone returns the default zone resolved at New.
func (s *Service) Zone() *time.Location { return s.zone }

// Run serves until ctx is done (bus.Runner.Run: the stream, the buckets,
// the endpoints, the janitor, the recovery sweep and the due consumer;
// then intake drains, every handler returns, the sweep and the janitor
// stop). It returns nil for a ctx-requested stop and never closes the
// connection.
func (s *Service) Run(ctx context.Context) error { return s.runner.Run(ctx) }

// Ready reports whether the service serves (bus.Runner.Ready).
func (s *Service) Ready() bool { return s.runner.Ready() }

func (s *Service) streamHandle() jetstream.Stream { return s.runner.Stream(StreamName) }

// sweepLoop runs the recovery sweep after a random delay and then every
// SweepInterval, until ctx is done.
func (s *Service) sweepLoop(ctx context.Context) {
	delay := time.Duration(0)
	if s.cfg.SweepDelay > 0 {
		delay = time.Duration(rand.Int64N(int64(s.cfg.SweepDelay) + 1))
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.Sweep(ctx)
		t.Reset(s.cfg.SweepInterval)
	}
}
