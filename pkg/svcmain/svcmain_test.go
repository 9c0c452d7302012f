package svcmain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/svcmain"
)

type fakeService struct {
	env     *svcmain.Env
	stopped chan struct{}
}

func (f *fakeService) Run(ctx context.Context) error {
	<-ctx.Done()
	close(f.stopped)
	return nil
}

func (f *fakeService) Ready() bool { return f.env.Conn.IsConnected() }

func TestRunServesAndStops(t *testing.T) {
	srv := bustest.NewServer(t)
	env := map[string]string{"NATS_URL": srv.URL(), "LANGBOT_HTTP_ADDR": "127.0.0.1:0", "LANGBOT_STATE_KEY": "", "LANGBOT_LOG_LEVEL": "info"}
	var logs bustest.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	var svc *fakeService
	extra := ""
	done := make(chan error, 1)
	go func() {
		done <- svcmain.Run(ctx, svcmain.Binary{Name: "fake",
			Flags: func(fs *flag.FlagSet, _ func(string) string) { fs.StringVar(&extra, "extra", "", "") },
			Build: func(ctx context.Context, e *svcmain.Env) (svcmain.Service, error) {
				if e.Options.Replicas != 3 || e.Keyring != nil || e.Subjects.Prefix != "langbot" {
					return nil, errors.New("options not applied")
				}
				svc = &fakeService{env: e, stopped: make(chan struct{})}
				return svc, nil
			}}, []string{"-replicas", "3"}, func(k string) string { return env[k] }, &logs)
	}()
	addr := startedAddr(t, &logs)
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz = %d %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	select {
	case <-svc.stopped:
	default:
		t.Fatal("service was not stopped")
	}
}

// startedAddr waits for Run's start log and returns the HTTP address in it.
func startedAddr(t *testing.T, logs *bustest.LogBuffer) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "started" {
				if addr, _ := rec["http"].(string); addr != "" {
					return addr
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no start log; logs:\n%s", logs.String())
	return ""
}

func TestRunRefusesBadKeyAndFlags(t *testing.T) {
	build := func(context.Context, *svcmain.Env) (svcmain.Service, error) { return nil, errors.New("must not build") }
	var out bytes.Buffer
	env := map[string]string{"LANGBOT_STATE_KEY": "not-a-keyring"}
	b := svcmain.Binary{Name: "x", Build: build}
	err := svcmain.Run(context.Background(), b, nil, func(k string) string { return env[k] }, &out)
	if err == nil || !strings.Contains(err.Error(), "keyring") {
		t.Fatalf("bad key: %v", err)
	}
	if code := svcmain.Main(b, []string{"-no-such-flag"}, func(string) string { return "" }, &out); code != 2 {
		t.Fatalf("bad flag exit = %d", code)
	}
	if !strings.Contains(out.String(), "LANGBOT_SUBJECT_PREFIX") {
		t.Fatal("usage does not name the environment variables")
	}
}

// partService stops on ctx or fails on demand, and notes when Run returned.
type partService struct {
	name  string
	env   *svcmain.Env
	fail  chan error
	order *bustest.LogBuffer
}

func (p *partService) Run(ctx context.Context) error {
	defer p.order.Write([]byte("run " + p.name + " returned;"))
	select {
	case <-ctx.Done():
		return nil
	case err := <-p.fail:
		return err
	}
}

func (p *partService) Ready() bool { return p.env.Conn.IsConnected() }

// TestRunPartsOrder runs two parts with an embedding: each part gets its
// own connection as the embedding says, both share one mux, and when one
// fails the other is stopped, then the embedding's Stop runs last, after
// both connections are closed.
func TestRunPartsOrder(t *testing.T) {
	srv := bustest.NewServer(t)
	var order bustest.LogBuffer
	var logs bustest.LogBuffer
	svcs := map[string]*partService{}
	var conns []*svcmain.Env
	build := func(name string) func(context.Context, *svcmain.Env) (svcmain.Service, error) {
		return func(_ context.Context, env *svcmain.Env) (svcmain.Service, error) {
			if env.Getenv("SECRET_FROM_EMBEDDING") != "yes" {
				return nil, errors.New("the embedding's getenv is not the services'")
			}
			s := &partService{name: name, env: env, fail: make(chan error, 1), order: &order}
			svcs[name] = s
			conns = append(conns, env)
			return s, nil
		}
	}
	started := make(chan struct{})
	emb := &svcmain.Embedding{Start: func(_ context.Context, o *svcmain.Options, _ func(string) string, _ *slog.Logger) (*svcmain.Started, error) {
		o.HTTPAddr = "127.0.0.1:0"
		close(started)
		return &svcmain.Started{
			Conns:  map[string]bus.ConnConfig{"a": {URL: srv.URL()}, "b": {URL: srv.URL()}},
			Getenv: func(k string) string { return map[string]string{"SECRET_FROM_EMBEDDING": "yes"}[k] },
			Stop: func() {
				for _, e := range conns {
					if !e.Conn.IsClosed() {
						order.Write([]byte("a connection still open;"))
					}
				}
				order.Write([]byte("stop;"))
			},
		}, nil
	}}
	done := make(chan error, 1)
	go func() {
		done <- svcmain.RunParts(context.Background(), "multi", nil, func(string) string { return "" }, &logs,
			[]svcmain.Binary{{Name: "a", Build: build("a")}, {Name: "b", Build: build("b")}}, emb)
	}()
	<-started
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), `"msg":"started"`) {
		if time.Now().After(deadline) {
			t.Fatalf("not started; logs:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if conns[0].Conn == conns[1].Conn || conns[0].Mux != conns[1].Mux || conns[0].Registry != conns[1].Registry {
		t.Error("want one connection per part and one mux and registry for all")
	}
	boom := errors.New("boom")
	svcs["a"].fail <- boom
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Errorf("RunParts = %v, want the failure of a", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b was not stopped when a failed")
	}
	got := order.String()
	if !strings.HasSuffix(got, "stop;") || strings.Contains(got, "still open") || strings.Count(got, "returned") != 2 {
		t.Errorf("order %q: want both runs returned, connections closed, then stop", got)
	}
}

// TestRetentionSetting: LANGBOT_RETENTION (or -retention) reaches the
// service as a duration, off when unset; a malformed or negative value
// stops the binary before anything is built.
func TestRetentionSetting(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "0": 0, " 720h ": 720 * time.Hour, "30d": 30 * 24 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := svcmain.ParseRetention(in); err != nil || got != want {
			t.Errorf("ParseRetention(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	build := func(context.Context, *svcmain.Env) (svcmain.Service, error) { return nil, errors.New("must not build") }
	for _, bad := range []string{"soon", "-1h", "3 days", "1.5d"} {
		env := map[string]string{"LANGBOT_RETENTION": bad}
		var out bytes.Buffer
		err := svcmain.Run(context.Background(), svcmain.Binary{Name: "x", Build: build}, nil, func(k string) string { return env[k] }, &out)
		if !errors.Is(err, svcmain.ErrRetention) {
			t.Errorf("LANGBOT_RETENTION=%q: %v, want %v", bad, err, svcmain.ErrRetention)
		}
	}
	// the flag overrides the environment and reaches the service
	srv := bustest.NewServer(t)
	env := map[string]string{"NATS_URL": srv.URL(), "LANGBOT_HTTP_ADDR": "127.0.0.1:0", "LANGBOT_RETENTION": "soon"}
	got := make(chan time.Duration, 1)
	err := svcmain.Run(context.Background(), svcmain.Binary{Name: "x",
		Build: func(_ context.Context, e *svcmain.Env) (svcmain.Service, error) {
			got <- e.Options.Retention
			return nil, errors.New("stop here")
		}}, []string{"-retention", "30d"}, func(k string) string { return env[k] }, io.Discard)
	if err == nil || err.Error() != "stop here" {
		t.Fatalf("run: %v", err)
	}
	if d := <-got; d != 30*24*time.Hour {
		t.Fatalf("service got retention %v, want 720h", d)
	}
}

// stuckService ignores its context: a handler that never returns.
type stuckService struct {
	entered, release chan struct{}
}

func (s *stuckService) Run(ctx context.Context) error {
	<-ctx.Done()
	close(s.entered)
	<-s.release
	return nil
}

func (s *stuckService) Ready() bool { return true }

// TestStopBoundedWhileServiceStuck is issue 19's drain item: a stopping
// service must exit within a bound shorter than the pod's grace period
// even when its work does not end. Before, Run waited for every service
// without bound. Measured as an ordering: Run returns while the service
// still blocks.
func TestStopBoundedWhileServiceStuck(t *testing.T) {
	srv := bustest.NewServer(t)
	env := map[string]string{"NATS_URL": srv.URL(), "LANGBOT_HTTP_ADDR": "127.0.0.1:0", "LANGBOT_DRAIN_TIMEOUT": "1s"}
	var logs bustest.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	svc := &stuckService{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(svc.release)
	done := make(chan error, 1)
	go func() {
		done <- svcmain.Run(ctx, svcmain.Binary{Name: "stuck",
			Build: func(context.Context, *svcmain.Env) (svcmain.Service, error) { return svc, nil }},
			nil, func(k string) string { return env[k] }, &logs)
	}()
	startedAddr(t, &logs)
	cancel()
	<-svc.entered
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "drain timeout") {
			t.Fatalf("Run = %v, want the drain timeout named", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return while the service was stuck")
	}
	select {
	case <-svc.release:
		t.Fatal("released before Run returned")
	default: // the service still blocks: Run returned first
	}
}
