// Package svcmain is the shared main of the service binaries: it reads the
// flags and environment of DESIGN 8, connects to NATS, sets up tracing,
// logging and the HTTP endpoints (health, readiness, metrics, and any routes
// the service adds), runs the service until SIGINT or SIGTERM, and then
// shuts everything down in order with a bounded deadline. Secret settings
// may be given as files (NAME_FILE, for Docker and Compose secrets), and
// "-healthcheck" turns the binary into its own container health probe.
//
// A service describes its binary once, as a Binary (name, own flags,
// build); every cmd/<name>/main.go is the same line:
//
//	func main() { os.Exit(svcmain.Main(<name>.Binary(), os.Args[1:], os.Getenv, os.Stderr)) }
//
// svcmain names the service on every log line (the "service" attribute);
// nothing below it adds the name again.
//
// A binary that runs several services in one process (cmd/langbot-plugins)
// uses RunParts: the same flags, one connection per service, one HTTP mux,
// and an Embedding that starts what the services connect to before them and
// stops it after them.
//
// It may import pkg/bus, pkg/wire, pkg/telemetry, the NATS client, OpenTelemetry's
// API and Prometheus' client; never a service (each service hands it a
// Binary) and never pkg/natsembed (an Embedding is passed in), so a
// service binary links no NATS server.
package svcmain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/pkg/telemetry"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Options are the settings every service binary takes. Each flag defaults
// to its environment variable.
type Options struct {
	NATS     bus.ConnConfig
	Prefix   string // LANGBOT_SUBJECT_PREFIX
	HTTPAddr string // LANGBOT_HTTP_ADDR
	// MetricsAddr is LANGBOT_METRICS_ADDR: when set, /metrics, /healthz
	// and /readyz are served on a listener of their own there, and the
	// HTTPAddr listener (console, webhook) no longer serves them (404).
	// Empty, the default, serves them on HTTPAddr as before.
	MetricsAddr string
	Replicas    int    // LANGBOT_JS_REPLICAS
	StateKey    string // LANGBOT_STATE_KEY
	Workers     int    // LANGBOT_WORKERS (0: the service's default)
	LogLevel    string // LANGBOT_LOG_LEVEL
	// DrainTimeout is LANGBOT_DRAIN_TIMEOUT: how long a stop waits for the
	// services to finish their work (default bus.DefaultShutdownTimeout);
	// the HTTP server and the connections get stopGrace more, so the whole
	// stop ends inside the pod's grace period (deploy/k8s: 30 s).
	DrainTimeout time.Duration
	// Retention is LANGBOT_RETENTION: remove installations whose attach
	// was not refreshed for this long (bus.RunnerConfig.Retention); 0 is
	// off, the default.
	Retention time.Duration

	// AuthIssuerSeed is LANGBOT_AUTH_ISSUER_SEED: the issuer key of the
	// NATS auth callout. When set, the process answers tenant logins
	// (bus.AuthCallout) on its first service's connection; every service
	// of a deployment gets it, so logins work while any one runs.
	AuthIssuerSeed string

	retention string // the flag's text, parsed by Run
}

// AuthIssuerSeedEnv names the auth callout's issuer seed (a secret: the
// environment or a file, never a flag).
const AuthIssuerSeedEnv = "LANGBOT_AUTH_ISSUER_SEED"

// Env is what a service is built from.
type Env struct {
	Options        Options
	Conn           *nats.Conn
	Subjects       wire.Subjects
	Keyring        *bus.Keyring // nil when LANGBOT_STATE_KEY is empty
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
	Registry       *prometheus.Registry
	// Mux is served on HTTPAddr; add routes before Build returns. It holds
	// the health and metrics routes unless MetricsAddr is set.
	Mux *http.ServeMux
	// Getenv reads service-specific variables.
	Getenv func(string) string
}

// Deps returns the live parts of env in the shape every service takes.
// The clock is the wall clock.
func (env *Env) Deps() bus.Deps {
	return bus.Deps{Conn: env.Conn, Subjects: env.Subjects, Keyring: env.Keyring, Logger: env.Logger,
		TracerProvider: env.TracerProvider, Registerer: env.Registry}
}

// Service is a built service: Run serves until ctx is done; Ready reports
// readiness for /readyz. A bus.Runner is one; services delegate to theirs.
type Service interface {
	Run(ctx context.Context) error
	Ready() bool
}

// Binary describes one service binary: every cmd/<name>/main.go is
// svcmain.Main over the service's Binary(). A binary that runs several
// services runs several Binary values.
type Binary struct {
	// Name is the plugin name: the name of the logger ("service"
	// attribute), the tracer provider and the NATS connection.
	Name string
	// Flags adds the service's own flags to fs, defaulting to getenv; nil
	// when it has none.
	Flags func(fs *flag.FlagSet, getenv func(string) string)
	// Build creates the service on env once the flags are parsed. It may
	// add routes to env.Mux.
	Build func(ctx context.Context, env *Env) (Service, error)
}

// Main runs b until SIGINT or SIGTERM: it parses args, builds the service
// and runs it. It returns the exit code: 0 after a requested stop, 1 on
// failure, 2 for bad flags.
func Main(b Binary, args []string, getenv func(string) string, stderr io.Writer) int {
	return MainParts(b.Name, args, getenv, stderr, []Binary{b}, nil)
}

// MainParts is Main for a binary named name that runs several services
// (see RunParts).
func MainParts(name string, args []string, getenv func(string) string, stderr io.Writer, bins []Binary, emb *Embedding) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := RunParts(ctx, name, args, getenv, stderr, bins, emb)
	switch {
	case errors.Is(err, errFlags):
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

var errFlags = errors.New("svcmain: bad flags")

// Run is Main without the signal handling: it serves until ctx is done.
// Secrets may come from files (WithSecretFiles, SecretEnvs); with
// -healthcheck it only probes a running instance (Probe) and returns.
func Run(ctx context.Context, b Binary, args []string, getenv func(string) string, stderr io.Writer) error {
	return RunParts(ctx, b.Name, args, getenv, stderr, []Binary{b}, nil)
}

// Embedding is what a binary that runs several services starts around
// them, such as an embedded NATS server. Its AddFlags replaces the NATS
// client flags (the services connect where Start says).
type Embedding struct {
	// AddFlags adds the binary's own flags; may be nil.
	AddFlags func(*flag.FlagSet)
	// Start runs after the flags are parsed and before any service
	// connects. It may complete opts (a state key kept in a data
	// directory) and says how each part connects. getenv is the one the
	// flags were read from, secret files (SecretEnvs) resolved.
	Start func(ctx context.Context, opts *Options, getenv func(string) string, log *slog.Logger) (*Started, error)
}

// Started is what Embedding.Start returns.
type Started struct {
	// Conns holds each part's connection settings by part name.
	Conns map[string]bus.ConnConfig
	// Getenv, when set, is what the services read their own variables
	// from (Env.Getenv) instead of the process environment.
	Getenv func(string) string
	// Stop is called last: after every service returned, the HTTP server
	// stopped and every connection was drained and closed.
	Stop func()
	// NoServices runs none of the parts: the embedding alone (and the
	// HTTP endpoints) serve until ctx is done.
	NoServices bool
}

// RunParts runs parts in one process until ctx is done: one NATS
// connection per part, one tracer provider and logger per part named after
// it, one metrics registry and one HTTP server for all, ready when every
// part is. When one part fails the others are stopped. Shutdown is in
// order: every part's Run returns (intake stopped, work finished), then the
// HTTP server, then the connections drain, then emb's Stop. With a nil emb
// the NATS client flags of RegisterFlags say how every part connects.
func RunParts(ctx context.Context, name string, args []string, getenv func(string) string, stderr io.Writer,
	bins []Binary, emb *Embedding) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	getenv, err := WithSecretFiles(getenv, SecretEnvs()...)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts *Options
	if emb == nil {
		opts = RegisterFlags(fs, getenv)
	} else {
		opts = registerCommon(fs, getenv)
		if emb.AddFlags != nil {
			emb.AddFlags(fs)
		}
	}
	healthcheck := fs.Bool("healthcheck", false, "probe the running service's /readyz on LANGBOT_METRICS_ADDR, or LANGBOT_HTTP_ADDR when that is empty, and exit 0 if ready (container health check)")
	for _, b := range bins {
		if b.Flags != nil {
			b.Flags(fs, getenv)
		}
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errFlags, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errFlags, fs.Arg(0))
	}
	if *healthcheck {
		if opts.MetricsAddr != "" {
			return Probe(ctx, opts.MetricsAddr)
		}
		return Probe(ctx, opts.HTTPAddr)
	}
	d, err := ParseRetention(opts.retention)
	if err != nil {
		return err
	}
	opts.Retention = d
	return run(ctx, name, *opts, getenv, stderr, bins, emb)
}

// ErrRetention reports a LANGBOT_RETENTION (or -retention) that is not a
// duration of zero or more.
var ErrRetention = errors.New("svcmain: bad retention")

// ParseRetention reads a retention setting: empty or "0" is off, otherwise
// a Go duration ("720h") or a whole number of days ("30d").
func ParseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%w: %q: want a duration such as 720h or 30d", ErrRetention, s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%w: %q: want a duration such as 720h or 30d", ErrRetention, s)
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("%w: %q is negative", ErrRetention, s)
	}
	return d, nil
}

// RegisterFlags adds the common flags to fs, defaulting to the environment.
func RegisterFlags(fs *flag.FlagSet, getenv func(string) string) *Options {
	o := registerCommon(fs, getenv)
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&o.NATS.URL, "nats", env("NATS_URL", nats.DefaultURL), "NATS server URL(s), comma-separated (NATS_URL)")
	fs.StringVar(&o.NATS.User, "nats-user", getenv("NATS_USER"), "NATS user (NATS_USER)")
	o.NATS.Password = getenv("NATS_PASSWORD") // never a flag: it would show in ps
	fs.StringVar(&o.NATS.CredsFile, "nats-creds", getenv("NATS_CREDS"), "NATS credentials file (NATS_CREDS)")
	fs.StringVar(&o.NATS.TLSCA, "nats-tls-ca", getenv("NATS_TLS_CA"), "CA bundle for the NATS server (NATS_TLS_CA)")
	fs.StringVar(&o.NATS.TLSCert, "nats-tls-cert", getenv("NATS_TLS_CERT"), "client certificate (NATS_TLS_CERT)")
	fs.StringVar(&o.NATS.TLSKey, "nats-tls-key", getenv("NATS_TLS_KEY"), "client key (NATS_TLS_KEY)")
	return o
}

// registerCommon adds the flags that do not say how to reach NATS.
func registerCommon(fs *flag.FlagSet, getenv func(string) string) *Options {
	o := &Options{}
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	envInt := func(k string, def int) int {
		if n, err := strconv.Atoi(getenv(k)); err == nil {
			return n
		}
		return def
	}
	envDuration := func(k string, def time.Duration) time.Duration {
		if d, err := time.ParseDuration(getenv(k)); err == nil && d > 0 {
			return d
		}
		return def
	}
	fs.StringVar(&o.Prefix, "prefix", env("LANGBOT_SUBJECT_PREFIX", wire.DefaultPrefix), "subject prefix (LANGBOT_SUBJECT_PREFIX)")
	fs.StringVar(&o.HTTPAddr, "http", env("LANGBOT_HTTP_ADDR", ":8080"), "HTTP address for the console and webhook, and for health and metrics unless -metrics-addr is set (LANGBOT_HTTP_ADDR)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", getenv("LANGBOT_METRICS_ADDR"), "HTTP address of its own for /metrics, /healthz and /readyz; empty: served on -http (LANGBOT_METRICS_ADDR)")
	fs.IntVar(&o.Replicas, "replicas", envInt("LANGBOT_JS_REPLICAS", 1), "replicas of the service's streams and buckets (LANGBOT_JS_REPLICAS)")
	o.StateKey = getenv("LANGBOT_STATE_KEY") // secret: environment only
	o.AuthIssuerSeed = getenv(AuthIssuerSeedEnv)
	fs.IntVar(&o.Workers, "workers", envInt("LANGBOT_WORKERS", 0), "concurrent invocation handlers (LANGBOT_WORKERS)")
	fs.StringVar(&o.retention, "retention", getenv("LANGBOT_RETENTION"),
		"remove installations not attached for this long, at least 24h, e.g. 720h or 30d; empty or 0: never (LANGBOT_RETENTION)")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", envDuration("LANGBOT_DRAIN_TIMEOUT", bus.DefaultShutdownTimeout),
		"how long a stop waits for in-flight work before exiting anyway (LANGBOT_DRAIN_TIMEOUT)")
	fs.StringVar(&o.LogLevel, "log-level", env("LANGBOT_LOG_LEVEL", "info"), "debug, info, warn or error (LANGBOT_LOG_LEVEL)")
	return o
}

// stopGrace bounds what a stop does after the services' drain: the HTTP
// server's shutdown and the connections' drain share it.
const stopGrace = 5 * time.Second

// run starts the embedding (if any), builds each part's service on a
// connection of its own, serves HTTP, runs the services until ctx is done
// or one of them stops, and shuts everything down in reverse.
func run(ctx context.Context, name string, o Options, getenv func(string) string, stderr io.Writer,
	parts []Binary, emb *Embedding) (err error) {
	level, err := telemetry.ParseLevel(o.LogLevel)
	if err != nil {
		return err
	}
	log := telemetry.NewLogger(stderr, level, name)
	subjects, err := wire.NewSubjects(o.Prefix)
	if err != nil {
		return err
	}
	a := &assembly{parts: parts, getenv: getenv, svcGetenv: getenv, stderr: stderr, level: level, log: log,
		subjects: subjects, embedded: emb != nil}
	if emb != nil {
		st, err := emb.Start(ctx, &o, getenv, log)
		if err != nil {
			return err
		}
		if st.Stop != nil {
			defer st.Stop() // deferred first: runs after the connections closed
		}
		a.conns = st.Conns
		if st.NoServices {
			a.parts = nil
		}
		if st.Getenv != nil {
			a.svcGetenv = st.Getenv
		}
	}
	a.o = o
	if o.StateKey != "" {
		if a.kr, err = bus.ParseKeyring(o.StateKey); err != nil {
			return err
		}
	}

	a.reg = telemetry.NewRegistry()
	svcs := make([]Service, len(a.parts))
	ready := func() error {
		for _, s := range svcs {
			if s == nil || !s.Ready() {
				return telemetry.ErrNotReady
			}
		}
		return nil
	}
	// mux serves HTTPAddr; with MetricsAddr, health and metrics move to a
	// mux of their own
	mux, metricsMux := telemetry.Mux(a.reg, ready), (*http.ServeMux)(nil)
	if o.MetricsAddr != "" {
		mux, metricsMux = http.NewServeMux(), mux
	}
	ncs, closeBuilt, err := a.build(ctx, svcs, mux)
	defer closeBuilt()
	if err != nil {
		return err
	}
	if len(ncs) > 0 {
		stopAuth, err := startAuthCallout(ctx, o, ncs[0], subjects, log, a.reg)
		if err != nil {
			return err
		}
		defer stopAuth()
	}
	hs, ms, attrs, err := listen(o, mux, metricsMux)
	if err != nil {
		return err
	}
	if len(ncs) == 1 {
		attrs = append(attrs, "nats", ncs[0].ConnectedUrlRedacted())
	}
	log.Info("started", attrs...)

	errs, stuck := a.runAll(ctx, svcs)
	sctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	herr := hs.Shutdown(sctx)
	if ms != nil {
		herr = errors.Join(herr, ms.Shutdown(sctx))
	}
	log.Info("stopped")
	if stuck {
		// errs is still written by the services that did not return
		return errors.Join(fmt.Errorf("svcmain: services still running after the drain timeout %v", o.DrainTimeout), herr)
	}
	return errors.Join(append(errs, herr)...)
}

// assembly is what run's steps share: the options, the parts to run and
// what every part's Env is made of.
type assembly struct {
	o         Options
	parts     []Binary
	getenv    func(string) string // the process's environment (tracing)
	svcGetenv func(string) string // the services' (the embedding may extend it)
	embedded  bool                // an Embedding gives each part's connection
	conns     map[string]bus.ConnConfig
	subjects  wire.Subjects
	kr        *bus.Keyring
	stderr    io.Writer
	level     slog.Level
	log       *slog.Logger
	reg       *prometheus.Registry
}

// named prefixes a part's error with its name when there are several.
func (a *assembly) named(part string, err error) error {
	if len(a.parts) > 1 {
		return fmt.Errorf("%s: %w", part, err)
	}
	return err
}

// build connects each part and builds its service into svcs. closeBuilt,
// also returned with an error, shuts the tracer providers down (last
// built first) and then drains the connections.
func (a *assembly) build(ctx context.Context, svcs []Service, mux *http.ServeMux) (ncs []*nats.Conn, closeBuilt func(), err error) {
	var shutdowns []func()
	closeBuilt = func() {
		for i := len(shutdowns) - 1; i >= 0; i-- {
			shutdowns[i]()
		}
		drainAll(ncs)
	}
	for i, p := range a.parts {
		tp, err := telemetry.NewTracerProvider(ctx, p.Name, a.getenv)
		if err != nil {
			return ncs, closeBuilt, err
		}
		shutdowns = append(shutdowns, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = tp.Shutdown(sctx)
		})
		plog := a.log
		if len(a.parts) > 1 {
			plog = telemetry.NewLogger(a.stderr, a.level, p.Name)
		}
		cc := a.o.NATS
		if a.embedded {
			var ok bool
			if cc, ok = a.conns[p.Name]; !ok {
				return ncs, closeBuilt, fmt.Errorf("svcmain: no connection for %s", p.Name)
			}
		}
		cc.Name = p.Name
		cc.Logger = plog
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		nc, err := bus.Connect(cctx, cc)
		cancel()
		if err != nil {
			return ncs, closeBuilt, a.named(p.Name, err)
		}
		ncs = append(ncs, nc)
		env := &Env{Options: a.o, Conn: nc, Subjects: a.subjects, Keyring: a.kr, Logger: plog, TracerProvider: tp,
			Registry: a.reg, Mux: mux, Getenv: a.svcGetenv}
		if svcs[i], err = p.Build(ctx, env); err != nil {
			return ncs, closeBuilt, a.named(p.Name, err)
		}
	}
	return ncs, closeBuilt, nil
}

// listen serves mux on HTTPAddr and, when there is one, metricsMux on
// MetricsAddr; attrs name the addresses for the "started" line.
func listen(o Options, mux, metricsMux *http.ServeMux) (hs, ms *httpserve.Server, attrs []any, err error) {
	hs, err = httpserve.Listen(o.HTTPAddr, mux, httpserve.Limits{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("http: %w", err)
	}
	attrs = []any{"http", hs.Addr()}
	if metricsMux != nil {
		if ms, err = httpserve.Listen(o.MetricsAddr, metricsMux, httpserve.Limits{}); err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), stopGrace)
			defer cancel()
			return nil, nil, nil, errors.Join(fmt.Errorf("metrics http: %w", err), hs.Shutdown(sctx))
		}
		attrs = append(attrs, "metrics", ms.Addr())
	}
	return hs, ms, attrs, nil
}

// runAll runs the services until ctx is done or one of them returns (one
// stops, all stop). Once ctx is done they get the drain timeout, no more:
// stuck says some did not return, and errs is then still being written.
func (a *assembly) runAll(ctx context.Context, svcs []Service) (errs []error, stuck bool) {
	runCtx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	errs = make([]error, len(svcs))
	var wg sync.WaitGroup
	for i, s := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Run(runCtx)
			if errs[i] != nil && !errors.Is(errs[i], context.Canceled) {
				errs[i] = a.named(a.parts[i].Name, errs[i])
			} else {
				errs[i] = nil
			}
			stopAll() // one stops, all stop: the process is restarted whole
		}()
	}
	if len(svcs) == 0 {
		<-ctx.Done()
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	select {
	case <-allDone:
	case <-ctx.Done():
		// asked to stop: the services get the drain bound, no more
		select {
		case <-allDone:
		case <-time.After(a.o.DrainTimeout):
			a.log.Error("services did not stop within the drain timeout; exiting anyway", "drain_timeout", a.o.DrainTimeout.String())
			stuck = true
		}
	}
	return errs, stuck
}

func drainAll(ncs []*nats.Conn) {
	for _, nc := range ncs {
		_ = nc.Drain()
	}
	deadline := time.Now().Add(stopGrace)
	for _, nc := range ncs {
		for !nc.IsClosed() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		nc.Close()
	}
}

// startAuthCallout starts the tenant login responder on nc when the issuer
// seed is set, and returns what stops it (after the services, before the
// connections drain: deferred after drainAll, it runs first).
func startAuthCallout(ctx context.Context, o Options, nc *nats.Conn, subjects wire.Subjects, log *slog.Logger, reg prometheus.Registerer) (func(), error) {
	if o.AuthIssuerSeed == "" {
		log.Warn("no " + AuthIssuerSeedEnv + ": this process answers no tenant logins (docs/operations.md, Tenant credentials)")
		return func() {}, nil
	}
	ac, err := bus.NewAuthCallout(bus.AuthCalloutConfig{Conn: nc, Subjects: subjects, IssuerSeed: o.AuthIssuerSeed,
		Account: bus.TenantAccount, Logger: log.With("part", "auth-callout"), Registerer: reg})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := ac.Start(sctx); err != nil {
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		_ = ac.Stop(sctx)
	}, nil
}
