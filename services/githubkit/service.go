package githubkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
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
	// the circuit to a failing host (ghclient/limits.go); zero = defaults.
	Limits ghclient.Limits
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
	// defaultWebhookBodyBudget.
	WebhookBodyBudget int64
	// WebhookReadTimeout bounds reading a delivery's body, wherever the
	// receiver is mounted; a client slower than that is cut off. Default
	// defaultWebhookReadTimeout.
	WebhookReadTimeout time.Duration
	// HookHealthInterval is the poll interval of a repository whose
	// webhook delivers; default defaultHookHealthInterval.
	HookHealthInterval time.Duration
	// Cards bounds link cards: workers, per-chat rate, cache (cards_state.go);
	// zero = defaults.
	Cards CardLimits
	// Pushes bounds webhook pushes per chat and per webhook, the excess
	// summarised (pushbudget.go); zero = defaults.
	Pushes PushBudget
}

// Service is the githubkit service. Create it with New and serve with Run.
// It declares and wires; the behaviour lives in its parts.
type Service struct {
	*shared
	gh    *ghclient.GitHub
	hc    *http.Client
	poll  *poller          // fired polls (poll.go, ci.go)
	wh    *webhooks        // the webhook command and consumer (webhook_cmd.go, webhook_consume.go)
	rx    *hookReceiver    // the webhook receiver (webhook_http.go)
	subs  *subscriptions   // sub, unsub, subs and the installation lifecycle (commands.go, lifecycle.go)
	cards *cards           // link cards (cards*.go)
	revs  *reviewReminders // gh reviews and the fired reminders (reviews.go)
	me    *personal        // gh me and personal pushes (personal.go)
	orgs  *orgs            // organisation subscriptions (orgs.go)
	sums  *summaries       // gh summary (summary.go)
	noise *noise           // quiet hours and digests (noise*.go)
}

// shared is what every part reads: the config, the runner (set once New
// has built it), the clock, the logger and tracer, the catalogue, the
// subjects and the metrics. Its methods are the helpers the
// parts have in common: settings and texts of an installation, a record's
// schedule (arm, disarm) and the recent-event sets of seen.go.
type shared struct {
	cfg     Config
	now     func() time.Time
	log     *slog.Logger
	tracer  trace.Tracer
	cat     *i18n.Catalog
	metrics *serviceMetrics
	runner  *bus.Runner
	subj    wire.Subjects
}

// poller runs the fired polls of spec §7.2 and the Actions step after
// them. Its only state across polls is the rate-limit memory.
type poller struct {
	*shared
	gh      *ghclient.GitHub
	keyring *bus.Keyring // the rate key's credential fingerprint
	rand    func() float64
	rates   rateMemory
	wh      *webhooks // whether a repository's webhook delivers
	me      *personal // personal pushes of new events (personal.go)
	noise   *noise    // quiet hours and digests hold pushes
	hooks   hooks     // tests only (export_test.go)
}

// hooks let tests hold a poll at a chosen point.
type hooks struct {
	afterClaim func(ctx context.Context, sc binding.Scope, key string)
}

// webhooks is the "gh hook" command, the hook stream's consumer and the
// push budget with its summaries.
type webhooks struct {
	*shared
	keyring *bus.Keyring // webhook secrets are sealed
	hm      *hookMetrics
	pushes  *pushBudget
	me      *personal // personal pushes of delivered events (personal.go)
	orgs    *orgs     // organisations' deliveries (orgs_hook.go)
	noise   *noise    // quiet hours and digests hold deliveries
}

// hookReceiver is the webhook's HTTP receiver (webhook_http.go): it
// refuses or records one delivery at a time; the hook consumer pushes.
type hookReceiver struct {
	*shared
	nc      *nats.Conn   // deliveries are published
	keyring *bus.Keyring // hook secrets are opened
	hm      *hookMetrics
	bodies  *httpserve.Budget // delivery bodies being read
}

// subscriptions is "gh sub", "gh unsub" and "gh subs", and what an
// installation's lifecycle does to its records and schedules.
type subscriptions struct {
	*shared
	gh *ghclient.GitHub
	wh *webhooks
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
		cfg.MinPollInterval = minPollInterval
	}
	if cfg.MinPollInterval > minPollInterval {
		return nil, fmt.Errorf("%w: minPollInterval above %d", bus.ErrInvalidConfig, minPollInterval)
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.PollDeadline <= 0 {
		cfg.PollDeadline = pollDeadline
	}
	if cfg.HostTimeout <= 0 {
		cfg.HostTimeout = wire.DefaultHostTimeout
	}
	if cfg.DefaultAPIURL == "" {
		cfg.DefaultAPIURL = ghclient.DefaultAPIURL
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
		cfg.WebhookBodyBudget = defaultWebhookBodyBudget
	}
	if cfg.WebhookBodyBudget < cfg.WebhookMaxBody {
		return nil, fmt.Errorf("%w: WebhookBodyBudget below WebhookMaxBody", bus.ErrInvalidConfig)
	}
	if cfg.WebhookReadTimeout <= 0 {
		cfg.WebhookReadTimeout = defaultWebhookReadTimeout
	}
	if cfg.HookHealthInterval <= 0 {
		cfg.HookHealthInterval = defaultHookHealthInterval
	}
	if cfg.HookHealthInterval < time.Second {
		return nil, fmt.Errorf("%w: HookHealthInterval below 1 s", bus.ErrInvalidConfig)
	}
	cat, err := Catalog()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", bus.ErrInvalidConfig, err)
	}
	sh := &shared{cfg: cfg, now: deps.Clock, log: deps.Logger,
		cat: cat, subj: deps.Subjects, tracer: deps.TracerProvider.Tracer(tracerName)}
	if sh.metrics, err = newMetrics(deps.Registerer); err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", bus.ErrInvalidConfig, err)
	}
	s := &Service{shared: sh}
	s.rx = &hookReceiver{shared: sh, nc: deps.Conn, keyring: deps.Keyring, bodies: httpserve.NewBudget(cfg.WebhookBodyBudget)}
	if s.rx.hm, err = newHookMetrics(deps.Registerer, s.rx.bodies); err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", bus.ErrInvalidConfig, err)
	}
	wh := &webhooks{shared: sh, keyring: deps.Keyring, hm: s.rx.hm, pushes: newPushBudget(cfg.Pushes, sh.now)}
	s.hc = ghclient.NewHTTPClient(ghclient.HTTPOptions{AllowPrivateNetworks: cfg.AllowPrivateNetworks, Tracer: sh.tracer, Metrics: &sh.metrics.github, Timeout: cfg.GitHubTimeout})
	s.gh = ghclient.NewGitHub(s.hc, cfg.GitHubTimeout, sh.now)
	s.gh.SetLimits(cfg.Limits, cfg.DefaultAPIURL)
	s.wh = wh
	s.noise = &noise{shared: sh}
	wh.noise = s.noise
	s.poll = &poller{shared: sh, gh: s.gh, keyring: deps.Keyring, rand: rand.Float64, rates: rateMemory{m: make(map[string]time.Time)}, wh: wh, noise: s.noise}
	s.subs = &subscriptions{shared: sh, gh: s.gh, wh: wh}
	s.me = &personal{shared: sh}
	s.poll.me, wh.me = s.me, s.me
	s.revs = &reviewReminders{shared: sh, gh: s.gh}
	s.orgs = &orgs{shared: sh, gh: s.gh, me: s.me, wh: wh, poll: s.poll}
	wh.orgs = s.orgs
	s.sums = &summaries{shared: sh, gh: s.gh}
	if s.cards, err = newCards(sh, s.gh, cfg.Cards, deps.Registerer); err != nil {
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
		ObserveEvents:     Declaration().ObserveEvents,
		Handlers: bus.Handlers{
			Command: s.handleCommand,
			Tool:    s.handleTool,
			Event:   s.handleEvent,
			Dedupe:  dedupes,
		},
		Purge: func(ctx context.Context, sc binding.Scope) error {
			if err := s.subs.purgeScope(ctx, sc); err != nil {
				return err
			}
			if err := s.noise.purge(ctx, sc); err != nil {
				return err
			}
			return purgeFeatSchedules(ctx, sh, sc)
		},
		OnTransition: func(ctx context.Context, sc binding.Scope, prev *bus.Authority, next bus.Authority) error {
			return errors.Join(s.subs.onTransition(ctx, sc, prev, next), featTransition(ctx, s.revs, s.orgs, sc, next))
		},
		Streams: []bus.StreamSpec{scheduleStream(s.subj, cfg.Replicas), wh.hookStream(), s.noise.stream()},
		Consumers: []bus.Consumer{{FiredConfig: bus.FiredConfig{
			Stream: StreamName, Durable: PollConsumer, Filter: s.subj.InternalAll(Plugin, KindPoll),
			Workers: cfg.PollWorkers, AckWait: cfg.AckWait, MaxDeliver: 3, Timeout: cfg.PollDeadline,
		}, Handler: s.poll.handlePoll}, wh.hookConsumer(), s.revs.consumer(), s.orgs.consumer(), s.noise.consumer()},
		// the GitHub client's idle connections close once no poll runs
		Parts: []bus.Part{bus.PartFuncs{StopFunc: func(context.Context) error { s.hc.CloseIdleConnections(); return nil }},
			s.rx.hookListener(), s.cards, &pushSummaries{s: wh}},
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

// Grants are the NATS permissions the service needs as its user
// (bus.Runner.Grants); cmd/builtin writes them into the accounts file.
func (s *Service) Grants() bus.UserGrants { return s.runner.Grants() }

// settings normalises a plain-text config with the service's flags.
func (s *shared) settings(raw []byte) (Settings, []Warning) {
	return normalizeSettings(raw, normOptions{allowHTTP: s.cfg.AllowHTTP, minPoll: s.cfg.MinPollInterval, defaultURL: s.cfg.DefaultAPIURL})
}

func (s *shared) texts(lang string) texts { return texts{events.NewTexts(s.cat, lang)} }

// schedKinds names one kind of schedule on the service's stream.
type schedKinds int

// The schedules of the stream: repository polls, organisation polls and
// review reminder slots.
const (
	repoPolls schedKinds = iota
	orgPolls
	reviewFirings
)

// kinds are the subject kinds of k: where the schedule lives and where it
// fires.
func (k schedKinds) kinds() (sched, fire string) {
	switch k {
	case orgPolls:
		return KindOrgSched, KindOrgPoll
	case reviewFirings:
		return KindReviewSched, KindReviewFire
	}
	return KindSched, KindPoll
}

// schedSubjectsOf returns the schedule and fire subjects of key's
// schedule of kinds k.
func (s *shared) schedSubjectsOf(k schedKinds, sc binding.Scope, key string) (sched, fire string, err error) {
	schedKind, fireKind := k.kinds()
	if sched, err = s.subj.Internal(Plugin, schedKind, sc, key); err != nil {
		return "", "", err
	}
	fire, err = s.subj.Internal(Plugin, fireKind, sc, key)
	return sched, fire, err
}

// schedSubjects returns the schedule and poll subjects of one record.
func (s *shared) schedSubjects(sc binding.Scope, key string) (sched, poll string, err error) {
	return s.schedSubjectsOf(repoPolls, sc, key)
}

// scheduleStream is the stream of the repositories' poll schedules and the
// review and organisation schedules, one message per subject. The service
// creates it at start; an import before the service ever ran creates the
// same (Import).
func scheduleStream(subj wire.Subjects, replicas int) bus.StreamSpec {
	return bus.StreamSpec{
		Name: StreamName,
		Subjects: []string{subj.InternalAll(Plugin, KindSched), subj.InternalAll(Plugin, KindPoll),
			subj.InternalAll(Plugin, KindReviewSched), subj.InternalAll(Plugin, KindReviewFire),
			subj.InternalAll(Plugin, KindOrgSched), subj.InternalAll(Plugin, KindOrgPoll)},
		Replicas:          replicas,
		Schedules:         true,
		MaxMsgsPerSubject: 1,
	}
}

func (s *shared) streamHandle() jetstream.Stream { return s.runner.Stream(StreamName) }

// armEvery publishes (or replaces) key's "@every" schedule of kinds k.
func (s *shared) armEvery(ctx context.Context, k schedKinds, sc binding.Scope, key string, intervalS int) error {
	sched, fire, err := s.schedSubjectsOf(k, sc, key)
	if err != nil {
		return err
	}
	return bus.ScheduleEvery(ctx, s.runner.JetStream(), sched, fire, time.Duration(intervalS)*time.Second, []byte(`{"v":1}`))
}

// disarmOf cancels key's schedule of kinds k and drops a pending fire.
func (s *shared) disarmOf(ctx context.Context, k schedKinds, sc binding.Scope, key string) error {
	sched, fire, err := s.schedSubjectsOf(k, sc, key)
	if err != nil {
		return err
	}
	st := s.streamHandle()
	if st == nil {
		return errors.New("githubkit: stream not ready")
	}
	return bus.PurgeSubjects(ctx, st, sched, fire)
}

// arm publishes (or replaces) the @every schedule of one record.
func (s *shared) arm(ctx context.Context, sc binding.Scope, key string, intervalS int) error {
	return s.armEvery(ctx, repoPolls, sc, key, intervalS)
}

// disarm cancels the schedule of one record and drops a pending fire.
func (s *shared) disarm(ctx context.Context, sc binding.Scope, key string) error {
	return s.disarmOf(ctx, repoPolls, sc, key)
}
