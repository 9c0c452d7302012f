package httpserve_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/httpserve"
)

func listen(t *testing.T, h http.Handler, lim httpserve.Limits) *httpserve.Server {
	t.Helper()
	s, err := httpserve.Listen("127.0.0.1:0", h, lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

// readAll is a handler that reads the whole body, as the webhook
// receiver and the console do.
var readAll = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return
	}
	_, _ = io.WriteString(w, "ok")
})

// TestSlowBodiesCutOffAndBounded: connections that each send most of a
// maximum-size body and stall are closed once the read timeout passes,
// and the server holds at most its body budget: those that do not fit
// are refused (503) before a byte of their body is read.
func TestSlowBodiesCutOffAndBounded(t *testing.T) {
	const conns, maxBody, sent = 64, 1 << 20, 1_000_000
	const budget = 4 * maxBody
	s := listen(t, readAll, httpserve.Limits{ReadTimeout: time.Second, MaxBody: maxBody, BodyBudget: budget})
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	quit, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > base && m.HeapInuse-base > peak.Load() {
				peak.Store(m.HeapInuse - base)
			}
			select {
			case <-quit:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	body := []byte(strings.Repeat("x", sent))
	var open atomic.Int64
	var mu sync.Mutex
	statuses := map[int]int{}
	for range conns {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		open.Add(1)
		go func() {
			_, _ = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", maxBody)
			_, _ = c.Write(body) // and stall
		}()
		go func() {
			defer open.Add(-1)
			status := 0
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				status = resp.StatusCode
				resp.Body.Close()
			}
			_ = c.SetReadDeadline(time.Now().Add(bustest.WaitTimeout))
			_, _ = c.Read(make([]byte, 1))
			mu.Lock()
			statuses[status]++
			mu.Unlock()
		}()
	}
	bustest.Eventually(t, "every stalled connection closed", func() bool { return open.Load() == 0 })
	close(quit)
	<-sampled
	t.Logf("%d stalled connections: answers %v, heap peak +%.1f MB, body bytes peak %.1f MB", conns, statuses,
		float64(peak.Load())/1e6, float64(s.Budget().Peak())/1e6)
	if got := s.Budget().Peak(); got > budget || got == 0 {
		t.Fatalf("body bytes admitted at once peaked at %d; want (0, %d]", got, budget)
	}
	// How many are refused depends on how many arrive while the first
	// ones hold the budget: on a loaded machine some arrive after the
	// read timeout freed it and are admitted in turn. Each connection is
	// either admitted and cut (400) or refused (503), the budget's worth
	// at least are admitted, and the rest of the first wave are refused.
	admitted, refused := statuses[http.StatusBadRequest], statuses[http.StatusServiceUnavailable]
	if admitted+refused != conns || admitted < budget/maxBody || refused == 0 {
		t.Fatalf("answers %v: want every one 400 (cut) or 503 (refused), at least %d cut and some refused", statuses, budget/maxBody)
	}
	if limit := uint64(conns) * maxBody / 2; peak.Load() > limit {
		t.Fatalf("heap in use grew by %d with %d stalled connections; want below %d", peak.Load(), conns, limit)
	}
	if got := s.Budget().InFlight(); got != 0 {
		t.Fatalf("%d body bytes still held after every connection closed", got)
	}
}

// TestDeclaredTooLargeRefusedUnread: a body declared over MaxBody is
// refused 413 before it is read.
func TestDeclaredTooLargeRefusedUnread(t *testing.T) {
	s := listen(t, readAll, httpserve.Limits{MaxBody: 1 << 10})
	resp, err := http.Post("http://"+s.Addr()+"/", "text/plain", strings.NewReader(strings.Repeat("x", 2<<10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	// a body of unknown length is cut at MaxBody
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(strings.Repeat("x", 2<<10)))
		pw.Close()
	}()
	resp, err = http.Post("http://"+s.Addr()+"/", "text/plain", pr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("chunked body over MaxBody: status %d, want 400 from the handler's cut read", resp.StatusCode)
	}
}

// TestIdleConnectionClosed: a keep-alive connection that sends no next
// request is closed after IdleTimeout.
func TestIdleConnectionClosed(t *testing.T) {
	s := listen(t, readAll, httpserve.Limits{IdleTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = c.SetReadDeadline(time.Now().Add(bustest.WaitTimeout))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: %v, want closed by the server (EOF)", err)
	}
}

// TestStreamOutlivesTimeouts: a response under Stream keeps streaming past
// the read and write timeouts, its request context alive, while each
// write still has a deadline.
func TestStreamOutlivesTimeouts(t *testing.T) {
	const events = 12
	ended := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		renew := httpserve.Stream(w, r)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range events {
			renew()
			if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
				ended <- err
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				ended <- r.Context().Err()
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		ended <- nil
	})
	s := listen(t, h, httpserve.Limits{ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond})
	resp, err := http.Get("http://" + s.Addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "data: "); got != events {
		t.Fatalf("%d of %d events arrived (%q)", got, events, b)
	}
	if err := <-ended; err != nil {
		t.Fatalf("the stream ended early: %v", err)
	}
}
