package githubkit_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// The binary's one line, svcmain.Main over Binary(), runs the service:
// its own flags parse beside the common ones, /readyz follows the runner's
// readiness, the log lines carry the service name once, and a stop is
// clean.
func TestBinaryRunsUnderSvcmain(t *testing.T) {
	srv := bustest.NewServer(t)
	key, err := bus.NewKeyString("k1")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NATS_URL": srv.URL(), "LANGBOT_HTTP_ADDR": "127.0.0.1:0", "LANGBOT_STATE_KEY": key}
	var logs bustest.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- svcmain.Run(ctx, githubkit.Binary(), []string{"-poll-workers", "3", "-github-allow-http"},
			func(k string) string { return env[k] }, &logs)
	}()
	var addr string
	bustest.Eventually(t, "the start log line", func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "started" {
				addr, _ = rec["http"].(string)
			}
		}
		return addr != ""
	})
	bustest.Eventually(t, "/readyz 200", func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Count(line, `"service":`) != 1 || !strings.Contains(line, `"service":"githubkit"`) {
			t.Errorf("log line without exactly one service attribute: %s", line)
		}
		if strings.Contains(line, `"plugin":`) {
			t.Errorf("log line names the plugin a second way: %s", line)
		}
	}
}
