package takeover_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/console"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// abandonConsole is the HTTP console of a harness's replica on a real
// server. A request marked with the header X-Test-Abandon is the one under
// test: its server-side context is kept, so a cut can wait until the
// server has seen the client go, and the end of its handler is signalled.
type abandonConsole struct {
	h       *harness
	srv     *httptest.Server
	key     []byte
	sc      binding.Scope
	minted  int64
	token   string
	reqCtx  atomic.Pointer[context.Context]
	handled chan struct{}
}

func newAbandonConsole(h *harness, sc binding.Scope) *abandonConsole {
	h.t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	ch, err := console.New(console.Config{Key: base64.StdEncoding.EncodeToString(key), Logger: testLogger()}, h.svc.Console())
	if err != nil {
		h.t.Fatal(err)
	}
	tok, err := console.Mint(key, console.Claims{Scope: sc.String(), Operator: "alice", Exp: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		h.t.Fatal(err)
	}
	c := &abandonConsole{h: h, key: key, sc: sc, token: tok, handled: make(chan struct{}, 1)}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Abandon") == "" {
			ch.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		c.reqCtx.Store(&ctx)
		defer func() { c.handled <- struct{}{} }()
		ch.ServeHTTP(w, r)
	}))
	h.t.Cleanup(func() {
		ch.Close()
		c.srv.Close()
	})
	return c
}

// freshToken mints a new token for the scope, so each case has its own
// request budget (spec §9 rule 7 limits requests per token).
func (c *abandonConsole) freshToken() {
	c.h.t.Helper()
	c.minted++
	tok, err := console.Mint(c.key, console.Claims{Scope: c.sc.String(), Operator: "alice", Exp: time.Now().Add(time.Hour).Unix() + c.minted})
	if err != nil {
		c.h.t.Fatal(err)
	}
	c.token = tok
}

func (c *abandonConsole) request(ctx context.Context, method, endpoint string, params map[string]any, abandon bool) (*http.Response, error) {
	var req *http.Request
	var err error
	url := c.srv.URL + "/console/api" + endpoint
	if method == http.MethodGet {
		q := []string{}
		for k, v := range params {
			q = append(q, fmt.Sprintf("%s=%v", k, v))
		}
		req, err = http.NewRequestWithContext(ctx, method, url+"?"+strings.Join(q, "&"), nil)
	} else {
		body, _ := json.Marshal(params)
		req, err = http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if abandon {
		req.Header.Set("X-Test-Abandon", "1")
	}
	return c.srv.Client().Do(req)
}

// call runs an operation to its end and decodes a 200 result into out; it
// returns the HTTP status.
func (c *abandonConsole) call(method, endpoint string, params map[string]any, out any) int {
	c.h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.request(ctx, method, endpoint, params, false)
	if err != nil {
		c.h.t.Fatalf("%s %s: %v", method, endpoint, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			c.h.t.Fatalf("decode %s: %v", endpoint, err)
		}
	}
	return resp.StatusCode
}

// sessionState is what storage holds for one session.
type sessionState struct {
	rec   *model.Record
	hist  int
	blobs []string // blob names of the stored entries
	gone  []string // of blobs, those missing from the object store
	timer *model.TimerBody
}

func (h *harness) sessionState(b binding.Binding, sid string) sessionState {
	h.t.Helper()
	ctx := context.Background()
	sc, _ := b.Scope()
	s := sessionState{rec: h.record(b, sid), hist: h.historyCount(b, sid)}
	if s.hist > 0 {
		obs, err := h.js.ObjectStore(ctx, store.BlobBucket)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, e := range subjectEntries(h.t, h, sc, sid) {
			for _, name := range e.Blobs() {
				s.blobs = append(s.blobs, name)
				if _, err := obs.GetInfo(ctx, name); errors.Is(err, jetstream.ErrObjectNotFound) {
					s.gone = append(s.gone, name)
				} else if err != nil {
					h.t.Fatal(err)
				}
			}
		}
	}
	timers, err := h.js.Stream(ctx, store.TimerStream)
	if err != nil {
		h.t.Fatal(err)
	}
	subj, _ := wire.Subjects{}.Internal(takeover.Plugin, store.KindTimer, sc, sid)
	m, err := timers.GetLastMsgForSubject(ctx, subj)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		h.t.Fatal(err)
	default:
		var tb model.TimerBody
		if err := json.Unmarshal(m.Data, &tb); err != nil {
			h.t.Fatal(err)
		}
		s.timer = &tb
	}
	return s
}

func (s sessionState) String() string {
	if s.rec == nil {
		return fmt.Sprintf("{no record, %d entries, %d/%d blobs gone, timer %v}", s.hist, len(s.gone), len(s.blobs), s.timer)
	}
	return fmt.Sprintf("{takeover %+v, unread %v %q, %d entries, %d/%d blobs gone, timer %v}",
		s.rec.Takeover, s.rec.Unread, s.rec.TriggeredWord, s.hist, len(s.gone), len(s.blobs), s.timer)
}

// armed timer: the schedule exists and fires at the record's deadline.
func (s sessionState) armed() bool {
	return s.timer != nil && s.rec != nil && s.timer.ExpiresAt == s.rec.Takeover.ExpiresAt
}

// TestAbandonedRequestLeavesConsistentState is ST-10: an HTTP console
// action whose client goes away at each storage step leaves the session
// wholly as before or wholly as after the action, the console's reads equal
// storage, and the action then completes on a retry.
func TestAbandonedRequestLeavesConsistentState(t *testing.T) {
	h := newHarness(t)
	b := newBinding("st10")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false}`
	h.attach(b, cfg, true)
	sc, _ := b.Scope()
	c := newAbandonConsole(h, sc)
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)

	// the cut: at the first storage call op of the scope, the client goes
	// away and the call proceeds once the server has seen it go; an
	// acknowledgement cut reports the applied write as cancelled
	type cut struct {
		op      string
		abandon func()
	}
	var armed atomic.Pointer[cut]
	var abandonErr atomic.Value
	takeover.SetFault(h.svc, func(op string, s binding.Scope) error {
		cp := armed.Load()
		if cp == nil || s != sc || op != cp.op || !armed.CompareAndSwap(cp, nil) {
			return nil
		}
		cp.abandon()
		if strings.HasSuffix(op, ".ack") {
			return context.Canceled
		}
		return nil
	})

	lid := 0
	message := func(text string, image bool) string {
		lid++
		parts := []map[string]string{{"type": "Plain", "text": text}}
		if image {
			parts = append(parts, map[string]string{"type": "Image", "base64": png})
		}
		chain, _ := json.Marshal(parts)
		h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", lid, lid, string(chain)))
		sid := sidOf("bot-a", "person", lid)
		bustest.Eventually(h.t, "the message counted", func() bool { r := h.record(b, sid); return r != nil && r.HistoryCount == 1 })
		return sid
	}
	takeOver := func(sid string) {
		if code := c.call("POST", "/takeover", map[string]any{"sid": sid}, nil); code != http.StatusOK {
			h.t.Fatalf("setup takeover: %d", code)
		}
	}

	cases := []struct {
		name     string
		method   string
		endpoint string
		cuts     []string
		setup    func() string
		before   func(sessionState) bool
		after    func(sessionState) bool
	}{{
		name: "takeover", method: "POST", endpoint: "/takeover",
		cuts:  []string{"kv.get", "kv.update", "kv.update.ack", "timer.schedule"},
		setup: func() string { return message("hi", false) },
		before: func(s sessionState) bool {
			return s.rec != nil && !s.rec.Takeover.Active && s.timer == nil
		},
		after: func(s sessionState) bool {
			return s.rec != nil && s.rec.Takeover.Active && s.rec.Takeover.Operator == "alice" && s.armed()
		},
	}, {
		name: "release", method: "DELETE", endpoint: "/takeover",
		cuts:  []string{"kv.get", "kv.update", "kv.update.ack", "timer.cancel"},
		setup: func() string { sid := message("hi", false); takeOver(sid); return sid },
		before: func(s sessionState) bool {
			return s.rec != nil && s.rec.Takeover.Active && s.armed()
		},
		after: func(s sessionState) bool {
			return s.rec != nil && !s.rec.Takeover.Active && s.rec.Takeover.ReleaseReason == "manual" && s.timer == nil
		},
	}, {
		name: "mark_handled", method: "POST", endpoint: "/mark_handled",
		cuts:  []string{"kv.get", "kv.update", "kv.update.ack"},
		setup: func() string { return message("help", false) },
		before: func(s sessionState) bool {
			return s.rec != nil && s.rec.Unread && s.rec.TriggeredWord == "help"
		},
		after: func(s sessionState) bool {
			return s.rec != nil && !s.rec.Unread && s.rec.TriggeredWord == ""
		},
	}, {
		name: "delete", method: "DELETE", endpoint: "/session",
		cuts:  []string{"kv.get", "kv.purge", "history.read", "blob.delete", "history.purge", "timer.cancel"},
		setup: func() string { sid := message("hi", true); takeOver(sid); return sid },
		before: func(s sessionState) bool {
			return s.rec != nil && s.rec.Takeover.Active && s.armed() && s.hist == 1 && len(s.blobs) == 1 && len(s.gone) == 0
		},
		after: func(s sessionState) bool {
			return s.rec == nil && s.hist == 0 && s.timer == nil
		},
	}}

	for _, tc := range cases {
		for _, op := range tc.cuts {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				// the harness's helpers report to this subtest
				defer func(parent testing.TB) { h.t = parent }(h.t)
				h.t = t
				c.freshToken()
				sid := tc.setup()
				var blobs []string
				if st := h.sessionState(b, sid); !tc.before(st) {
					t.Fatalf("setup state %v", st)
				} else {
					blobs = st.blobs
				}

				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				armed.Store(&cut{op: op, abandon: func() {
					cancel()
					p := c.reqCtx.Load()
					select {
					case <-(*p).Done():
					case <-time.After(10 * time.Second):
						abandonErr.Store(fmt.Errorf("the server did not see the client go at %s", op))
					}
				}})
				resp, err := c.request(ctx, tc.method, tc.endpoint, map[string]any{"sid": sid}, true)
				if err == nil {
					resp.Body.Close()
					t.Fatalf("the abandoned request got an answer (%d): the cut at %s was not reached", resp.StatusCode, op)
				}
				select {
				case <-c.handled:
				case <-time.After(20 * time.Second):
					t.Fatal("the abandoned request's handler did not return")
				}
				if e := abandonErr.Load(); e != nil {
					t.Fatal(e)
				}

				st := h.sessionState(b, sid)
				wasBefore, wasAfter := tc.before(st), tc.after(st)
				if !wasBefore && !wasAfter {
					t.Fatalf("state is neither before nor after the %s: %v", tc.name, st)
				}
				h.consoleEqualsStorage(c, b, sid, st)

				// the action then completes, with no fence
				code := c.call(tc.method, tc.endpoint, map[string]any{"sid": sid}, nil)
				if code != http.StatusOK && !(tc.name == "delete" && wasAfter && code == http.StatusNotFound) {
					t.Fatalf("retry after the abandoned %s: %d", tc.name, code)
				}
				st = h.sessionState(b, sid)
				if !tc.after(st) {
					t.Fatalf("state after the retry: %v", st)
				}
				h.consoleEqualsStorage(c, b, sid, st)
				if tc.name == "delete" {
					obs, _ := h.js.ObjectStore(context.Background(), store.BlobBucket)
					for _, name := range blobs {
						if _, err := obs.GetInfo(context.Background(), name); !errors.Is(err, jetstream.ErrObjectNotFound) {
							t.Fatalf("blob %s left after the delete: %v", name, err)
						}
					}
				}
			})
		}
	}
}

// consoleEqualsStorage checks that the console's reads and the replica's
// session view say what storage holds.
func (h *harness) consoleEqualsStorage(c *abandonConsole, b binding.Binding, sid string, st sessionState) {
	h.t.Helper()
	now := h.now().UnixMilli()
	var tv takeover.TakeoverView
	code := c.call("GET", "/takeover_status", map[string]any{"sid": sid}, &tv)
	var list takeover.SessionList
	if c.call("GET", "/sessions", map[string]any{"limit": 500}, &list) != http.StatusOK {
		h.t.Fatal("the session list failed")
	}
	var sum *takeover.Summary
	for i := range list.Sessions {
		if list.Sessions[i].SID == sid {
			sum = &list.Sessions[i]
		}
	}
	if st.rec == nil {
		if code != http.StatusNotFound || sum != nil {
			h.t.Fatalf("no record stored, but the console answers status %d and lists it: %v", code, sum != nil)
		}
	} else {
		want := st.rec.Takeover.TakenOver(now)
		if code != http.StatusOK || tv.Active != want || tv.ExpiresAt != st.rec.Takeover.ExpiresAt {
			h.t.Fatalf("console status %d %+v, stored %+v", code, tv, st.rec.Takeover)
		}
		if sum == nil || sum.Unread != st.rec.Unread || sum.TriggeredWord != st.rec.TriggeredWord || sum.Takeover.Active != want {
			h.t.Fatalf("console summary %+v, stored %v", sum, st)
		}
		var page takeover.MessagePage
		if c.call("GET", "/messages", map[string]any{"sid": sid, "limit": 200}, &page) != http.StatusOK || len(page.Messages) != st.hist {
			h.t.Fatalf("console shows %d entries, %d stored", len(page.Messages), st.hist)
		}
	}
	sc, _ := b.Scope()
	wantTaken := st.rec != nil && st.rec.Takeover.TakenOver(now)
	bustest.Eventually(h.t, "the view to match storage", func() bool {
		taken, known := takeover.ViewTakenOver(h.svc, sc, sid)
		// a deleted record leaves an inactive marker in the view
		return taken == wantTaken && (known || st.rec == nil)
	})
}
