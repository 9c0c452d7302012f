package takeover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// Config is the service's configuration. The zero value is valid: every
// field has a default.
type Config struct {
	// Prefix is the subject prefix; "langbot" when empty.
	Prefix string
	// Replicas of the service's buckets and streams: 1 in dev, 3 in production.
	Replicas int
	// Retention removes installations not attached for this long
	// (bus.RunnerConfig.Retention); 0, the default, is off.
	Retention time.Duration
	// Workers is the invocation worker pool size; default 1024: an event
	// holds its worker while it waits up to RecordBudget for its recording,
	// so Workers / RecordBudget bounds the event rate (5000/s by default).
	Workers int
	// RecordWorkers is the recording pool size; default 64. A session's
	// recordings are written one at a time, in order, by whichever worker
	// is free; the history batcher keeps up to 64 appends in flight and
	// groups the rest.
	RecordWorkers int
	// RecordQueue bounds the recordings waiting for a worker, over all
	// sessions; default 10 000, of which one session can hold 256.
	RecordQueue int
	// RecordBudget is how long an event reply waits for its recording;
	// default 200 ms.
	RecordBudget time.Duration
	// MetaWriteRate bounds the coalesced metadata writes of a replica per
	// second; default 200. Below it, a session's list metadata (preview,
	// last message time, members, count) is written 500 ms after its
	// message; above it, the writes wait their turn, oldest first, and
	// merge meanwhile, so the metadata lags by sessions with news / rate
	// seconds while the history appends keep the disk (docs/benchmarks.md).
	// Unread, trigger and takeover changes never wait for it.
	MetaWriteRate int
	// MaxBody bounds an invocation body; default 32 MiB (an event carrying an
	// 8 MiB inline image, a reply carrying two 10 MiB attachments).
	MaxBody int
	// MinTakeoverTimeout lowers the clamp of takeover_timeout (spec §12's
	// test seam); zero means 30 s. Installation config cannot reach it.
	MinTakeoverTimeout time.Duration
	// HostTimeout bounds one host action (send_message, get_bot_info);
	// default 15 s (spec §11). A reply whose send times out is
	// outcome_unknown.
	HostTimeout time.Duration
	// NoticeRetry are the delays before the notice tries (spec §3.7);
	// default 1 s, 5 s, 15 s.
	NoticeRetry []time.Duration
}

// Deps are the live parts of the service. Conn is required; the rest
// default to: a JetStream context on Conn, time.Now, slog.Default(), no
// tracing, a private metrics registry, no state keyring.
type Deps struct {
	Conn           *nats.Conn
	JetStream      jetstream.JetStream
	Keyring        *bus.Keyring
	Clock          func() time.Time
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
	Registerer     prometheus.Registerer
}

// Service is the takeover service: the event path, the recording, the
// takeover timing and the console operations of one replica.
type Service struct {
	cfg     Config
	nc      *nats.Conn
	js      jetstream.JetStream
	now     func() time.Time
	log     *slog.Logger
	tracer  trace.Tracer
	subj    bus.Subjects
	runner  *bus.Runner
	st      *store.Store
	view    *store.View
	metrics *metrics
	bots    *botCache
	rec     *recorder
	meta    *store.MetaWriter
	trims   *store.Trimmer
	locks   *store.Locks

	onDecision func(time.Duration) // benchmarks only; set before Run

	faultMu sync.RWMutex
	fault   func(op string, sc binding.Scope) error // tests only

	settings sync.Map // scope#config -> model.Settings
	// unknownAccount remembers (scope, bot) pairs already logged for an
	// unknown account id under record_groups=addressed.
	unknownAccount sync.Map
	settingsN      atomic.Int64

	runCtx    context.Context
	cancelRun context.CancelFunc
	wg        sync.WaitGroup // notices and other background work
	ready     chan struct{}
}

// New checks cfg and returns a Service; it does no I/O.
func New(cfg Config, deps Deps) (*Service, error) {
	if deps.Conn == nil {
		return nil, fmt.Errorf("%w: no NATS connection", ErrInvalidConfig)
	}
	subj, err := bus.NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1024
	}
	if cfg.RecordWorkers <= 0 {
		cfg.RecordWorkers = 64
	}
	if cfg.RecordQueue <= 0 {
		cfg.RecordQueue = 10000
	}
	if cfg.RecordBudget <= 0 {
		cfg.RecordBudget = 200 * time.Millisecond
	}
	if cfg.MetaWriteRate <= 0 {
		cfg.MetaWriteRate = 200
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 32 << 20
	}
	if cfg.MinTakeoverTimeout < 0 || cfg.MinTakeoverTimeout > model.MinTakeoverTimeout*time.Second {
		return nil, fmt.Errorf("%w: MinTakeoverTimeout must be within [0, 30s]", ErrInvalidConfig)
	}
	if cfg.HostTimeout <= 0 {
		cfg.HostTimeout = bus.DefaultHostTimeout
	}
	if cfg.NoticeRetry == nil {
		cfg.NoticeRetry = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second}
	}
	js := deps.JetStream
	if js == nil {
		if js, err = jetstream.New(deps.Conn); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	now := deps.Clock
	if now == nil {
		now = time.Now
	}
	log := deps.Logger
	if log == nil {
		log = slog.Default()
	}
	tp := deps.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	reg := deps.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s := &Service{
		cfg: cfg, nc: deps.Conn, js: js, now: now, log: log.With("plugin", Plugin),
		tracer: tp.Tracer("github.com/langbot-nats/plugins/services/takeover"), subj: subj,
		ready: make(chan struct{}),
	}
	s.view = store.NewView(deps.Conn, bus.Bucket(Plugin))
	if s.metrics, err = newMetrics(reg, s.view, s.nowMS); err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", ErrInvalidConfig, err)
	}
	s.runner, err = bus.NewRunner(bus.RunnerConfig{
		Plugin:      Plugin,
		Description: "human takeover of chats",
		Prefix:      cfg.Prefix,
		Workers:     cfg.Workers,
		MaxBody:     cfg.MaxBody,
		Replicas:    cfg.Replicas,
		Retention:   cfg.Retention,
		Handlers: bus.Handlers{
			Event:         s.handleEvent,
			Page:          s.handlePage,
			Dedupe:        dedupePage,
			ServeInactive: pageRead,
		},
		Purge:        s.purgeScope,
		OnTransition: s.onTransition,
		OnAuthority:  s.onAuthority,
	}, bus.RunnerDeps{
		Conn: deps.Conn, JetStream: js, Keyring: deps.Keyring, Clock: now,
		Logger: log, TracerProvider: tp, Registerer: reg,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	s.st = store.New(js, subj, s.checkFault)
	s.bots = newBotCache(s.runner.Host(), s.goBackground)
	s.rec = newRecorder(s.record, s.dropRecording, cfg.RecordWorkers, cfg.RecordQueue)
	s.locks = store.NewLocks()
	s.trims = store.NewTrimmer(s.st, s.view, s.metrics.trims, s.log)
	s.meta = store.NewMetaWriter(s.st, s.view, s.locks, s.trims, cfg.MetaWriteRate, s.metrics.metaPending, s.metrics.recordDropped, s.log)
	return s, nil
}

// Run sets up the streams, the session view, the expiry consumer and the
// endpoints, and serves until ctx is done; then it stops intake, waits for
// its workers and returns nil. It never closes the connection it was given.
func (s *Service) Run(ctx context.Context) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return s.shutdown()
}

// Ready reports whether the service serves: set up, the runner ready
// (connection up, authority view loaded).
func (s *Service) Ready() bool {
	select {
	case <-s.ready:
		return s.runner.Ready()
	default:
		return false
	}
}

// Started is closed once Run has set everything up.
func (s *Service) Started() <-chan struct{} { return s.ready }

// Runner returns the bus runner (its View, Host and KV).
func (s *Service) Runner() *bus.Runner { return s.runner }

func (s *Service) start(parent context.Context) (err error) {
	s.runCtx, s.cancelRun = context.WithCancel(context.WithoutCancel(parent))
	defer func() {
		if err != nil {
			s.st.Close()
		}
	}()
	// setup is bounded; what it starts lives until shutdown
	ctx, cancel := context.WithTimeout(parent, time.Minute)
	defer cancel()
	if err := s.st.Ensure(ctx, s.cfg.Replicas); err != nil {
		return err
	}
	mainKV, err := bus.EnsureBucket(ctx, s.js, bus.Bucket(Plugin), bus.BucketSpec{Replicas: s.cfg.Replicas})
	if err != nil {
		return err
	}
	s.st.UseKV(bus.NewKV(s.nc, mainKV))
	if err := s.view.Start(ctx, s.js, bus.Bucket(Plugin)); err != nil {
		return err
	}
	s.rec.start()
	s.meta.Start(s.runCtx)
	if err := s.runner.Start(ctx); err != nil {
		s.view.Stop()
		s.rec.stop()
		s.meta.Stop()
		return err
	}
	// reply idempotency records live in the runner's dedupe bucket (24 h TTL)
	s.st.UseDedupe(s.runner.Dedupe())
	if err := s.runner.ConsumeFired(ctx, bus.FiredConfig{
		Stream:  store.TimerStream,
		Durable: store.ExpireDurable,
		Filter:  s.subj.InternalAll(Plugin, store.KindExpire),
		AckWait: 30 * time.Second,
	}, s.handleFired); err != nil {
		_ = s.runner.Shutdown(context.Background())
		s.view.Stop()
		s.rec.stop()
		s.meta.Stop()
		return err
	}
	// last: the trim workers end with the run context, which a start that
	// failed above would never end
	s.trims.Start(s.runCtx)
	close(s.ready)
	return nil
}

func (s *Service) shutdown() error {
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.runner.Shutdown(sctx)
	// queued recordings get a few seconds to finish; then their storage
	// calls are cancelled, so a stop never waits out a dead JetStream
	grace := time.AfterFunc(2*time.Second, s.cancelRun)
	s.rec.stop()
	s.meta.Stop()
	grace.Stop()
	s.view.Stop()
	s.cancelRun()
	s.trims.Wait()
	s.wg.Wait()
	s.st.Close()
	return err
}

// settingsFor parses an installation's config once per (scope, config
// bytes), logging the names of bad fields once. The hot path only reads a
// sync.Map.
func (s *Service) settingsFor(sc binding.Scope, b binding.Binding, raw json.RawMessage) model.Settings {
	key := sc.String() + "#" + string(raw)
	if len(raw) > 4096 {
		sum := sha256.Sum256(raw)
		key = sc.String() + "#" + hex.EncodeToString(sum[:])
	}
	if st, ok := s.settings.Load(key); ok {
		return st.(model.Settings)
	}
	st, problems := model.ParseSettings(raw, int(s.cfg.MinTakeoverTimeout/time.Second))
	if len(problems) > 0 {
		s.log.Warn("config fields fell back to defaults", "scope", sc.String(), "runtime_revision", b.RuntimeRevision, "fields", problems)
	}
	if s.settingsN.Add(1) > 10000 {
		s.settings.Clear()
		s.settingsN.Store(0)
	}
	s.settings.Store(key, st)
	return st
}

// nowMS is the injected clock in Unix milliseconds.
func (s *Service) nowMS() int64 { return s.now().UnixMilli() }

// checkFault consults the test-only fault seam.
func (s *Service) checkFault(op string, sc binding.Scope) error {
	s.faultMu.RLock()
	f := s.fault
	s.faultMu.RUnlock()
	if f == nil {
		return nil
	}
	return f(op, sc)
}
