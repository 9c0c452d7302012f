package githubkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/i18n"
)

// Plugin is the plugin name: micro service name, subject and key token.
const Plugin = "githubkit"

// Stream, consumer and key names (spec §6, §7.1).
const (
	StreamName   = "LANGBOT_GITHUBKIT"
	PollConsumer = "githubkit-poll"
	tracerName   = "github.com/langbot-nats/plugins/services/githubkit"
	// secretField is the config field sealed at rest.
	secretField = "github_token"
	dedupeTTL   = 10 * time.Minute
)

// Config holds the service settings. The zero value means the defaults.
type Config struct {
	Prefix            string        // subject prefix; default "langbot"
	Replicas          int           // replicas of the stream and buckets; default 1
	Workers           int           // command and tool workers; default 64
	PollWorkers       int           // polls at once per replica; default 16
	InvocationTimeout time.Duration // default 30 s
	Retention         time.Duration // remove installations not attached for this long (bus.RunnerConfig.Retention); 0: off
	// AllowPrivateNetworks turns the SSRF guard off
	// (--github-allow-private-networks); AllowHTTP accepts http API URLs
	// (--github-allow-http). Both are off by default.
	AllowPrivateNetworks bool
	AllowHTTP            bool
	// DefaultAPIURL is the API root of installations whose config sets no
	// github_api_url (GITHUB_API_URL); default https://api.github.com.
	DefaultAPIURL string
	// MinPollInterval is the floor of poll_interval in seconds; default 60.
	// Only tests lower it (spec §10, AT-43).
	MinPollInterval int
	// AckWait of the poll consumer; default 30 s.
	AckWait time.Duration
	// PollDeadline bounds one poll; default 110 s.
	PollDeadline time.Duration
	// SendTimeout bounds one send_message; default 15 s.
	SendTimeout time.Duration
	// GitHubTimeout bounds one GitHub request; default 20 s.
	GitHubTimeout time.Duration
}

// Deps are the live parts the service uses. Conn and Keyring are required
// (the token is sealed at rest). Clock defaults to time.Now, Rand to
// math/rand/v2, Logger to slog.Default(), TracerProvider to no tracing,
// Registerer to a private registry and HTTPClient to NewHTTPClient with the
// Config's guard and timeout.
type Deps struct {
	Conn           *nats.Conn
	Keyring        *bus.Keyring
	Clock          func() time.Time
	Rand           func() float64
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
	Registerer     prometheus.Registerer
	HTTPClient     *http.Client
}

// Service is the githubkit service. Create it with New and serve with Run.
type Service struct {
	cfg     Config
	nc      *nats.Conn
	keyring *bus.Keyring
	now     func() time.Time
	rand    func() float64
	log     *slog.Logger
	tracer  trace.Tracer
	cat     *i18n.Catalog
	metrics *Metrics
	gh      *GitHub
	hc      *http.Client
	ownHC   bool // the service built hc and closes its idle connections
	runner  *bus.Runner
	subj    bus.Subjects
	rates   rateMemory

	mu     sync.Mutex
	stream jetstream.Stream
	ready  bool
	ran    bool

	hooks hooks // tests only (export_test.go)
}

// hooks let tests hold a poll at a chosen point.
type hooks struct {
	afterClaim func(ctx context.Context, sc binding.Scope, key string)
}

// New checks cfg, fills defaults and returns the service; it does no I/O.
func New(cfg Config, deps Deps) (*Service, error) {
	if deps.Conn == nil {
		return nil, fmt.Errorf("%w: no NATS connection", ErrInvalidConfig)
	}
	if deps.Keyring == nil {
		return nil, fmt.Errorf("%w: no state keyring (LANGBOT_STATE_KEY): the token is sealed at rest", ErrInvalidConfig)
	}
	if cfg.PollWorkers <= 0 {
		cfg.PollWorkers = 16
	}
	if cfg.MinPollInterval <= 0 {
		cfg.MinPollInterval = MinPollInterval
	}
	if cfg.MinPollInterval > MinPollInterval {
		return nil, fmt.Errorf("%w: MinPollInterval above %d", ErrInvalidConfig, MinPollInterval)
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.PollDeadline <= 0 {
		cfg.PollDeadline = PollDeadline
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = bus.DefaultHostTimeout
	}
	if cfg.DefaultAPIURL == "" {
		cfg.DefaultAPIURL = DefaultAPIURL
	}
	u, err := ParseAPIURL(cfg.DefaultAPIURL, cfg.AllowHTTP)
	if err != nil {
		return nil, fmt.Errorf("%w: DefaultAPIURL: %w", ErrInvalidConfig, err)
	}
	cfg.DefaultAPIURL = u
	subj, err := bus.NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	cat, err := LoadCatalog()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	s := &Service{cfg: cfg, nc: deps.Conn, keyring: deps.Keyring, now: deps.Clock, rand: deps.Rand, log: deps.Logger, cat: cat, subj: subj}
	if s.now == nil {
		s.now = time.Now
	}
	if s.rand == nil {
		s.rand = rand.Float64
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("service", Plugin)
	tp := deps.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	s.tracer = tp.Tracer(tracerName)
	reg := deps.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if s.metrics, err = NewMetrics(reg); err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", ErrInvalidConfig, err)
	}
	s.hc = deps.HTTPClient
	if s.hc == nil {
		s.hc, s.ownHC = NewHTTPClient(HTTPOptions{AllowPrivateNetworks: cfg.AllowPrivateNetworks, Tracer: s.tracer, Metrics: s.metrics, Timeout: cfg.GitHubTimeout}), true
	}
	s.gh = NewGitHub(s.hc, cfg.GitHubTimeout, s.now)
	s.rates.m = make(map[string]time.Time)
	s.runner, err = bus.NewRunner(bus.RunnerConfig{
		Plugin:            Plugin,
		Description:       "GitHub lookups and repository event push",
		Prefix:            cfg.Prefix,
		Workers:           cfg.Workers,
		InvocationTimeout: cfg.InvocationTimeout,
		Retention:         cfg.Retention,
		DedupeTTL:         dedupeTTL,
		Replicas:          cfg.Replicas,
		SecretFields:      []string{secretField},
		Handlers: bus.Handlers{
			Command: s.handleCommand,
			Tool:    s.handleTool,
			Dedupe:  dedupes,
		},
		Purge:        s.purgeScope,
		OnTransition: s.onTransition,
	}, bus.RunnerDeps{Conn: deps.Conn, Keyring: deps.Keyring, Clock: s.now, Logger: deps.Logger, TracerProvider: tp, Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return s, nil
}

// Ready reports whether the service serves: the runner is ready and the
// poll consumer runs.
func (s *Service) Ready() bool {
	s.mu.Lock()
	ok := s.ready
	s.mu.Unlock()
	return ok && s.runner.Ready()
}

// Run sets up the stream, the buckets, the endpoints and the poll consumer,
// serves until ctx is done, then stops intake and waits for every worker.
// It returns nil for a ctx-requested stop. It does no tenant I/O at start.
func (s *Service) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return errors.New("githubkit: Run called twice")
	}
	s.ran = true
	s.mu.Unlock()

	setup, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := bus.EnsureStream(setup, s.runner.JetStream(), bus.StreamSpec{
		Name:              StreamName,
		Subjects:          []string{s.subj.InternalAll(Plugin, KindSched), s.subj.InternalAll(Plugin, KindPoll)},
		Replicas:          s.cfg.Replicas,
		Schedules:         true,
		MaxMsgsPerSubject: 1,
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.stream = st
	s.mu.Unlock()
	if err := s.runner.Start(setup); err != nil {
		return errors.Join(err, s.shutdown())
	}
	if err := s.runner.ConsumeFired(setup, bus.FiredConfig{
		Stream: StreamName, Durable: PollConsumer, Filter: s.subj.InternalAll(Plugin, KindPoll),
		Workers: s.cfg.PollWorkers, AckWait: s.cfg.AckWait, MaxDeliver: 3, Timeout: s.cfg.PollDeadline,
	}, s.handlePoll); err != nil {
		return errors.Join(err, s.shutdown())
	}
	s.mu.Lock()
	s.ready = true
	s.mu.Unlock()
	<-ctx.Done()
	return s.shutdown()
}

func (s *Service) shutdown() error {
	s.mu.Lock()
	s.ready = false
	s.mu.Unlock()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.PollDeadline+5*time.Second)
	defer cancel()
	err := s.runner.Shutdown(sctx)
	if s.ownHC {
		s.hc.CloseIdleConnections()
	}
	return err
}

// settings normalises a plain-text config with the service's flags.
func (s *Service) settings(raw []byte) (Settings, []Warning) {
	return normalizeSettings(raw, normOptions{allowHTTP: s.cfg.AllowHTTP, minPoll: s.cfg.MinPollInterval, defaultURL: s.cfg.DefaultAPIURL})
}

func (s *Service) texts(lang string) texts { return texts{cat: s.cat, lang: lang} }

// schedSubjects returns the schedule and poll subjects of one record.
func (s *Service) schedSubjects(sc binding.Scope, key string) (sched, poll string, err error) {
	if sched, err = s.subj.Internal(Plugin, KindSched, sc, key); err != nil {
		return "", "", err
	}
	poll, err = s.subj.Internal(Plugin, KindPoll, sc, key)
	return sched, poll, err
}

func (s *Service) streamHandle() jetstream.Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream
}

// arm publishes (or replaces) the @every schedule of one record.
func (s *Service) arm(ctx context.Context, sc binding.Scope, key string, intervalS int) error {
	sched, poll, err := s.schedSubjects(sc, key)
	if err != nil {
		return err
	}
	return bus.ScheduleEvery(ctx, s.runner.JetStream(), sched, poll, time.Duration(intervalS)*time.Second, []byte(`{"v":1}`))
}

// disarm cancels the schedule of one record and drops a pending fire.
func (s *Service) disarm(ctx context.Context, sc binding.Scope, key string) error {
	sched, poll, err := s.schedSubjects(sc, key)
	if err != nil {
		return err
	}
	st := s.streamHandle()
	if st == nil {
		return errors.New("githubkit: stream not ready")
	}
	return bus.PurgeSubjects(ctx, st, sched, poll)
}

// rateMemory is the process-local rate-limit memory: token fingerprint ->
// the time polls with that token may resume (spec §7.3). It is the only
// state shared across scopes.
type rateMemory struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (r *rateMemory) blocked(fp string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.m[fp]
	if !ok {
		return false
	}
	if !now.Before(until) {
		delete(r.m, fp)
		return false
	}
	return true
}

func (r *rateMemory) set(fp string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if until.After(r.m[fp]) {
		r.m[fp] = until
	}
}
