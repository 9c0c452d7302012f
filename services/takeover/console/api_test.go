package console_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/console"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

const cfg = `{"takeover_timeout":600,"trigger_words":["human"]}`

// forge builds a token with the given claim bytes, signed with key.
func forge(key []byte, claims string) string {
	return "v1." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + "." + base64.RawURLEncoding.EncodeToString(sign(key, []byte(claims)))
}

// nonCanonical re-spells unpadded base64url with the unused low bits of
// its last character set: it decodes to the same bytes.
func nonCanonical(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	unused := map[int]int{2: 4, 3: 2}[len(s)%4] // bits of the last character no byte uses
	if unused == 0 {
		panic("nonCanonical: the length leaves no unused bits")
	}
	i := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[i|(1<<unused-1)])
}

func TestTokenRefusals(t *testing.T) {
	h := newHarness(t)
	a, scA := h.install("authA", cfg)
	b, scB := h.install("authB", cfg)
	h.say(a, cfg, "person", "42", "42", "Alice", "hello from A")
	h.say(b, cfg, "person", "77", "77", "Bob", "hello from B")

	good := h.token(scA, "alice", time.Hour)
	exp := time.Now().Add(time.Hour).Unix()
	otherKey := bytes.Repeat([]byte{7}, 32)
	valid, _ := console.Mint(h.key, console.Claims{Scope: scA.String(), Operator: "alice", Exp: exp})
	parts := strings.Split(valid, ".")
	cases := []struct{ name, tok string }{
		{"no token", ""},
		{"garbage", "not-a-token"},
		{"wrong version", "v2." + parts[1] + "." + parts[2]},
		{"forged MAC", forge(otherKey, `{"scope":"`+scA.String()+`","operator":"alice","exp":`+strconv.FormatInt(exp, 10)+`}`)},
		{"altered claims", "v1." + base64.RawURLEncoding.EncodeToString([]byte(`{"scope":"`+scB.String()+`","operator":"alice","exp":`+strconv.FormatInt(exp, 10)+`}`)) + "." + parts[2]},
		{"extra claim", forge(h.key, `{"scope":"`+scA.String()+`","operator":"alice","exp":`+strconv.FormatInt(exp, 10)+`,"admin":true}`)},
		{"missing claim", forge(h.key, `{"scope":"`+scA.String()+`","exp":`+strconv.FormatInt(exp, 10)+`}`)},
		{"expired", h.token(scA, "alice", -time.Minute)},
		{"beyond 24h", forge(h.key, `{"scope":"`+scA.String()+`","operator":"alice","exp":`+strconv.FormatInt(time.Now().Add(25*time.Hour).Unix(), 10)+`}`)},
		{"float exp", forge(h.key, `{"scope":"`+scA.String()+`","operator":"alice","exp":`+strconv.FormatInt(exp, 10)+`.5}`)},
		{"bad scope", forge(h.key, `{"scope":"inst.ws.a*b","operator":"alice","exp":`+strconv.FormatInt(exp, 10)+`}`)},
		{"bad operator", forge(h.key, `{"scope":"`+scA.String()+`","operator":"al ice","exp":`+strconv.FormatInt(exp, 10)+`}`)},
		// issue 19: claims that parse two ways, and encodings other than the one canonical form
		{"duplicate claim", forge(h.key, `{"scope":"`+scA.String()+`","operator":"alice","exp":`+strconv.FormatInt(exp, 10)+`,"exp":`+strconv.FormatInt(exp+60, 10)+`}`)},
		{"duplicate scope", forge(h.key, `{"scope":"`+scB.String()+`","scope":"`+scA.String()+`","operator":"alice","exp":`+strconv.FormatInt(exp, 10)+`}`)},
		{"non-canonical claims base64", func() string {
			// an operator name whose claims leave unused bits in the last character
			for _, op := range []string{"alice", "alicex", "alicexy"} {
				tok, _ := console.Mint(h.key, console.Claims{Scope: scA.String(), Operator: op, Exp: exp})
				if p := strings.Split(tok, "."); len(p[1])%4 != 0 {
					return "v1." + nonCanonical(p[1]) + "." + p[2]
				}
			}
			panic("unreachable: one of three consecutive lengths leaves unused bits")
		}()},
		{"non-canonical MAC base64", "v1." + parts[1] + "." + nonCanonical(parts[2])},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, ep := range []string{"/sessions", "/info", "/events"} {
				status, body := h.do(c.tok, http.MethodGet, ep, nil)
				if status != http.StatusUnauthorized {
					t.Fatalf("%s: status %d, want 401", ep, status)
				}
				if strings.Contains(string(body), "hello") || strings.Contains(string(body), "Alice") {
					t.Fatalf("%s: data leaked: %s", ep, body)
				}
			}
		})
	}

	// A's token sees only A; B's sid through A's token is 404 and leaves B unchanged
	status, body := h.do(good, http.MethodGet, "/sessions", nil)
	var list takeover.SessionList
	if status != 200 || json.Unmarshal(body, &list) != nil || len(list.Sessions) != 1 || list.Sessions[0].TargetID != "42" {
		t.Fatalf("A's list: %d %s", status, body)
	}
	sidB := sidOf("person", "77")
	for _, op := range []struct{ method, ep string }{{"GET", "/messages"}, {"POST", "/takeover"}, {"GET", "/export"}, {"DELETE", "/session"}} {
		if status, _ := h.do(good, op.method, op.ep, map[string]any{"sid": sidB}); status != http.StatusNotFound {
			t.Fatalf("A's token on B's sid %s %s: %d, want 404", op.method, op.ep, status)
		}
	}
	var pageB takeover.MessagePage
	h.page(b, cfg, "GET", "/messages", map[string]any{"sid": sidB}, &pageB)
	if len(pageB.Messages) != 1 || pageB.Session.Takeover.Active {
		t.Fatalf("B changed: %+v", pageB.Session)
	}

	// an unknown scope gets 403; a removed one too
	unknown, _ := binding.ParseScope("inst.ws.nobody")
	if status, _ := h.do(h.token(unknown, "alice", time.Hour), http.MethodGet, "/sessions", nil); status != http.StatusForbidden {
		t.Fatalf("unknown scope: %d, want 403", status)
	}
	tokB := h.token(scB, "bob", time.Hour)
	h.uninstall(b)
	for _, ep := range []string{"/sessions", "/events"} {
		if status, body := h.do(tokB, http.MethodGet, ep, nil); status != http.StatusForbidden {
			t.Fatalf("removed scope %s: %d %s, want 403", ep, status, body)
		}
	}
}

func TestOperatorRecordedOverHTTP(t *testing.T) {
	h := newHarness(t)
	a, sc := h.install("audit", cfg)
	h.say(a, cfg, "person", "42", "42", "Alice", "hello")
	sid := sidOf("person", "42")
	tok := h.token(sc, "alice@ops", time.Hour)
	if status, body := h.do(tok, "POST", "/takeover", map[string]any{"sid": sid}); status != 200 {
		t.Fatalf("takeover: %d %s", status, body)
	}
	var st takeover.TakeoverView
	_, body := h.do(tok, "GET", "/takeover_status", map[string]any{"sid": sid})
	_ = json.Unmarshal(body, &st)
	if !st.Active || st.Operator != "alice@ops" || st.Via != model.ViaConsole {
		t.Fatalf("takeover by token operator: %+v", st)
	}
	// a reply by multipart, with an image, from a second operator
	png := tinyPNG()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("sid", sid)
	_ = mw.WriteField("idempotency_key", "multipart-1")
	_ = mw.WriteField("text", "with a picture")
	fw, _ := mw.CreateFormFile("image", "pic.png")
	_, _ = fw.Write(png)
	fw, _ = mw.CreateFormFile("file", `C:\fakepath\notes.txt`)
	_, _ = fw.Write([]byte("plain notes"))
	_ = mw.Close()
	req, _ := http.NewRequest("POST", h.http.URL+"/console/api/reply", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+h.token(sc, "bob", time.Hour))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var rr takeover.ReplyResult
	_ = json.NewDecoder(res.Body).Decode(&rr)
	res.Body.Close()
	if res.StatusCode != 200 || !rr.Saved || rr.Entry.Operator != "bob" || rr.Takeover.Operator != "bob" {
		t.Fatalf("reply: %d %+v", res.StatusCode, rr)
	}
	sends := h.host.WaitSends(t, 1, 10*time.Second)
	if chain := sends[len(sends)-1].SendMessage().MessageChain; len(chain) != 3 || chain[1].Type != "Image" || chain[2].Type != "File" || chain[2].Name != "notes.txt" {
		t.Fatalf("send lacks the image or the file: %+v", chain)
	}
	// the blob comes back with its sniffed type, inline
	var blob, fileBlob string
	for _, p := range rr.Entry.Parts {
		switch p.Type {
		case "image":
			blob = p.Blob
		case "file":
			fileBlob = p.Blob
		}
	}
	// a file downloads as an attachment, never rendered
	req, _ = http.NewRequest("GET", h.http.URL+"/console/api/blob?sid="+sid+"&name="+fileBlob, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Disposition") != "attachment" || res.Header.Get("Content-Security-Policy") != "sandbox; frame-ancestors 'none'" || res.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("file blob: %d %v", res.StatusCode, res.Header)
	}
	req, _ = http.NewRequest("GET", h.http.URL+"/console/api/blob?sid="+sid+"&name="+blob, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got := new(bytes.Buffer)
	_, _ = got.ReadFrom(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/png" || !bytes.Equal(got.Bytes(), png) || res.Header.Get("Content-Disposition") != "" {
		t.Fatalf("blob: %d %q %q %d bytes", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"), got.Len())
	}
	// release records the releasing operator
	if status, body := h.do(h.token(sc, "carol", time.Hour), "DELETE", "/takeover", map[string]any{"sid": sid}); status != 200 {
		t.Fatalf("release: %d %s", status, body)
	}
	var rec *model.Record
	kvGet(t, h, sc, sid, &rec)
	if rec.Takeover.Active || rec.Takeover.ReleasedBy != "carol" {
		t.Fatalf("release audit: %+v", rec.Takeover)
	}
}

func TestAPIErrorsAndLimits(t *testing.T) {
	h := newHarness(t)
	a, sc := h.install("errs", cfg)
	h.say(a, cfg, "person", "42", "42", "Alice", "hello")
	tok := h.token(sc, "alice", time.Hour)
	for _, c := range []struct {
		method, ep string
		params     map[string]any
		status     int
		code       string
	}{
		{"GET", "/messages", map[string]any{"sid": "nope"}, 400, "bad_request"},
		{"GET", "/nothing", nil, 404, "not_found"},
		{"DELETE", "/clear", nil, 400, "bad_request"},
		{"POST", "/reply", map[string]any{"sid": sidOf("person", "42"), "idempotency_key": "k-1234567"}, 400, "bad_request"},
		{"PUT", "/sessions", nil, 405, "bad_request"},
	} {
		status, body := h.do(tok, c.method, c.ep, c.params)
		var eb struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal(body, &eb)
		if status != c.status || eb.Error.Code != c.code {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.ep, status, body, c.status, c.code)
		}
	}
	// an oversize body is 413 before anything runs
	big := strings.Repeat("x", 2<<20)
	status, _ := h.do(tok, "POST", "/takeover", map[string]any{"sid": sidOf("person", "42"), "pad": big})
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversize body: %d", status)
	}
	// headers of the page
	res, err := http.Get(h.http.URL + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'self'") || res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("page headers: %v", res.Header)
	}
	// production pages expose no test hooks
	plain, err := console.New(console.Config{Key: h.keyStr}, h.svc.Console())
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	plain.ServeHTTP(rec, httptest.NewRequest("GET", "/console/", nil))
	if !strings.Contains(rec.Body.String(), `data-hooks="off"`) {
		t.Fatal("a production page has test hooks on")
	}
	if _, err := console.New(console.Config{Key: "c2hvcnQ="}, h.svc.Console()); err == nil {
		t.Fatal("a short key was accepted")
	}
	// the rate limit: a burst of 40, then 429
	tok2 := h.token(sc, "burst", time.Hour)
	limited := false
	for i := 0; i < 60 && !limited; i++ {
		status, _ := h.do(tok2, "GET", "/info", nil)
		limited = status == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatal("60 requests in a burst were never limited")
	}
}

// sse reads a live stream's events until the stream ends or stop says so.
type sseEvent struct{ name, data string }

func readSSE(res *http.Response, out chan<- sseEvent) {
	sc := bufio.NewScanner(res.Body)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		case line == "" && ev.name != "":
			out <- ev
			ev = sseEvent{}
		}
	}
	close(out)
}

func openSSE(t *testing.T, h *harness, tok string) (chan sseEvent, func()) {
	t.Helper()
	req, _ := http.NewRequest("GET", h.http.URL+"/console/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	ch := make(chan sseEvent, 100)
	go readSSE(res, ch)
	return ch, func() { res.Body.Close() }
}

func expect(t *testing.T, ch chan sseEvent, name string) sseEvent {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended before %q", name)
			}
			if ev.name == name {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %q event", name)
		}
	}
}

func TestLiveEventsScopedAndEnding(t *testing.T) {
	h := newHarness(t)
	a, scA := h.install("liveA", cfg)
	_, scB := h.install("liveB", cfg)
	chA, closeA := openSSE(t, h, h.token(scA, "alice", time.Hour))
	defer closeA()
	chB, closeB := openSSE(t, h, h.token(scB, "bob", 3*time.Second))
	defer closeB()
	expect(t, chA, "hello")
	expect(t, chB, "hello")

	h.say(a, cfg, "person", "42", "42", "Alice", "I need a human")
	got := map[string]string{}
	deadline0 := time.After(15 * time.Second)
	for got["trigger"] == "" || got["message"] == "" || got["takeover"] == "" {
		select {
		case ev := <-chA:
			got[ev.name] = ev.data
		case <-deadline0:
			t.Fatalf("live events so far: %v", got)
		}
	}
	if !strings.Contains(got["trigger"], sidOf("person", "42")) || !strings.Contains(got["message"], "I need a human") {
		t.Fatalf("live events: %v", got)
	}
	// B's stream got nothing of A's and ends at its token's expiry
	deadline := time.After(15 * time.Second)
	for ended := false; !ended; {
		select {
		case ev, ok := <-chB:
			if !ok {
				ended = true
			} else if ev.name != "hello" {
				t.Fatalf("B received %s: %s", ev.name, ev.data)
			}
		case <-deadline:
			t.Fatal("B's stream outlived its token")
		}
	}
	// an uninstall ends A's stream with revoked
	h.uninstall(a)
	expect(t, chA, "revoked")
}

func TestLiveStreamLimitAndReplyRate(t *testing.T) {
	h := newHarness(t)
	a, sc := h.install("limits", cfg)
	h.say(a, cfg, "person", "42", "42", "Alice", "hello")
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := 0; i < 50; i++ {
		ch, stop := openSSE(t, h, h.token(sc, fmt.Sprintf("op-%d", i), time.Hour))
		closers = append(closers, stop)
		expect(t, ch, "hello")
	}
	if status, _ := h.do(h.token(sc, "op-51", time.Hour), "GET", "/events", nil); status != http.StatusTooManyRequests {
		t.Fatalf("51st stream: %d, want 429", status)
	}
	// replies: 2 per second per session
	tok := h.token(sc, "fast", time.Hour)
	limited := false
	for i := 0; i < 5 && !limited; i++ {
		status, _ := h.do(tok, "POST", "/reply", map[string]any{"sid": sidOf("person", "42"), "idempotency_key": fmt.Sprintf("rate-key-%d", i), "text": "hi"})
		limited = status == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatal("5 replies in a burst were never limited")
	}
}

func TestDisabledInstallationReadsOnly(t *testing.T) {
	h := newHarness(t)
	a, sc := h.install("disabled", cfg)
	h.say(a, cfg, "person", "42", "42", "Alice", "hello")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := bus.PublishRevoke(ctx, h.js, wire.Subjects{}, takeover.Plugin, wire.Revoke{Binding: a, Reason: "disable"}, ""); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "disabled", func() bool { x, ok := h.svc.Runner().View().Lookup(sc); return ok && x.State == bus.StateDisabled })
	tok := h.token(sc, "alice", time.Hour)
	if status, body := h.do(tok, "GET", "/sessions", nil); status != 200 || !strings.Contains(string(body), `"42"`) {
		t.Fatalf("read while disabled: %d %s", status, body)
	}
	status, body := h.do(tok, "POST", "/takeover", map[string]any{"sid": sidOf("person", "42")})
	if status != http.StatusForbidden || !strings.Contains(string(body), `"reason":"installation_inactive"`) {
		t.Fatalf("action while disabled: %d %s", status, body)
	}
}

func TestLiveEventsAcrossReplicas(t *testing.T) {
	h := newHarness(t)
	a, sc := h.install("replicas", cfg)
	h.say(a, cfg, "person", "42", "42", "Alice", "hello")
	// replica 2 with its own connection and console
	svc2 := h.replica(h.srv.Conn(t))
	c2, err := console.New(console.Config{Key: h.keyStr}, svc2.Console())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", c2)
	srv2 := httptest.NewServer(mux)
	t.Cleanup(func() { c2.Close(); srv2.Close() })
	bustest.Eventually(t, "replica 2 knows the installation", func() bool { return svc2.Console().ConsoleCheck(sc) == nil })

	req, _ := http.NewRequest("GET", srv2.URL+"/console/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+h.token(sc, "bob", time.Hour))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	ch := make(chan sseEvent, 100)
	go readSSE(res, ch)
	expect(t, ch, "hello")
	// a takeover through replica 1's console reaches replica 2's stream
	if status, body := h.do(h.token(sc, "alice", time.Hour), "POST", "/takeover", map[string]any{"sid": sidOf("person", "42")}); status != 200 {
		t.Fatalf("takeover on replica 1: %d %s", status, body)
	}
	ev := expect(t, ch, "takeover")
	if !strings.Contains(ev.data, `"operator":"alice"`) {
		t.Fatalf("takeover event: %s", ev.data)
	}
}

// TestLiveStreamsCappedPerToken: one token opens at most 5 live streams
// (more get 429), while another token of the same installation still opens
// its own; a closed stream frees its place.
func TestLiveStreamsCappedPerToken(t *testing.T) {
	h := newHarness(t)
	_, sc := h.install("pertoken", cfg)
	tok := h.token(sc, "alice", time.Hour)
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for range 5 {
		ch, stop := openSSE(t, h, tok)
		closers = append(closers, stop)
		expect(t, ch, "hello")
	}
	if status := streamStatus(h, tok); status != http.StatusTooManyRequests {
		t.Fatalf("a 6th stream of one token: %d, want 429", status)
	}
	ch, stop := openSSE(t, h, h.token(sc, "bob", time.Hour))
	closers = append(closers, stop)
	expect(t, ch, "hello")
	closers[0]()
	bustest.Eventually(t, "a closed stream's place freed", func() bool { return streamStatus(h, tok) == http.StatusOK })
}

// streamStatus opens a live stream and closes it at once: its status.
func streamStatus(h *harness, tok string) int {
	h.t.Helper()
	req, _ := http.NewRequest("GET", h.http.URL+"/console/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	_ = res.Body.Close()
	return res.StatusCode
}
