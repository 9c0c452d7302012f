// Package svcmain is the shared main of the service binaries: it reads the
// flags and environment of DESIGN 8, connects to NATS, sets up tracing,
// logging and the HTTP endpoints (health, readiness, metrics, and any routes
// the service adds), runs the service until SIGINT or SIGTERM, and then
// shuts everything down in order with a bounded deadline. Secret settings
// may be given as files (NAME_FILE, for Docker and Compose secrets), and
// "-healthcheck" turns the binary into its own container health probe.
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
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/telemetry"
)

// Options are the settings every service binary takes. Each flag defaults
// to its environment variable.
type Options struct {
	NATS     bus.ConnConfig
	Prefix   string // LANGBOT_SUBJECT_PREFIX
	HTTPAddr string // LANGBOT_HTTP_ADDR
	Replicas int    // LANGBOT_JS_REPLICAS
	StateKey string // LANGBOT_STATE_KEY
	Workers  int    // LANGBOT_WORKERS (0: the service's default)
	LogLevel string // LANGBOT_LOG_LEVEL
}

// Env is what a service is built from.
type Env struct {
	Options        Options
	Conn           *nats.Conn
	Subjects       bus.Subjects
	Keyring        *bus.Keyring // nil when LANGBOT_STATE_KEY is empty
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
	Registry       *prometheus.Registry
	// Mux is served on HTTPAddr; add routes before Build returns.
	Mux *http.ServeMux
	// Getenv reads service-specific variables.
	Getenv func(string) string
}

// Service is a built service: Run serves until ctx is done; Ready reports
// readiness for /readyz.
type Service interface {
	Run(ctx context.Context) error
	Ready() bool
}

// Main runs the binary named name until SIGINT or SIGTERM: it parses args
// (flags may be added by addFlags), builds the service and runs it. It
// returns the exit code: 0 after a requested stop, 1 on failure, 2 for bad
// flags.
func Main(name string, args []string, getenv func(string) string, stderr io.Writer,
	addFlags func(*flag.FlagSet), build func(ctx context.Context, env *Env) (Service, error)) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := Run(ctx, name, args, getenv, stderr, addFlags, build)
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
func Run(ctx context.Context, name string, args []string, getenv func(string) string, stderr io.Writer,
	addFlags func(*flag.FlagSet), build func(ctx context.Context, env *Env) (Service, error)) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	getenv, err := WithSecretFiles(getenv, SecretEnvs()...)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := RegisterFlags(fs, getenv)
	healthcheck := fs.Bool("healthcheck", false, "probe the running service's /readyz on LANGBOT_HTTP_ADDR and exit 0 if ready (container health check)")
	if addFlags != nil {
		addFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errFlags, err)
	}
	if *healthcheck {
		return Probe(ctx, opts.HTTPAddr)
	}
	return run(ctx, name, *opts, getenv, stderr, build)
}

// RegisterFlags adds the common flags to fs, defaulting to the environment.
func RegisterFlags(fs *flag.FlagSet, getenv func(string) string) *Options {
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
	fs.StringVar(&o.NATS.URL, "nats", env("NATS_URL", nats.DefaultURL), "NATS server URL(s), comma-separated (NATS_URL)")
	fs.StringVar(&o.NATS.User, "nats-user", getenv("NATS_USER"), "NATS user (NATS_USER)")
	o.NATS.Password = getenv("NATS_PASSWORD") // never a flag: it would show in ps
	fs.StringVar(&o.NATS.CredsFile, "nats-creds", getenv("NATS_CREDS"), "NATS credentials file (NATS_CREDS)")
	fs.StringVar(&o.NATS.TLSCA, "nats-tls-ca", getenv("NATS_TLS_CA"), "CA bundle for the NATS server (NATS_TLS_CA)")
	fs.StringVar(&o.NATS.TLSCert, "nats-tls-cert", getenv("NATS_TLS_CERT"), "client certificate (NATS_TLS_CERT)")
	fs.StringVar(&o.NATS.TLSKey, "nats-tls-key", getenv("NATS_TLS_KEY"), "client key (NATS_TLS_KEY)")
	fs.StringVar(&o.Prefix, "prefix", env("LANGBOT_SUBJECT_PREFIX", bus.DefaultPrefix), "subject prefix (LANGBOT_SUBJECT_PREFIX)")
	fs.StringVar(&o.HTTPAddr, "http", env("LANGBOT_HTTP_ADDR", ":8080"), "HTTP address for health, metrics and console (LANGBOT_HTTP_ADDR)")
	fs.IntVar(&o.Replicas, "replicas", envInt("LANGBOT_JS_REPLICAS", 1), "replicas of the service's streams and buckets (LANGBOT_JS_REPLICAS)")
	o.StateKey = getenv("LANGBOT_STATE_KEY") // secret: environment only
	fs.IntVar(&o.Workers, "workers", envInt("LANGBOT_WORKERS", 0), "concurrent invocation handlers (LANGBOT_WORKERS)")
	fs.StringVar(&o.LogLevel, "log-level", env("LANGBOT_LOG_LEVEL", "info"), "debug, info, warn or error (LANGBOT_LOG_LEVEL)")
	return o
}

func run(ctx context.Context, name string, o Options, getenv func(string) string, stderr io.Writer,
	build func(context.Context, *Env) (Service, error)) error {
	level, err := telemetry.ParseLevel(o.LogLevel)
	if err != nil {
		return err
	}
	log := telemetry.NewLogger(stderr, level, name)
	subjects, err := bus.NewSubjects(o.Prefix)
	if err != nil {
		return err
	}
	var kr *bus.Keyring
	if o.StateKey != "" {
		if kr, err = bus.ParseKeyring(o.StateKey); err != nil {
			return err
		}
	}
	tp, err := telemetry.NewTracerProvider(ctx, name, getenv)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}()
	o.NATS.Name = name
	o.NATS.Logger = log
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	nc, err := bus.Connect(cctx, o.NATS)
	cancel()
	if err != nil {
		return err
	}
	defer func() { _ = nc.Drain() }()

	reg := telemetry.NewRegistry()
	env := &Env{Options: o, Conn: nc, Subjects: subjects, Keyring: kr, Logger: log, TracerProvider: tp,
		Registry: reg, Mux: nil, Getenv: getenv}
	var svc Service
	ready := func() error {
		if svc == nil || !svc.Ready() {
			return telemetry.ErrNotReady
		}
		return nil
	}
	env.Mux = telemetry.Mux(reg, ready)
	svc, err = build(ctx, env)
	if err != nil {
		return err
	}
	hs, err := telemetry.Listen(o.HTTPAddr, env.Mux)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	log.Info("started", "http", hs.Addr(), "nats", nc.ConnectedUrlRedacted())
	runErr := svc.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	herr := hs.Shutdown(sctx)
	if errors.Is(runErr, context.Canceled) {
		runErr = nil
	}
	log.Info("stopped")
	return errors.Join(runErr, herr)
}
