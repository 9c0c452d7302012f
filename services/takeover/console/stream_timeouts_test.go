package console_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/services/takeover/console"
)

// TestLiveStreamOutlivesServerTimeouts: the live feed, served by the
// project's HTTP server (httpserve, read and write timeouts of 150 ms
// here), stays open and keeps delivering long after both timeouts passed:
// it lifts the read deadline and renews the write deadline per write.
// Without that, the read timeout ends the stream's request context.
func TestLiveStreamOutlivesServerTimeouts(t *testing.T) {
	h := newHarness(t)
	b, sc := h.install("timeouts", cfg)
	c, err := console.New(console.Config{Key: h.keyStr, Heartbeat: 20 * time.Millisecond}, h.svc.Console())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", c)
	srv, err := httpserve.Listen("127.0.0.1:0", mux, httpserve.Limits{ReadTimeout: 150 * time.Millisecond, WriteTimeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	req, _ := http.NewRequest("GET", "http://"+srv.Addr()+"/console/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+h.token(sc, "alice", time.Hour))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", res.StatusCode)
	}
	lines := bufio.NewScanner(res.Body)
	// 25 heartbeats of 20 ms: more than three times either timeout
	for beats := 0; beats < 25; {
		if !lines.Scan() {
			t.Fatalf("the stream ended after %d heartbeats: %v", beats, lines.Err())
		}
		if lines.Text() == ": keepalive" {
			beats++
		}
	}
	h.say(b, cfg, "person", "42", "42", "Alice", "I need a human")
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "event: ") && lines.Text() != "event: hello" {
			return // a live event after the timeouts
		}
	}
	t.Fatalf("the stream ended before a live event: %v", lines.Err())
}
