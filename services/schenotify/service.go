package schenotify

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/settings"
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
	// defaultMaxHeld. Fires beyond it wait on the server as without a lead.
	MaxHeld int
	// LLMTimeout bounds the invoke_llm of an AI-written delivery (ai.go);
	// default 20 s. Its send claim holds this much longer.
	LLMTimeout time.Duration

	// calendarEnd, when set, ends China's working calendar of working-day
	// rules at that year if the library covers more (when.WithCalendarEnd):
	// tests of a coverage end set it through export_test.go; production
	// cannot, and follows the library.
	calendarEnd int
}

// Service is the reminder service. Create it with New and serve with Run.
// It declares and wires: the behaviour lives in its parts (doc.go), each
// holding what it uses.
type Service struct {
	zone   *time.Location
	runner *bus.Runner
	rem    *reminders // records, index, schedules, the recovery sweep
	dl     *delivery  // fired reminders: claim, hold, send, outcome
	rp     *replies   // the command and tool answers
}

// New checks cfg, fills defaults and returns the service; it does no I/O.
func New(cfg Config, deps bus.Deps) (*Service, error) {
	deps, err := deps.WithDefaults()
	if err != nil {
		return nil, err
	}
	if cfg, err = withDefaults(cfg); err != nil {
		return nil, err
	}
	zone, err := settings.LoadZone(cfg.DefaultZone)
	if err != nil {
		return nil, fmt.Errorf("%w: default zone %q is not an IANA zone", bus.ErrInvalidConfig, cfg.DefaultZone)
	}
	cat, err := Catalog()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", bus.ErrInvalidConfig, err)
	}
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", bus.ErrInvalidConfig, err)
	}
	rd := Renderer{Cat: cat}
	lead := min(cfg.Lead, cfg.AckWait/3)
	rem := newReminders(cfg, deps, zone, lead, m)
	dl := newDelivery(cfg, deps, rem, rd, zone, lead, m)
	s := &Service{zone: zone, rem: rem, dl: dl,
		rp: &replies{rem: rem, rd: rd, zone: zone, now: deps.Clock, log: deps.Logger,
			minEvery: cfg.MinEvery, maxAttempts: cfg.Retry.MaxAttempts}}
	s.runner, err = bus.NewRunner(bus.RunnerConfig{
		Plugin:            Plugin,
		Description:       "Reminders delivered into the chat at the due second",
		Workers:           cfg.Workers,
		InvocationTimeout: cfg.InvocationTimeout,
		Retention:         cfg.Retention,
		Replicas:          cfg.Replicas,
		ObserveEvents:     declaration(cat).ObserveEvents,
		Handlers: bus.Handlers{
			Command: s.handleCommand,
			Tool:    s.handleTool,
			Event:   s.handleEvent,
			Dedupe:  dedupes,
		},
		Purge:        rem.purgeScope,
		OnTransition: rem.onTransition,
		Streams: []bus.StreamSpec{{
			Name:      StreamName,
			Subjects:  []string{deps.Subjects.InternalAll(Plugin, KindSched), deps.Subjects.InternalAll(Plugin, KindDue)},
			Replicas:  cfg.Replicas,
			Schedules: true,
			// one schedule per sched subject, and a firing replaces the
			// previous fired message of its due subject (bus.ScheduleAt)
			MaxMsgsPerSubject: 1,
		}},
		Consumers: []bus.Consumer{{FiredConfig: bus.FiredConfig{
			Stream:  StreamName,
			Durable: DueConsumer,
			Filter:  deps.Subjects.InternalAll(Plugin, KindDue),
			Workers: cfg.DueWorkers,
			AckWait: cfg.AckWait,
			// held deliveries stay unacked until their instant (hold.go)
			MaxAckPending: cfg.MaxHeld + max(1000, cfg.DueWorkers*4),
			// an AI-written delivery asks the LLM first (ai.go)
			Timeout: cfg.HostTimeout + 10*time.Second + cfg.LLMTimeout,
		}, Handler: s.handleFired}},
		// delivery (its janitor, held deliveries, next-message sends)
		// starts before the due consumer opens and stops after its
		// handlers returned; the recovery sweep (reminders) runs beside
		// them and stops first
		Parts:           []bus.Part{dl, rem},
		HostTimeout:     cfg.HostTimeout,
		ShutdownTimeout: cfg.HostTimeout + 15*time.Second,
	}, deps)
	if err != nil {
		return nil, err
	}
	rem.runner = s.runner
	dl.runner, dl.host = s.runner, s.runner.Host()
	return s, nil
}

// withDefaults fills the zero fields of cfg and checks the lead.
func withDefaults(cfg Config) (Config, error) {
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
	if cfg.LLMTimeout <= 0 {
		cfg.LLMTimeout = defaultLLMTimeout
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
		return cfg, fmt.Errorf("%w: lead %v is over %v", bus.ErrInvalidConfig, cfg.Lead, MaxLead)
	case cfg.Lead < 0:
		cfg.Lead = 0
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = defaultMaxHeld
	}
	if cfg.Replica == "" {
		var b [6]byte
		_, _ = crand.Read(b[:])
		cfg.Replica = hex.EncodeToString(b[:])
	}
	if cfg.DefaultZone == "" {
		cfg.DefaultZone = when.ProcessZoneName()
	}
	return cfg, nil
}

// Zone returns the default zone resolved at New.
func (s *Service) Zone() *time.Location { return s.zone }

// Run serves until ctx is done (bus.Runner.Run: the stream, the buckets,
// the parts, the endpoints and the due consumer; then intake drains,
// every handler returns, the parts stop). It returns nil for a
// ctx-requested stop and never closes the connection.
func (s *Service) Run(ctx context.Context) error { return s.runner.Run(ctx) }

// Ready reports whether the service serves (bus.Runner.Ready).
func (s *Service) Ready() bool { return s.runner.Ready() }

// Grants are the NATS permissions the service needs as its user
// (bus.Runner.Grants); cmd/builtin writes them into the accounts file.
func (s *Service) Grants() bus.UserGrants { return s.runner.Grants() }

// Held is the number of deliveries waiting for their instant.
func (s *Service) Held() int { return s.dl.holds.len() }

// Sweep is one pass of the recovery sweep (reminders.sweep).
func (s *Service) Sweep(ctx context.Context) { s.rem.sweep(ctx) }
