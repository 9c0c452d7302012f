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

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/console"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// Plugin is the service's name: the runner's plugin, and the token every
// subject, key and resource of the service is named with (package store
// names them).
const Plugin = store.Plugin

// Config is the service's configuration. The zero value is valid: every
// field has a default.
type Config struct {
	// Replicas of the service's buckets and streams: 1 in dev, 3 in production.
	Replicas int
	// Retention removes installations not attached for this long
	// (bus.RunnerConfig.Retention); 0, the default, is off.
	Retention time.Duration
	// DedupeTTL is the dedupe bucket's TTL (bus.RunnerConfig.DedupeTTL);
	// default 24 h. Tests shorten it to prove that nothing a live takeover
	// needs lives there.
	DedupeTTL time.Duration
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

	// LLMTimeout bounds one invoke_llm of the AI assist (an
	// alert's summary, `ho suggest`); default 10 s. An alert waits for
	// its summary at most this long.
	LLMTimeout time.Duration
}

// Service is the takeover service of one replica: it declares the runner
// (streams, consumers, handlers, parts) and wires the parts that hold the
// behaviour: notices (notices.go), recording (recording.go) and ops
// (ops.go), over the store and the session view.
type Service struct {
	runner   *bus.Runner
	view     *store.View
	settings *settingsCache
	notices  *notices
	rec      *recording
	ops      *ops
	now      clock
	faults   *faults // tests only
}

// New checks cfg and returns a Service; it does no I/O.
func New(cfg Config, deps bus.Deps) (*Service, error) {
	deps, err := deps.WithDefaults()
	if err != nil {
		return nil, err
	}
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	cat, err := Catalog()
	if err != nil {
		return nil, fmt.Errorf("%w: messages: %w", bus.ErrInvalidConfig, err)
	}
	now, log := clock(deps.Clock), deps.Logger
	s := &Service{now: now, faults: &faults{},
		settings: &settingsCache{log: log, minTimeout: int(cfg.MinTakeoverTimeout / time.Second)}}
	s.view = store.NewView(deps.Conn, deps.JetStream, bus.Bucket(Plugin))
	s.view.WatchGate(now.ms, revokeGates(deps.Conn, deps.Subjects, log))
	met, err := newMetrics(deps.Registerer, s.view, now.ms)
	if err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", bus.ErrInvalidConfig, err)
	}
	st := store.New(deps.JetStream, deps.Subjects, s.faults.check)
	trims := store.NewTrimmer(st, s.view, met.trims, log)
	locks := new(bus.KeyLocks[string])
	ai := &assist{st: st, now: now, log: log, timeout: cfg.LLMTimeout, recordBudget: cfg.RecordBudget}
	s.notices = &notices{st: st, view: s.view, nc: deps.Conn, js: deps.JetStream, subj: deps.Subjects, catalog: cat,
		metrics: met, settings: s.settings, now: now, log: log,
		hostTimeout: cfg.HostTimeout, noticeRetry: cfg.NoticeRetry, alertInterval: cfg.AlertInterval, assist: ai}
	s.rec = &recording{st: st, view: s.view, trims: trims, locks: locks, notices: s.notices, settings: s.settings,
		metrics: met, now: now, log: log, budget: cfg.RecordBudget,
		meta: store.NewMetaWriter(store.MetaConfig{Store: st, View: s.view, Locks: locks, Trims: trims, Rate: cfg.MetaWriteRate,
			Pending: met.metaPending, Dropped: met.recordDropped, Log: log})}
	s.rec.pool = newRecorder(s.rec.record, s.rec.dropRecording, cfg.RecordWorkers, cfg.RecordQueue)
	s.ops = &ops{st: st, view: s.view, trims: trims, notices: s.notices, nc: deps.Conn, subj: deps.Subjects, catalog: cat,
		settings: s.settings, now: now, log: log,
		maxBody: cfg.MaxBody, recordBudget: cfg.RecordBudget, hostTimeout: cfg.HostTimeout, assist: ai}
	n := s.notices
	s.runner, err = bus.NewRunner(bus.RunnerConfig{
		Plugin:      Plugin,
		Description: "human takeover of chats",
		Workers:     cfg.Workers,
		MaxBody:     cfg.MaxBody,
		Replicas:    cfg.Replicas,
		Retention:   cfg.Retention,
		DedupeTTL:   cfg.DedupeTTL,
		Handlers: bus.Handlers{
			Event:         s.handleEvent,
			Command:       s.handleCommand,
			Tool:          s.handleTool,
			Page:          s.handlePage,
			Dedupe:        dedupePage,
			ServeInactive: pageRead,
		},
		Purge:        n.purgeScope,
		OnTransition: n.onTransition,
		OnAuthority:  n.onAuthority,
		Consumers: []bus.Consumer{{FiredConfig: bus.FiredConfig{
			Stream:  store.TimerStream,
			Durable: store.ExpireDurable,
			Filter:  deps.Subjects.InternalAll(Plugin, store.KindExpire),
			AckWait: 30 * time.Second,
		}, Handler: n.handleFired}, {FiredConfig: bus.FiredConfig{
			Stream:  store.TimerStream,
			Durable: store.AlertDurable,
			Filter:  deps.Subjects.InternalAll(Plugin, store.KindAlert),
			AckWait: 2 * time.Minute,
		}, Handler: n.handleAlert}, {FiredConfig: bus.FiredConfig{
			Stream:  store.TimerStream,
			Durable: store.EscalateDurable,
			Filter:  deps.Subjects.InternalAll(Plugin, store.KindEscalate),
			AckWait: 2 * time.Minute,
		}, Handler: n.handleEscalate}},
		// started in this order before intake, stopped in reverse after
		// it drained: the recordings and metadata writes finish first,
		// then the background work and the trims end; the session view
		// and the store outlive them
		Parts:       []bus.Part{st, s.view, trims, s.notices, s.rec},
		HostTimeout: cfg.HostTimeout,
	}, deps)
	if err != nil {
		return nil, err
	}
	// reply idempotency records live in the runner's dedupe bucket (24 h TTL)
	st.Serve(store.Serving{Replicas: cfg.Replicas, Dedupe: s.runner.Dedupe})
	s.notices.runner, s.ops.runner, ai.runner = s.runner, s.runner, s.runner
	bots := newBotCache(s.runner.Host(), s.notices.goBackground)
	s.notices.bots, s.rec.bots, s.ops.bots = bots, bots, bots
	return s, nil
}

// withDefaults fills the zero fields of cfg and checks the rest.
func (cfg Config) withDefaults() (Config, error) {
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
		return cfg, fmt.Errorf("%w: MinTakeoverTimeout must be within [0, 30s]", bus.ErrInvalidConfig)
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
	if cfg.LLMTimeout <= 0 {
		cfg.LLMTimeout = 10 * time.Second
	}
	return cfg, nil
}

// Run serves until ctx is done (bus.Runner.Run: the streams and buckets,
// the parts, the endpoints and the expiry and alert consumers; then intake
// drains and the parts stop in reverse). It returns nil for a
// ctx-requested stop and never closes the connection it was given.
func (s *Service) Run(ctx context.Context) error { return s.runner.Run(ctx) }

// Ready reports whether the service serves (bus.Runner.Ready).
func (s *Service) Ready() bool { return s.runner.Ready() }

// Grants are the NATS permissions the service needs as its user
// (bus.Runner.Grants); cmd/builtin writes them into the accounts file.
func (s *Service) Grants() bus.UserGrants { return s.runner.Grants() }

// Runner returns the bus runner (its View, Host and KV).
func (s *Service) Runner() *bus.Runner { return s.runner }

// clock is the injected clock (bus.Deps.Clock).
type clock func() time.Time

// ms is the time in Unix milliseconds.
func (c clock) ms() int64 { return c().UnixMilli() }

// faults is the test-only fault seam: f, when set, is consulted before
// each storage call of the service.
type faults struct {
	mu sync.RWMutex
	f  func(op string, sc binding.Scope) error
}

// check consults the seam.
func (x *faults) check(op string, sc binding.Scope) error {
	x.mu.RLock()
	f := x.f
	x.mu.RUnlock()
	if f == nil {
		return nil
	}
	return f(op, sc)
}

// settingsCache parses an installation's config once per (scope, config
// bytes), logging the names of bad fields once. The hot path only reads a
// sync.Map.
type settingsCache struct {
	log        *slog.Logger
	minTimeout int      // Config.MinTakeoverTimeout in seconds
	m          sync.Map // scope#config -> model.Settings
	n          atomic.Int64
}

// get returns the settings of an installation's config raw.
func (c *settingsCache) get(sc binding.Scope, b binding.Binding, raw json.RawMessage) model.Settings {
	key := sc.String() + "#" + string(raw)
	if len(raw) > 4096 {
		sum := sha256.Sum256(raw)
		key = sc.String() + "#" + hex.EncodeToString(sum[:])
	}
	if st, ok := c.m.Load(key); ok {
		return st.(model.Settings)
	}
	st, problems := model.ParseSettings(raw, c.minTimeout)
	if len(problems) > 0 {
		c.log.Warn("config fields fell back to defaults", "scope", sc.String(), "runtime_revision", b.RuntimeRevision, "fields", problems)
	}
	if c.n.Add(1) > 10000 {
		c.m.Clear()
		c.n.Store(0)
	}
	c.m.Store(key, st)
	return st
}

// Console returns the console operations for an HTTP console
// (console.New); Build mounts one when LANGBOT_CONSOLE_KEY is set.
func (s *Service) Console() console.Operations { return s.ops }
