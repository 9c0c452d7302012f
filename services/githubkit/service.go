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
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/wire"
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
	// HostTimeout bounds one host action (send_message); default 15 s.
	HostTimeout time.Duration
	// GitHubTimeout bounds one GitHub request; default 20 s.
	GitHubTimeout time.Duration
	// Limits caps GitHub calls per installation and per host and breaks
	// the circuit to a failing host (limits.go); zero = defaults.
	Limits Limits
	// WebhookURL is the public base URL of the webhook receiver
	// (LANGBOT_GITHUBKIT_WEBHOOK_URL): "!gh hook" gives
	// <WebhookURL>/github/webhook/<hook-id>. Empty: webhooks are off.
	WebhookURL string
	// WebhookAddr, when set, serves the receiver on a listener of its own
	// (LANGBOT_GITHUBKIT_WEBHOOK_ADDR) instead of the binary's HTTP mux,
	// so that only the receiver faces the internet.
	WebhookAddr string
	// WebhookMaxBody caps a delivery's body; default WebhookMaxBody.
	WebhookMaxBody int64
	// WebhookBodyBudget bounds the delivery bodies the receiver holds at
	// once, wherever it is mounted (httpserve.Budget); a delivery that
	// does not fit gets 503 before its body is read. Default
	// DefaultWebhookBodyBudget.
	WebhookBodyBudget int64
	// WebhookReadTimeout bounds reading a delivery's body, wherever the
	// receiver is mounted; a client slower than that is cut off. Default
	// DefaultWebhookReadTimeout.
	WebhookReadTimeout time.Duration
	// HookHealthInterval is the poll interval of a repository whose
	// webhook delivers; default DefaultHookHealthInterval.
	HookHealthInterval time.Duration
	// Cards bounds link cards: workers, per-chat rate, cache (cards_state.go);
	// zero = defaults.
	Cards CardLimits
	// Pushes bounds webhook pushes per chat and per webhook, the excess
	// summarised (pushbudget.go); zero = defaults.
	Pushes PushBudget
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
	runner  *bus.Runner
	subj    wire.Subjects
	rates   rateMemory
	hm      *hookMetrics
	bodies  *httpserve.Budget // delivery bodies being read
	pushes  *pushBudget
	cards   *cards

	hooks hooks // tests only (export_test.go)
}

// hooks let tests hold a poll at a chosen point.
type hooks struct {
	afterClaim func(ctx context.Context, sc binding.Scope, key string)
}

// New checks cfg, fills defaults and returns the service; it does no I/O.
// deps.Keyring is required: the token is sealed at rest.
func New(cfg Config, deps bus.Deps) (*Service, error) {
	deps, err := deps.WithDefaults()
	if err != nil {
		return nil, err
	}
	if deps.Keyring == nil {
		return nil, fmt.Errorf("%w: no state keyring (LANGBOT_STATE_KEY): the token is sealed at rest", bus.ErrInvalidConfig)
	}
	if cfg.PollWorkers <= 0 {
		cfg.PollWorkers = 16
	}
	if cfg.MinPollInterval <= 0 {
		cfg.MinPollInterval = MinPollInterval
	}
	if cfg.MinPollInterval > MinPollInterval {
		return nil, fmt.Errorf("%w: MinPollInterval above %d", bus.ErrInvalidConfig, MinPollInterval)
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.PollDeadline <= 0 {
		cfg.PollDeadline = PollDeadline
	}
	if cfg.HostTimeout <= 0 {
		cfg.HostTimeout = wire.DefaultHostTimeout
	}
	if cfg.DefaultAPIURL == "" {
		cfg.DefaultAPIURL = DefaultAPIURL
	}
	u, err := ParseAPIURL(cfg.DefaultAPIURL, cfg.AllowHTTP)
	if err != nil {
		return nil, fmt.Errorf("%w: DefaultAPIURL: %w", bus.ErrInvalidConfig, err)
	}
	cfg.DefaultAPIURL = u
	if cfg.WebhookURL != "" {
		if cfg.WebhookURL, err = checkWebhookURL(cfg.WebhookURL); err != nil {
			return nil, fmt.Errorf("%w: WebhookURL: %w", bus.ErrInvalidConfig, err)
		}
	}
	if cfg.WebhookMaxBody <= 0 {
		cfg.WebhookMaxBody = WebhookMaxBody
	}
	if cfg.WebhookBodyBudget <= 0 {
		cfg.WebhookBodyBudget = DefaultWebhookBodyBudget
	}
	if cfg.WebhookBodyBudget < cfg.WebhookMaxBody {
		return nil, fmt.Errorf("%w: WebhookBodyBudget below WebhookMaxBody", bus.ErrInvalidConfig)
	}
	if cfg.WebhookReadTimeout <= 0 {
		cfg.WebhookReadTimeout = DefaultWebhookReadTimeout
	}
	if cfg.HookHealthInterval <= 0 {
		cfg.HookHealthInterval = DefaultHookHealthInterval
	}
	if cfg.HookHealthInterval < time.Second {
		return nil, fmt.Errorf("%w: HookHealthInterval below 1 s", bus.ErrInvalidConfig)
	}
	cat, err := LoadCatalog()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", bus.ErrInvalidConfig, err)
	}
	s := &Service{cfg: cfg, nc: deps.Conn, keyring: deps.Keyring, now: deps.Clock, rand: rand.Float64, log: deps.Logger,
		cat: cat, subj: deps.Subjects, tracer: deps.TracerProvider.Tracer(tracerName)}
	if s.metrics, err = NewMetrics(deps.Registerer); err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", bus.ErrInvalidConfig, err)
	}
	s.bodies = httpserve.NewBudget(cfg.WebhookBodyBudget)
	if s.hm, err = newHookMetrics(deps.Registerer, s.bodies); err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", bus.ErrInvalidConfig, err)
	}
	s.hc = NewHTTPClient(HTTPOptions{AllowPrivateNetworks: cfg.AllowPrivateNetworks, Tracer: s.tracer, Metrics: s.metrics, Timeout: cfg.GitHubTimeout})
	s.gh = NewGitHub(s.hc, cfg.GitHubTimeout, s.now)
	s.gh.SetLimits(cfg.Limits, cfg.DefaultAPIURL)
	s.rates.m = make(map[string]time.Time)
	s.pushes = newPushBudget(cfg.Pushes, s.now)
	if s.cards, err = newCards(s, cfg.Cards, deps.Registerer); err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", bus.ErrInvalidConfig, err)
	}
	s.runner, err = bus.NewRunner(bus.RunnerConfig{
		Plugin:            Plugin,
		Description:       "GitHub lookups and repository event push",
		Workers:           cfg.Workers,
		InvocationTimeout: cfg.InvocationTimeout,
		Retention:         cfg.Retention,
		DedupeTTL:         dedupeTTL,
		Replicas:          cfg.Replicas,
		SecretFields:      []string{secretField},
		Handlers: bus.Handlers{
			Command: s.handleCommand,
			Tool:    s.handleTool,
			Event:   s.handleEvent,
			Dedupe:  dedupes,
		},
		Purge:        s.purgeScope,
		OnTransition: s.onTransition,
		Streams: []bus.StreamSpec{{
			Name:              StreamName,
			Subjects:          []string{s.subj.InternalAll(Plugin, KindSched), s.subj.InternalAll(Plugin, KindPoll)},
			Replicas:          cfg.Replicas,
			Schedules:         true,
			MaxMsgsPerSubject: 1,
		}, s.hookStream()},
		Consumers: []bus.Consumer{{FiredConfig: bus.FiredConfig{
			Stream: StreamName, Durable: PollConsumer, Filter: s.subj.InternalAll(Plugin, KindPoll),
			Workers: cfg.PollWorkers, AckWait: cfg.AckWait, MaxDeliver: 3, Timeout: cfg.PollDeadline,
		}, Handler: s.handlePoll}, s.hookConsumer()},
		// the GitHub client's idle connections close once no poll runs
		Parts: []bus.Part{bus.PartFuncs{StopFunc: func(context.Context) error { s.hc.CloseIdleConnections(); return nil }},
			s.hookListener(), s.cards, &pushSummaries{s: s}},
		HostTimeout:     cfg.HostTimeout,
		ShutdownTimeout: cfg.PollDeadline + 5*time.Second,
	}, deps)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Run serves until ctx is done (bus.Runner.Run: the stream, the buckets,
// the endpoints and the poll consumer; then intake drains and every poll
// finishes). It returns nil for a ctx-requested stop and does no tenant
// I/O at start.
func (s *Service) Run(ctx context.Context) error { return s.runner.Run(ctx) }

// Ready reports whether the service serves (bus.Runner.Ready).
func (s *Service) Ready() bool { return s.runner.Ready() }

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

func (s *Service) streamHandle() jetstream.Stream { return s.runner.Stream(StreamName) }

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

// rateMemory is the process-local rate-limit memory: rate key (rateKey)
// -> the time polls under that key may resume (spec §7.3). It is the only
// state shared across scopes.
type rateMemory struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// rateKey is whose GitHub rate limit a poll spends: the credential and
// the GitHub address together (issue 33). GitHub counts a token's limit
// per token on each server, and the anonymous limit per client address
// on each server: installations without a token share one key only when
// they poll the same GitHub address (this process is one egress), and a
// token never shares the anonymous key, so one installation's block
// stops only the requests that would have been refused too.
func (s *Service) rateKey(st Settings) string {
	cred := "anonymous"
	if st.Token != "" {
		cred = "token:" + s.keyring.Fingerprint([]byte(st.Token))
	}
	return s.keyring.Fingerprint([]byte(cred + "\n" + st.APIURL))
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
