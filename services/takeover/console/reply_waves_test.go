package console_test

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingListener counts the bytes the server reads on each connection,
// by the client's address.
type countingListener struct {
	net.Listener
	mu   sync.Mutex
	read map[string]*atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := &atomic.Int64{}
	l.mu.Lock()
	l.read[c.RemoteAddr().String()] = n
	l.mu.Unlock()
	return &countingConn{Conn: c, n: n}, nil
}

func (l *countingListener) bytesRead(client string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.read[client]; n != nil {
		return n.Load()
	}
	return 0
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestReplyWavesRefusedBeforeRead (issue 33): four waves of twenty 9 MiB
// replies from one operator token to one session. Every reply refused
// (429 rate limited, 503 busy) is refused before its body is read: the
// server reads less than 1 MiB of it. Before, the per-session reply limit
// could be checked only once the body (which names the session) was read:
// 11 of a wave's 20 were read whole and then refused 429, about 100 MiB
// read for nothing per wave.
func TestReplyWavesRefusedBeforeRead(t *testing.T) {
	h := newHarness(t)
	_, sc := h.install("waves", `{}`)
	tok := h.token(sc, "alice", time.Hour)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln, read: map[string]*atomic.Int64{}}
	srv := httptest.NewUnstartedServer(h.con)
	srv.Listener = cl
	srv.Start()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	sid := sidOf("person", "waves-1")
	img := base64.StdEncoding.EncodeToString(make([]byte, 9<<20/4*3))
	body := fmt.Sprintf(`{"sid":%q,"idempotency_key":"key-%%05d","image_base64":"data:image/png;base64,%s"}`, sid, img)
	const waves, perWave = 4, 20
	var readRefused, readServed int64
	refusedBeforeRead, refusedAfterRead, served := 0, 0, 0
	for w := range waves {
		type result struct {
			status int
			read   int64
		}
		results := make([]result, perWave)
		var wg sync.WaitGroup
		for i := range perWave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := fmt.Sprintf(body, w*perWave+i)
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				fmt.Fprintf(c, "POST /console/api/reply HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tok, len(b))
				// the server may answer and close before the body is sent:
				// a failed write is expected then
				go func() { _, _ = c.Write([]byte(b)) }()
				_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
				res, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Errorf("reply %d: no answer: %v", i, err)
					return
				}
				_ = res.Body.Close()
				_ = c.Close()
				// the server's reads of this connection are over once it
				// answered and the connection is closed on both sides
				results[i] = result{status: res.StatusCode, read: cl.bytesRead(c.LocalAddr().String())}
			}()
		}
		wg.Wait()
		counts := map[int]int{}
		for _, r := range results {
			counts[r.status]++
			switch r.status {
			case http.StatusTooManyRequests, http.StatusServiceUnavailable:
				readRefused += r.read
				if r.read < 1<<20 {
					refusedBeforeRead++
				} else {
					refusedAfterRead++
				}
			default:
				readServed += r.read
				served++
			}
		}
		t.Logf("wave %d: statuses %v", w+1, counts)
	}
	t.Logf("%d refused before their body was read, %d after (%d MiB read for refused replies); %d read and served (%d MiB)",
		refusedBeforeRead, refusedAfterRead, readRefused>>20, served, readServed>>20)
	if refusedAfterRead > 0 {
		t.Errorf("%d replies refused after their bodies were read, want 0", refusedAfterRead)
	}
	if refusedBeforeRead == 0 {
		t.Errorf("no reply refused: the waves did not reach a limit")
	}
}
