package svcmain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/svcmain"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

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
	var logs lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	var svc *fakeService
	extra := ""
	done := make(chan error, 1)
	go func() {
		done <- svcmain.Run(ctx, "fake", []string{"-replicas", "3"}, func(k string) string { return env[k] }, &logs,
			func(fs *flag.FlagSet) { fs.StringVar(&extra, "extra", "", "") },
			func(ctx context.Context, e *svcmain.Env) (svcmain.Service, error) {
				if e.Options.Replicas != 3 || e.Keyring != nil || e.Subjects.Prefix != "langbot" {
					return nil, errors.New("options not applied")
				}
				svc = &fakeService{env: e, stopped: make(chan struct{})}
				return svc, nil
			})
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
func startedAddr(t *testing.T, logs *lockedBuffer) string {
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
	err := svcmain.Run(context.Background(), "x", nil, func(k string) string { return env[k] }, &out, nil, build)
	if err == nil || !strings.Contains(err.Error(), "keyring") {
		t.Fatalf("bad key: %v", err)
	}
	if code := svcmain.Main("x", []string{"-no-such-flag"}, func(string) string { return "" }, &out, nil, build); code != 2 {
		t.Fatalf("bad flag exit = %d", code)
	}
	if !strings.Contains(out.String(), "LANGBOT_SUBJECT_PREFIX") {
		t.Fatal("usage does not name the environment variables")
	}
}
