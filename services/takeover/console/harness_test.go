package console_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/console"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// harness is one takeover replica on an embedded server, a fake host, and
// the console on a real HTTP server behind a gate that can hold responses.
type harness struct {
	t      testing.TB
	srv    *bustest.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	host   *bustest.Host
	inv    *bus.Invoker
	svc    *takeover.Service
	key    []byte
	keyStr string
	gate   *gate
	con    *console.Handler
	http   *httptest.Server
	clock  bustest.Clock // the services' clock
	// groupNames are the group names events carry, by launcher id
	// (default "Group <id>").
	groupNames map[string]string
	opts       []func(*takeover.Config)
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	return newHarnessOn(t, bustest.NewServer(t))
}

// newHarnessOn is newHarness on a server of the caller's, with opts
// applied to the replicas' config.
func newHarnessOn(t testing.TB, srv *bustest.Server, opts ...func(*takeover.Config)) *harness {
	t.Helper()
	h := &harness{t: t, srv: srv, nc: srv.Conn(t), js: srv.JetStream(t), opts: opts}
	h.host = bustest.NewHost(t, srv.Conn(t), wire.Subjects{})
	h.inv = bus.NewInvoker(srv.Conn(t), wire.Subjects{}, nil)
	h.svc = h.replica(h.nc)
	h.key = make([]byte, 32)
	_, _ = rand.Read(h.key)
	h.keyStr = base64.StdEncoding.EncodeToString(h.key)
	ch, err := console.New(console.Config{Key: h.keyStr, TestHooks: true, CheckEvery: 200 * time.Millisecond}, h.svc.Console())
	if err != nil {
		t.Fatal(err)
	}
	h.con, h.gate = ch, &gate{next: ch}
	mux := http.NewServeMux()
	mux.Handle("/console/", h.gate)
	h.http = httptest.NewServer(mux)
	t.Cleanup(func() {
		h.gate.releaseAll()
		ch.Close()
		h.http.Close()
	})
	return h
}

// replica starts one more service replica on nc, stopped at cleanup.
func (h *harness) replica(nc *nats.Conn) *takeover.Service {
	t := h.t
	t.Helper()
	cfg := takeover.Config{MinTakeoverTimeout: time.Second, NoticeRetry: []time.Duration{50 * time.Millisecond}, HostTimeout: 2 * time.Second}
	for _, o := range h.opts {
		o(&cfg)
	}
	svc, err := takeover.New(cfg,
		bus.Deps{Conn: nc, Clock: h.clock.Now, Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	bustest.Start(t, svc)
	return svc
}

var installs atomic.Int64

// install attaches a fresh installation with config and returns its
// binding and scope.
func (h *harness) install(name, config string) (binding.Binding, binding.Scope) {
	h.t.Helper()
	b := binding.Binding{InstanceUUID: "inst", WorkspaceUUID: "ws", InstallationUUID: fmt.Sprintf("%s-%d", name, installs.Add(1)),
		PlacementGeneration: 1, RuntimeRevision: 1, ArtifactDigest: "sha256:test"}
	bustest.Attach(h.t, h.js, takeover.Plugin, b, json.RawMessage(config), true)
	sc, _ := b.Scope()
	bustest.WaitAuthority(h.t, h.svc.Runner(), sc, func(a bus.Authority) bool { return a.State == bus.StateActive })
	return b, sc
}

// uninstall revokes an installation for good.
func (h *harness) uninstall(b binding.Binding) {
	h.t.Helper()
	bustest.Revoke(h.t, h.js, takeover.Plugin, b, "uninstall")
	sc, _ := b.Scope()
	bustest.WaitAuthority(h.t, h.svc.Runner(), sc, func(a bus.Authority) bool { return a.State == bus.StateRemoved })
}

// token mints a token for sc valid for ttl (negative: already expired).
func (h *harness) token(sc binding.Scope, operator string, ttl time.Duration) string {
	h.t.Helper()
	tok, err := console.Mint(h.key, console.Claims{Scope: sc.String(), Operator: operator, Exp: time.Now().Add(ttl).Unix()})
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

// say sends a user message as an event and returns the reply.
func (h *harness) say(b binding.Binding, config, ltype, lid, sender, name, text string) wire.EventReply {
	h.t.Helper()
	chain, _ := json.Marshal([]map[string]string{{"type": "Plain", "text": text}})
	return h.event(b, config, ltype, lid, sender, name, chain)
}

func (h *harness) event(b binding.Binding, config, ltype, lid, sender, name string, chain []byte) wire.EventReply {
	h.t.Helper()
	ev := takeover.EventPersonMessage
	if ltype == "group" {
		ev = takeover.EventGroupMessage
	}
	group := "Group " + lid
	if n, ok := h.groupNames[lid]; ok {
		group = n
	}
	data, _ := json.Marshal(map[string]any{
		"launcher_type": ltype, "launcher_id": lid, "sender_id": sender,
		"message_event": map[string]any{"sender": map[string]any{"nickname": name, "member_name": name, "group": map[string]any{"name": group}}},
		"message_chain": json.RawMessage(chain),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, err := h.inv.Invoke(ctx, takeover.Plugin, wire.EndpointEvent, bus.NewInvocationID(), &wire.Request{
		Binding: b, Config: json.RawMessage(config), Event: &wire.Event{Name: ev, BotUUID: "bot-1", Data: data},
	})
	if err != nil {
		h.t.Fatalf("event: %v", err)
	}
	var r wire.EventReply
	if err := json.Unmarshal(raw, &r); err != nil {
		h.t.Fatal(err)
	}
	return r
}

// page runs a console operation over the NATS page endpoint.
func (h *harness) page(b binding.Binding, config, method, endpoint string, body any, out any) {
	h.t.Helper()
	if err := h.tryPage(b, config, method, endpoint, body, out); err != nil {
		h.t.Fatalf("page %s %s: %v", method, endpoint, err)
	}
}

// tryPage is page that returns the operation's error.
func (h *harness) tryPage(b binding.Binding, config, method, endpoint string, body any, out any) error {
	h.t.Helper()
	raw, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reply, err := h.inv.Invoke(ctx, takeover.Plugin, wire.EndpointPage, bus.NewInvocationID(), &wire.Request{
		Binding: b, Config: json.RawMessage(config),
		Page: &wire.Page{PageID: "console", Endpoint: endpoint, Method: method, Body: raw},
	})
	if err != nil {
		return err
	}
	if out != nil {
		var pr struct {
			Data json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal(reply, &pr)
		return json.Unmarshal(pr.Data, out)
	}
	return nil
}

// do calls the HTTP API with a token; it returns the status and body.
func (h *harness) do(tok, method, endpoint string, params map[string]any) (int, []byte) {
	h.t.Helper()
	u := h.http.URL + "/console/api" + endpoint
	var body io.Reader
	if method == http.MethodGet {
		q := url.Values{}
		for k, v := range params {
			q.Set(k, fmt.Sprint(v))
		}
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
	} else {
		b, _ := json.Marshal(params)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, u, body)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out
}

func sidOf(ltype, lid string) string {
	return model.SID(model.SessionKey("bot-1", ltype, lid))
}

// gate sits in front of the console and holds matching API requests
// until the test releases them (spec §8.4 rule 3).
type gate struct {
	next    http.Handler
	mu      sync.Mutex
	holds   []*hold
	seen    map[string]int // "METHOD /endpoint" -> requests seen
	streams []context.CancelFunc
}

// DropStreams ends every open live stream from the server side, as a
// restarting replica or a broken proxy would.
func (g *gate) DropStreams() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.streams {
		c()
	}
	g.streams = nil
}

// hold is one held request: it matches once.
type hold struct {
	method, endpoint, sid string
	arrived               chan struct{}
	release               chan *fake
	done                  chan struct{}
	used                  bool
}

// fake is a substitute response; nil passes the request through.
type fake struct {
	status int
	body   any
}

// Hold holds the next request for method and endpoint (and sid, if not
// empty).
func (g *gate) Hold(method, endpoint, sid string) *hold {
	g.mu.Lock()
	defer g.mu.Unlock()
	hd := &hold{method: method, endpoint: endpoint, sid: sid, arrived: make(chan struct{}), release: make(chan *fake, 1), done: make(chan struct{})}
	g.holds = append(g.holds, hd)
	return hd
}

// Seen counts the requests for method and endpoint so far.
func (g *gate) Seen(method, endpoint string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seen[method+" "+endpoint]
}

func (g *gate) releaseAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, hd := range g.holds {
		select {
		case hd.release <- nil:
		default:
		}
	}
}

func (hd *hold) Wait(t testing.TB) {
	t.Helper()
	select {
	case <-hd.arrived:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s %s for %.8s never arrived", hd.method, hd.endpoint, hd.sid)
	}
}

// Let lets the held request through without waiting for its response
// (a live stream never finishes).
func (hd *hold) Let() { hd.release <- nil }

// Release lets the held request through and waits until its response is
// written.
func (hd *hold) Release(t testing.TB) { hd.ReleaseWith(t, nil) }

// ReleaseWith answers the held request with f (nil: the real answer) and
// waits until the response is written.
func (hd *hold) ReleaseWith(t testing.TB, f *fake) {
	t.Helper()
	hd.release <- f
	select {
	case <-hd.done:
	case <-time.After(20 * time.Second):
		t.Fatal("held response was never written")
	}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const api = "/console/api"
	if len(r.URL.Path) <= len(api) || r.URL.Path[:len(api)] != api {
		g.next.ServeHTTP(w, r)
		return
	}
	endpoint := r.URL.Path[len(api):]
	sid := r.URL.Query().Get("sid")
	if r.Method != http.MethodGet && r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var p struct {
			SID string `json:"sid"`
		}
		_ = json.Unmarshal(b, &p)
		sid = p.SID
	}
	g.mu.Lock()
	if g.seen == nil {
		g.seen = map[string]int{}
	}
	g.seen[r.Method+" "+endpoint]++
	var hd *hold
	for _, x := range g.holds {
		if !x.used && x.method == r.Method && x.endpoint == endpoint && (x.sid == "" || x.sid == sid) {
			hd, x.used = x, true
			break
		}
	}
	var cancel context.CancelFunc
	if endpoint == "/events" {
		var ctx context.Context
		ctx, cancel = context.WithCancel(r.Context())
		r = r.WithContext(ctx)
		g.streams = append(g.streams, cancel)
	}
	g.mu.Unlock()
	if cancel != nil {
		defer cancel()
	}
	if hd == nil {
		g.next.ServeHTTP(w, r)
		return
	}
	close(hd.arrived)
	f := <-hd.release
	defer close(hd.done)
	if f == nil {
		g.next.ServeHTTP(w, r)
		return
	}
	b, _ := json.Marshal(f.body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.status)
	_, _ = w.Write(b)
}
