package console_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/takeover/console"
)

// openBody sends the head of a POST declaring length bytes and none of
// them, over a raw connection, and returns the connection.
func openBody(t *testing.T, addr, tok, endpoint string, length int64) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fmt.Fprintf(c, "POST /console/api%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", endpoint, tok, length)
	return c
}

// probe sends a whole small POST body and returns the answer.
func probe(t *testing.T, addr, tok string) *http.Response {
	t.Helper()
	c := openBody(t, addr, tok, "/mark_handled", 2)
	_, _ = c.Write([]byte("{}"))
	return answer(t, c)
}

// answer reads the response on c, failing when none comes within a
// generous wait (a server still reading the body never answers).
func answer(t *testing.T, c net.Conn) *http.Response {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer before the body was sent: %v", err)
	}
	_ = res.Body.Close()
	return res
}

// TestBodyRefusedByDeclaredLength declares a 31 MiB reply and a 2 MiB
// takeover and sends no byte of either: both are answered 413 from the
// declared length alone. Before, the console read up to the limit first
// (the requests waited for their bodies and were never answered).
func TestBodyRefusedByDeclaredLength(t *testing.T) {
	h := newHarness(t)
	_, sc := h.install("declared", `{}`)
	tok := h.token(sc, "alice", time.Hour)
	srv := httptest.NewServer(h.con)
	t.Cleanup(srv.Close) // after the raw connections close (cleanups run last first)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct {
		endpoint string
		length   int64
	}{{"/reply", 31 << 20}, {"/takeover", 2 << 20}} {
		res := answer(t, openBody(t, addr, tok, c.endpoint, c.length))
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s declaring %d bytes: status %d, want 413", c.endpoint, c.length, res.StatusCode)
		}
	}
}

// TestBodyBudgetRefusesWhenHeld holds two 1 MiB bodies open against a
// 2 MiB budget: a third request with a body is answered 503 with
// Retry-After before its body is read, a GET still passes, and once one
// held request ends a new body is admitted again. Before, every body was
// read whatever the others held (the third was never answered).
func TestBodyBudgetRefusesWhenHeld(t *testing.T) {
	h := newHarness(t)
	_, sc := h.install("budget", `{}`)
	tok := h.token(sc, "alice", time.Hour)
	con, err := console.New(console.Config{Key: h.keyStr, BodyBudget: 2 << 20}, h.svc.Console())
	if err != nil {
		t.Fatal(err)
	}
	defer con.Close()
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close) // after the raw connections close (cleanups run last first)
	addr := strings.TrimPrefix(srv.URL, "http://")
	held1 := openBody(t, addr, tok, "/takeover", 1<<20)
	_ = openBody(t, addr, tok, "/takeover", 1<<20)
	// the held requests take their share as soon as their heads are read;
	// poll until the budget is full
	var res *http.Response
	deadline := time.Now().Add(20 * time.Second)
	for {
		res = probe(t, addr, tok)
		if res.StatusCode == http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a body while the budget is held: status %d Retry-After %q, want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	gr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = gr.Body.Close()
	if gr.StatusCode != http.StatusOK {
		t.Errorf("a GET while the budget is held: status %d, want 200", gr.StatusCode)
	}
	// the held request ends (its client goes away): its share comes back
	_ = held1.Close()
	deadline = time.Now().Add(20 * time.Second)
	for {
		res = probe(t, addr, tok)
		if res.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res.StatusCode == http.StatusServiceUnavailable {
		t.Fatalf("after a held body ended: still 503")
	}
}
