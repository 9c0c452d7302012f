package svcmain_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/svcmain"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWithSecretFiles(t *testing.T) {
	pw := writeFile(t, "pw", "s3cret\n")
	crlf := writeFile(t, "crlf", "k1=abc\r\n")
	empty := writeFile(t, "empty", "\n")
	big := writeFile(t, "big", strings.Repeat("x", 64<<10+1))
	env := map[string]string{"NATS_PASSWORD_FILE": pw, "LANGBOT_STATE_KEY_FILE": crlf, "OTHER": "o"}
	get, err := svcmain.WithSecretFiles(func(k string) string { return env[k] }, svcmain.SecretEnvs()...)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"NATS_PASSWORD": "s3cret", "LANGBOT_STATE_KEY": "k1=abc", "LANGBOT_CONSOLE_KEY": "", "OTHER": "o"} {
		if got := get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}

	for name, bad := range map[string]map[string]string{
		"both set":    {"NATS_PASSWORD": "x", "NATS_PASSWORD_FILE": pw},
		"missing":     {"NATS_PASSWORD_FILE": filepath.Join(t.TempDir(), "none")},
		"empty":       {"LANGBOT_CONSOLE_KEY_FILE": empty},
		"over 64 KiB": {"LANGBOT_STATE_KEY_FILE": big},
	} {
		_, err := svcmain.WithSecretFiles(func(k string) string { return bad[k] }, svcmain.SecretEnvs()...)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "xxxx") {
			t.Errorf("%s: error shows the content: %v", name, err)
		}
		if !strings.Contains(err.Error(), "_FILE") {
			t.Errorf("%s: error does not name the variable: %v", name, err)
		}
	}
}

func TestProbe(t *testing.T) {
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	// ":port" and "0.0.0.0:port" (how LANGBOT_HTTP_ADDR is written) are
	// probed over loopback.
	for _, addr := range []string{":" + port, "0.0.0.0:" + port, "127.0.0.1:" + port} {
		if err := svcmain.Probe(context.Background(), addr); err != nil {
			t.Errorf("Probe(%s) = %v", addr, err)
		}
	}
	ready = false
	if err := svcmain.Probe(context.Background(), ":"+port); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("not ready: Probe = %v", err)
	}
	if err := svcmain.Probe(context.Background(), "no-port"); err == nil {
		t.Error("bad address accepted")
	}
}

// TestRunSecretFilesAndHealthcheck runs a service whose secrets come from
// files, then probes it with -healthcheck as a container runtime would.
func TestRunSecretFilesAndHealthcheck(t *testing.T) {
	srv := bustest.NewServer(t)
	keyFile := writeFile(t, "state-key", "k1=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n")
	consoleFile := writeFile(t, "console-key", "console-from-file\n")
	env := map[string]string{"NATS_URL": srv.URL(), "LANGBOT_HTTP_ADDR": "127.0.0.1:0",
		"LANGBOT_STATE_KEY_FILE": keyFile, "LANGBOT_CONSOLE_KEY_FILE": consoleFile}
	getenv := func(k string) string { return env[k] }
	var logs bustest.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- svcmain.Run(ctx, svcmain.Binary{Name: "fake",
			Build: func(ctx context.Context, e *svcmain.Env) (svcmain.Service, error) {
				if e.Keyring == nil {
					return nil, errors.New("state key file not read")
				}
				if got := e.Getenv("LANGBOT_CONSOLE_KEY"); got != "console-from-file" {
					return nil, errors.New("console key file not read")
				}
				return &fakeService{env: e, stopped: make(chan struct{})}, nil
			}}, nil, getenv, &logs)
	}()
	addr := startedAddr(t, &logs)

	probeEnv := map[string]string{"LANGBOT_HTTP_ADDR": addr}
	mustNotBuild := func(context.Context, *svcmain.Env) (svcmain.Service, error) {
		return nil, errors.New("healthcheck must not build the service")
	}
	var out bustest.LogBuffer
	if code := svcmain.Main(svcmain.Binary{Name: "fake", Build: mustNotBuild}, []string{"-healthcheck"}, func(k string) string { return probeEnv[k] }, &out); code != 0 {
		t.Fatalf("healthcheck of a ready service: exit %d: %s", code, out.String())
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
	if code := svcmain.Main(svcmain.Binary{Name: "fake", Build: mustNotBuild}, []string{"-healthcheck"}, func(k string) string { return probeEnv[k] }, &out); code != 1 {
		t.Fatalf("healthcheck of a stopped service: exit %d, want 1", code)
	}
}
