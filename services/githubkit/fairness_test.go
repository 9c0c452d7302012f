package githubkit_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// blockingGitHub answers nothing until released: every request is counted
// on arrival and held.
type blockingGitHub struct {
	srv     *httptest.Server
	arrived atomic.Int64
	release chan struct{}
	once    sync.Once
}

func newBlockingGitHub(t *testing.T) *blockingGitHub {
	b := &blockingGitHub{release: make(chan struct{})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.arrived.Add(1)
		select {
		case <-b.release:
		case <-r.Context().Done():
		}
		http.Error(w, `{"message":"slow"}`, http.StatusBadGateway)
	}))
	t.Cleanup(func() { b.open(); b.srv.Close() })
	return b
}

func (b *blockingGitHub) open() { b.once.Do(func() { close(b.release) }) }

// TestSlowInstallationDoesNotStarveOthers is issue 19's fairness item:
// installation A's GitHub API URL points at a server that never answers and
// A floods commands. A holds at most its cap of GitHub calls (2 here) and as
// many waiters; the rest of A's commands are answered "busy"; B's command
// is served while every request of A is still held by the slow server.
// Before: A's commands took all 8 workers and B's command waited behind
// them (timed out).
func TestSlowInstallationDoesNotStarveOthers(t *testing.T) {
	const workers, perInst, flood = 8, 2, 16
	h := newHarness(t)
	h.start(githubkit.Config{Workers: workers, InvocationTimeout: 2 * time.Minute, GitHubTimeout: 2 * time.Minute,
		Limits: ghclient.Limits{PerInstallation: perInst, SlotWait: 100 * time.Millisecond, OtherHostTimeout: 2 * time.Minute}}, nil)
	slow := newBlockingGitHub(t)
	a := newInst(t, "a", map[string]any{"language": "en_US", "github_api_url": slow.srv.URL})
	b := newInst(t, "b", map[string]any{"language": "en_US", "github_api_url": h.fake.URL})
	h.attach(a, true)
	h.attach(b, true)

	var busy, done atomic.Int64
	var wg sync.WaitGroup
	for range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text, err := h.cmdID(a, h.newID(), "repo octocat/Hello-World")
			// refused by the GitHub cap (busy text) or by the runner's
			// per-installation cap (503): either way only A is refused
			if (err == nil && strings.Contains(text, "as many GitHub requests in progress")) || (err != nil && strings.Contains(err.Error(), "503")) {
				busy.Add(1)
			}
			done.Add(1)
		}()
	}
	// every command of A beyond its cap is answered busy, not queued
	bustest.EventuallyWithin(t, time.Minute, "A's excess commands answered busy", func() bool { return busy.Load() == flood-perInst })
	bustest.EventuallyWithin(t, time.Minute, "A's capped calls held by the slow server", func() bool { return slow.arrived.Load() == perInst })
	if got := h.cmd(b, "repo octocat/Hello-World"); !strings.Contains(got, "octocat/Hello-World") {
		t.Fatalf("B: %q", got)
	}
	// B was served while A's calls were all still held
	if n, d := slow.arrived.Load(), done.Load(); n != perInst || d != flood-perInst {
		t.Fatalf("after B: slow server saw %d requests (want %d), %d of A's commands done (want %d)", n, perInst, d, flood-perInst)
	}
	slow.open()
	wg.Wait()
	t.Logf("FIGURE A: %d commands, %d held by the slow host (cap %d), %d refused (busy or 503); B served with all %d held; workers %d",
		flood, slow.arrived.Load(), perInst, busy.Load(), perInst, workers)
}

// TestBreakerOpensAndRecovers: after BreakerFailures consecutive 5xx of a
// host, its calls are answered with the translated breaker text without a
// request; after the cool-down one probe goes out, and a success closes
// the breaker (controlled clock).
func TestBreakerOpensAndRecovers(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{Limits: ghclient.Limits{BreakerFailures: 3, BreakerCooldown: time.Minute}}, nil)
	var calls atomic.Int64
	var healthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if healthy.Load() {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":1,"full_name":"octocat/Hello-World","html_url":"https://github.com/octocat/Hello-World"}`))
			return
		}
		http.Error(w, `{"message":"down"}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	c := newInst(t, "c", map[string]any{"language": "en_US", "github_api_url": srv.URL})
	zh := newInst(t, "zh", map[string]any{"language": "zh_Hans", "github_api_url": srv.URL})
	h.attach(c, true)
	h.attach(zh, true)
	for i := range 3 {
		if got := h.cmd(c, "repo octocat/Hello-World"); !strings.Contains(got, "500") {
			t.Fatalf("failure %d: %q", i, got)
		}
	}
	open := "requests to it are paused"
	if got := h.cmd(c, "repo octocat/Hello-World"); !strings.Contains(got, open) {
		t.Fatalf("open breaker: %q", got)
	}
	if got := h.cmd(zh, "repo octocat/Hello-World"); !strings.Contains(got, "暂停") {
		t.Fatalf("open breaker (zh_Hans): %q", got)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("open breaker let requests through: %d, want 3", n)
	}
	// cool-down over, the probe fails: open again, one request more
	h.clock.Advance(time.Minute)
	if got := h.cmd(c, "repo octocat/Hello-World"); !strings.Contains(got, "500") {
		t.Fatalf("failed probe: %q", got)
	}
	if got := h.cmd(c, "repo octocat/Hello-World"); !strings.Contains(got, open) || calls.Load() != 4 {
		t.Fatalf("after failed probe: %q, %d requests", got, calls.Load())
	}
	// the host recovers: the next probe closes the breaker
	healthy.Store(true)
	h.clock.Advance(time.Minute)
	for i := range 2 {
		if got := h.cmd(c, "repo octocat/Hello-World"); !strings.Contains(got, "octocat/Hello-World") {
			t.Fatalf("recovered %d: %q", i, got)
		}
	}
	if n := calls.Load(); n != 6 {
		t.Fatalf("requests %d, want 6", n)
	}
}
