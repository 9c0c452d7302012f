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
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// Config is the service's configuration. The zero value is valid: every
// field has a default.
type Config struct {
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
	// sessions; default 10 000, of which one installation can hold half
	// and one session 256.
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
	// AlertInterval is the least time between two operator alerts of one
	// chat; default 60 s.
	AlertInterval time.Duration
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
	subj    wire.Subjects
	runner  *bus.Runner
	st      *store.Store
	view    *store.View
	metrics *metrics
	bots    *botCache
	rec     *recorder
	meta    *store.MetaWriter
	trims   *store.Trimmer
	locks   *store.Locks

	catalog *i18n.Catalog // alerts, command answers, the handoff tool's text

	onDecision func(time.Duration) // benchmarks only; set before Run

	faultMu sync.RWMutex
	fault   func(op string, sc binding.Scope) error // tests only

	settings sync.Map // scope#config -> model.Settings
	// unknownAccount remembers (scope, bot) pairs already logged for an
	// unknown account id under record_groups=addressed.
	unknownAccount sync.Map
	settingsN      atomic.Int64

	// runCtx is the context of background work (recordings, trims,
	// notices): set when the background part starts, cancelled when it
	// stops, after intake drained.
	runCtx    context.Context
	cancelRun context.CancelFunc
	wg        sync.WaitGroup // notices and other background work
}

// New checks cfg and returns a Service; it does no I/O.
func New(cfg Config, deps bus.Deps) (*Service, error) {
	deps, err := deps.WithDefaults()
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("%w: MinTakeoverTimeout must be within [0, 30s]", bus.ErrInvalidConfig)
	}
	if cfg.HostTimeout <= 0 {
		cfg.HostTimeout = wire.DefaultHostTimeout
	}
	if cfg.NoticeRetry == nil {
		cfg.NoticeRetry = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second}
	}
	if cfg.AlertInterval <= 0 {
		cfg.AlertInterval = time.Minute
	}
	cat, err := Messages()
	if err != nil {
		return nil, fmt.Errorf("%w: messages: %w", bus.ErrInvalidConfig, err)
	}
	s := &Service{catalog: cat,
		cfg: cfg, nc: deps.Conn, js: deps.JetStream, now: deps.Clock, log: deps.Logger,
		tracer: deps.TracerProvider.Tracer("github.com/langbot-nats/plugins/services/takeover"), subj: deps.Subjects,
	}
	s.view = store.NewView(deps.Conn, bus.Bucket(Plugin))
	if s.metrics, err = newMetrics(deps.Registerer, s.view, s.nowMS); err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", bus.ErrInvalidConfig, err)
	}
	s.runner, err = bus.NewRunner(bus.RunnerConfig{
		Plugin:      Plugin,
		Description: "human takeover of chats",
		Workers:     cfg.Workers,
		MaxBody:     cfg.MaxBody,
		Replicas:    cfg.Replicas,
		Retention:   cfg.Retention,
		Handlers: bus.Handlers{
			Event:         s.handleEvent,
			Command:       s.handleCommand,
			Tool:          s.handleTool,
			Page:          s.handlePage,
			Dedupe:        dedupePage,
			ServeInactive: pageRead,
		},
		Purge:        s.purgeScope,
		OnTransition: s.onTransition,
		OnAuthority:  s.onAuthority,
		Consumers: []bus.Consumer{{FiredConfig: bus.FiredConfig{
			Stream:  store.TimerStream,
			Durable: store.ExpireDurable,
			Filter:  s.subj.InternalAll(Plugin, store.KindExpire),
			AckWait: 30 * time.Second,
		}, Handler: s.handleFired}, {FiredConfig: bus.FiredConfig{
			Stream:  store.TimerStream,
			Durable: store.AlertDurable,
			Filter:  s.subj.InternalAll(Plugin, store.KindAlert),
			AckWait: 2 * time.Minute,
		}, Handler: s.handleAlert}},
		// started in this order before intake, stopped in reverse after
		// it drained: the recordings finish before the background context
		// ends, the session view and the store outlive them
		Parts: []bus.Part{
			bus.PartFuncs{StartFunc: s.startStore, StopFunc: s.stopStore},
			bus.PartFuncs{StartFunc: s.startView, StopFunc: s.stopView},
			bus.PartFuncs{StartFunc: s.startBackground, StopFunc: s.stopBackground},
			bus.PartFuncs{StartFunc: s.startWriters, StopFunc: s.stopWriters},
		},
		HostTimeout: cfg.HostTimeout,
	}, deps)
	if err != nil {
		return nil, err
	}
	s.st = store.New(s.js, s.subj, s.checkFault)
	s.bots = newBotCache(s.runner.Host(), s.goBackground)
	s.rec = newRecorder(s.record, s.dropRecording, cfg.RecordWorkers, cfg.RecordQueue)
	s.locks = store.NewLocks()
	s.trims = store.NewTrimmer(s.st, s.view, s.metrics.trims, s.log)
	s.meta = store.NewMetaWriter(s.st, s.view, s.locks, s.trims, cfg.MetaWriteRate, s.metrics.metaPending, s.metrics.recordDropped, s.log)
	return s, nil
}

// Run serves until ctx is done (bus.Runner.Run: the streams and buckets,
// the parts below, the endpoints and the expiry consumer; then intake
// drains and the parts stop in reverse). It returns nil for a
// ctx-requested stop and never closes the connection it was given.
func (s *Service) Run(ctx context.Context) error { return s.runner.Run(ctx) }

// Ready reports whether the service serves (bus.Runner.Ready).
func (s *Service) Ready() bool { return s.runner.Ready() }

// Runner returns the bus runner (its View, Host and KV).
func (s *Service) Runner() *bus.Runner { return s.runner }

// setupTimeout bounds the setup a part does when it starts.
const setupTimeout = time.Minute

// startStore creates the streams, the blob store and the main bucket the
// store uses (after the runner made its buckets, before the expiry
// consumer opens); the store is closed last.
func (s *Service) startStore(parent context.Context) (err error) {
	ctx, cancel := context.WithTimeout(parent, setupTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			s.st.Close()
		}
	}()
	if err := s.st.Ensure(ctx, s.cfg.Replicas); err != nil {
		return err
	}
	mainKV, err := bus.EnsureBucket(ctx, s.js, bus.Bucket(Plugin), bus.BucketSpec{Replicas: s.cfg.Replicas})
	if err != nil {
		return err
	}
	s.st.UseKV(bus.NewKV(s.nc, mainKV))
	// reply idempotency records live in the runner's dedupe bucket (24 h TTL)
	s.st.UseDedupe(s.runner.Dedupe())
	return nil
}

func (s *Service) stopStore(context.Context) error { s.st.Close(); return nil }

// startView loads the session view (the list metadata of every session).
func (s *Service) startView(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, setupTimeout)
	defer cancel()
	return s.view.Start(ctx, s.js, bus.Bucket(Plugin))
}

func (s *Service) stopView(context.Context) error { s.view.Stop(); return nil }

// startBackground opens the context of background work and starts the
// trim workers on it.
func (s *Service) startBackground(ctx context.Context) error {
	s.runCtx, s.cancelRun = context.WithCancel(ctx)
	s.trims.Start(s.runCtx)
	return nil
}

// stopBackground ends the background context and waits for the trims and
// the notices.
func (s *Service) stopBackground(context.Context) error {
	s.cancelRun()
	s.trims.Wait()
	s.wg.Wait()
	return nil
}

// startWriters starts the recorder and the metadata writer.
func (s *Service) startWriters(context.Context) error {
	s.rec.start()
	s.meta.Start(s.runCtx)
	return nil
}

// stopWriters lets the queued recordings and metadata writes finish once
// no event can queue more; after a few seconds their storage calls are
// cancelled, so a stop never waits out a dead JetStream.
func (s *Service) stopWriters(context.Context) error {
	grace := time.AfterFunc(2*time.Second, s.cancelRun)
	defer grace.Stop()
	s.rec.stop()
	s.meta.Stop()
	return nil
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
