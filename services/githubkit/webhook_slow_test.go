package githubkit_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// slowBodies opens n connections to the receiver at url that each declare
// a full-size delivery body, send most of it and stall. It returns when
// the server has closed every connection, with the statuses it answered
// (0: closed without an answer), the peak of the heap in use above the
// figure before, and how long the last connection stayed open. Each
// sample is taken after a collection: what the receiver holds, not the
// garbage the process (the other tests' servers winding down, the race
// detector) left since the last collection, which a loaded machine
// collects late.
func slowBodies(t *testing.T, addr, path string, n int) (statuses map[int]int, heapPeak uint64, longest time.Duration) {
	t.Helper()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			if m.HeapInuse > base && m.HeapInuse-base > peak.Load() {
				peak.Store(m.HeapInuse - base)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	const declared, sent = githubkit.WebhookMaxBody, 1_000_000
	chunk := []byte(`{"pad":"` + strings.Repeat("x", sent-len(`{"pad":"`)))
	var mu sync.Mutex
	statuses = map[int]int{}
	var open atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		open.Add(1)
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\n"+
			"X-GitHub-Delivery: slow-%d\r\nX-Hub-Signature-256: sha256=00\r\nContent-Length: %d\r\n\r\n", path, i, declared)
		wg.Add(2)
		go func() { // send most of the body, then stall (never close)
			defer wg.Done()
			if _, err := c.Write([]byte(head)); err != nil {
				return
			}
			_, _ = c.Write(chunk)
		}()
		go func() { // the answer, if any, then the close
			defer wg.Done()
			defer open.Add(-1)
			status := 0
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				status = resp.StatusCode
				resp.Body.Close()
			}
			// the server closes the connection: a read ends
			_ = c.SetReadDeadline(time.Now().Add(bustest.WaitTimeout))
			_, _ = c.Read(make([]byte, 1))
			mu.Lock()
			statuses[status]++
			if d := time.Since(start); d > longest {
				longest = d
			}
			mu.Unlock()
		}()
	}
	t.Cleanup(func() { // the figures, also when the wait below fails
		t.Logf("%d stalled connections: %d still open after %v, heap peak +%.1f MB", n, open.Load(),
			time.Since(start).Round(time.Millisecond), float64(peak.Load())/1e6)
	})
	bustest.Eventually(t, "every stalled connection closed by the server", func() bool { return open.Load() == 0 })
	close(stopSampling)
	<-sampled
	wg.Wait()
	return statuses, peak.Load(), longest
}

// TestWebhookSlowBodiesCutOffAndBounded: many connections that each send
// most of a maximum-size delivery body and stall are answered and closed
// within the read timeout, and the receiver holds at most its body
// budget, wherever it is mounted (here a bare httptest server with no
// timeouts of its own). Issue 33: before, such connections were never
// closed and each held its body (150 raised githubkit from 28 MB to 200 MB).
func TestWebhookSlowBodiesCutOffAndBounded(t *testing.T) {
	const conns = 64
	const budget = 4 * githubkit.WebhookMaxBody
	// The read timeout is long enough for every connection to arrive while
	// the first four hold the budget: with a short one, a loaded machine's
	// late connections were admitted in waves as the earlier ones were cut
	// off, and their uncollected bodies (13 admitted, +48 MB) read as a
	// heap the budget did not bound.
	e := newHookEnv(t, githubkit.Config{WebhookBodyBudget: budget, WebhookReadTimeout: 2 * time.Second})
	e.cmd(e.a, "sub "+hw)
	id, _ := e.hook(hw)
	bare := httptest.NewServer(e.svc.WebhookHandler()) // no server timeouts at all
	t.Cleanup(bare.Close)
	statuses, heap, longest := slowBodies(t, bare.Listener.Addr().String(), githubkit.WebhookPath+id, conns)
	t.Logf("%d stalled connections: answers %v, all closed after %v, heap peak +%.1f MB, body bytes peak %.1f MB (budget %.1f MB)",
		conns, statuses, longest.Round(time.Millisecond), float64(heap)/1e6, float64(e.svc.WebhookBodies().Peak())/1e6, float64(budget)/1e6)
	if got := e.svc.WebhookBodies().Peak(); got > budget {
		t.Fatalf("body bytes held at once peaked at %d, over the budget %d", got, budget)
	}
	if statuses[http.StatusRequestTimeout] == 0 || statuses[http.StatusServiceUnavailable] == 0 ||
		statuses[http.StatusRequestTimeout]+statuses[http.StatusServiceUnavailable] != conns {
		t.Fatalf("answers %v: want 408 (admitted, cut off at the read timeout) and 503 (refused before reading) for all %d", statuses, conns)
	}
	// every connection would hold about 1 MB unbounded; the budget holds
	// four, and the read buffers are at most twice the body
	if limit := uint64(conns) * githubkit.WebhookMaxBody / 2; heap > limit {
		t.Fatalf("heap in use grew by %d bytes with %d stalled connections; want below %d (the budget bounds it)", heap, conns, limit)
	}
}
