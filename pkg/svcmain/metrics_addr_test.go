package svcmain_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/svcmain"
)

// Issue 19: with LANGBOT_METRICS_ADDR, /metrics, /healthz and /readyz
// answer on that address and 404 on the console's (LANGBOT_HTTP_ADDR),
// whose own routes stay there; without it, everything is on the one
// listener, as before.
func TestMetricsOnOwnAddr(t *testing.T) {
	srv := bustest.NewServer(t)
	for _, own := range []bool{true, false} {
		name := map[bool]string{true: "own", false: "shared"}[own]
		t.Run(name, func(t *testing.T) {
			env := map[string]string{"NATS_URL": srv.URL(), "LANGBOT_HTTP_ADDR": "127.0.0.1:0"}
			if own {
				env["LANGBOT_METRICS_ADDR"] = "127.0.0.1:0"
			}
			var logs bustest.LogBuffer
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- svcmain.Run(ctx, svcmain.Binary{Name: "fake",
					Build: func(_ context.Context, e *svcmain.Env) (svcmain.Service, error) {
						e.Mux.HandleFunc("GET /console/", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("console")) })
						return &fakeService{env: e, stopped: make(chan struct{})}, nil
					}}, nil, func(k string) string { return env[k] }, &logs)
			}()
			defer func() {
				cancel()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("Run = %v", err)
					}
				case <-time.After(15 * time.Second):
					t.Error("Run did not return")
				}
			}()
			httpAddr := startedAddr(t, &logs)
			metricsAddr := httpAddr
			if own {
				metricsAddr = startedField(t, &logs, "metrics")
				if metricsAddr == httpAddr || metricsAddr == "" {
					t.Fatalf("metrics address %q, console %q", metricsAddr, httpAddr)
				}
			}
			code := func(addr, path string) int {
				resp, err := http.Get("http://" + addr + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			bustest.Eventually(t, "ready", func() bool { return code(metricsAddr, "/readyz") == 200 })
			for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
				if got := code(metricsAddr, path); got != 200 {
					t.Errorf("%s on the metrics address: %d, want 200", path, got)
				}
				if want := map[bool]int{true: 404, false: 200}[own]; code(httpAddr, path) != want {
					t.Errorf("%s on the console's address: %d, want %d", path, code(httpAddr, path), want)
				}
			}
			if got := code(httpAddr, "/console/"); got != 200 {
				t.Errorf("/console/ on the console's address: %d", got)
			}
			if own && code(metricsAddr, "/console/") != 404 {
				t.Error("/console/ served on the metrics address")
			}
		})
	}
}

// startedField returns a field of Run's start log (the one that names the
// HTTP address; a service may log "started" too).
func startedField(t *testing.T, logs *bustest.LogBuffer, field string) string {
	t.Helper()
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "started" && rec["http"] != nil {
			s, _ := rec[field].(string)
			return s
		}
	}
	return ""
}
