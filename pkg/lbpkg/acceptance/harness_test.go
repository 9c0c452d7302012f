package acceptance_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// stack is the three real services on an embedded NATS server, with their
// logs and spans kept for PK-6.
type stack struct {
	t     testing.TB
	srv   *bustest.Server
	nc    *nats.Conn // a host-side connection for direct invocations
	js    jetstream.JetStream
	gh    *fakegithub.Server
	logs  *bustest.LogBuffer
	spans *tracetest.SpanRecorder
	tp    *sdktrace.TracerProvider

	mu      sync.Mutex
	runs    map[string]*running
	traffic []*nats.Msg // every message the server carried (PK-6)
}

type running struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

func newStack(t testing.TB) *stack {
	t.Helper()
	srv := bustest.NewServer(t)
	nc := srv.Conn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	gh := fakegithub.New(fakegithub.Options{AutoRepos: true})
	t.Cleanup(gh.Close)
	s := &stack{t: t, srv: srv, nc: nc, js: js, gh: gh, logs: &bustest.LogBuffer{}, spans: rec, tp: tp, runs: map[string]*running{}}
	sniff := srv.Conn(t)
	if _, err := sniff.Subscribe(">", func(m *nats.Msg) {
		s.mu.Lock()
		s.traffic = append(s.traffic, m)
		s.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := sniff.Flush(); err != nil {
		t.Fatal(err)
	}
	return s
}

// messages returns what the server carried so far.
func (s *stack) messages() []*nats.Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*nats.Msg(nil), s.traffic...)
}

// startAll runs one replica of each service, each on its own connection.
func (s *stack) startAll() {
	s.t.Helper()
	for _, p := range []string{githubkit.Plugin, takeover.Plugin, schenotify.Plugin} {
		s.start(p)
	}
}

// start runs plugin's service until cleanup or stop.
func (s *stack) start(plugin string) {
	s.t.Helper()
	key, err := bus.NewKeyString("k1")
	if err != nil {
		s.t.Fatal(err)
	}
	kr, err := bus.ParseKeyring(key)
	if err != nil {
		s.t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("service", plugin)
	nc := s.srv.Conn(s.t)
	reg := prometheus.NewRegistry()
	type service interface {
		Run(context.Context) error
		Ready() bool
	}
	var svc service
	switch plugin {
	case githubkit.Plugin:
		svc, err = githubkit.New(githubkit.Config{Replicas: 1, AllowHTTP: true, AllowPrivateNetworks: true, DefaultAPIURL: s.gh.URL,
			HostTimeout: 5 * time.Second, GitHubTimeout: 5 * time.Second, MinPollInterval: 1, InvocationTimeout: 10 * time.Second},
			bus.Deps{Conn: nc, Keyring: kr, Logger: log, Registerer: reg, TracerProvider: s.tp})
	case takeover.Plugin:
		svc, err = takeover.New(takeover.Config{Replicas: 1, HostTimeout: 5 * time.Second, MinTakeoverTimeout: time.Second,
			NoticeRetry: []time.Duration{50 * time.Millisecond}},
			bus.Deps{Conn: nc, Keyring: kr, Logger: log, Registerer: reg, TracerProvider: s.tp})
	case schenotify.Plugin:
		svc, err = schenotify.New(schenotify.Config{Replicas: 1, DefaultZone: "UTC", SweepDelay: -1, SweepInterval: time.Hour,
			HostTimeout: 5 * time.Second, MinEvery: time.Second, InvocationTimeout: 10 * time.Second,
			Retry: schenotify.RetryPolicy{Cap: 4 * time.Second}},
			bus.Deps{Conn: nc, Logger: log, Registerer: reg, TracerProvider: s.tp})
	default:
		s.t.Fatalf("unknown plugin %q", plugin)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- svc.Run(ctx) }()
	s.mu.Lock()
	s.runs[plugin] = r
	s.mu.Unlock()
	s.t.Cleanup(func() { s.stopRun(plugin, r) })
	deadline := time.Now().Add(30 * time.Second)
	for !svc.Ready() {
		select {
		case err := <-r.done:
			s.t.Fatalf("%s: Run: %v", plugin, err)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s not ready", plugin)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop stops plugin's service and waits for Run to return.
func (s *stack) stop(plugin string) {
	s.mu.Lock()
	r := s.runs[plugin]
	s.mu.Unlock()
	if r != nil {
		s.stopRun(plugin, r)
	}
}

func (s *stack) stopRun(plugin string, r *running) {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				s.t.Errorf("%s: Run returned %v", plugin, err)
			}
		case <-time.After(60 * time.Second):
			s.t.Errorf("%s: Run did not return", plugin)
		}
	})
}

// spanAttributes returns every attribute value of every recorded span.
func (s *stack) spanAttributes() []string {
	var out []string
	for _, sp := range s.spans.Ended() {
		for _, a := range sp.Attributes() {
			out = append(out, string(a.Key)+"="+a.Value.String())
		}
	}
	return out
}
