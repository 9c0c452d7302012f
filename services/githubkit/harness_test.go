package githubkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// inst is one installation of the plugin.
type inst struct {
	name    string
	b       binding.Binding
	sc      binding.Scope
	cfg     map[string]any
	session wire.Session
}

func newInst(t testing.TB, name string, cfg map[string]any) *inst {
	t.Helper()
	b := binding.Binding{InstanceUUID: "instance-1", WorkspaceUUID: "ws-" + name, InstallationUUID: "inst-" + name,
		PlacementGeneration: 1, RuntimeRevision: 1, ArtifactDigest: "sha256:test"}
	sc, err := b.Scope()
	if err != nil {
		t.Fatal(err)
	}
	return &inst{name: name, b: b, sc: sc, cfg: cfg,
		session: wire.Session{LauncherType: "group", LauncherID: wire.ID("session-" + name), SenderID: "u1", BotUUID: "bot-" + name}}
}

func (in *inst) config() json.RawMessage {
	b, _ := json.Marshal(in.cfg)
	return b
}

type running struct {
	hasReg bool // its metrics are in harness.reg
	svc    *githubkit.Service
	run    *bustest.Running
}

type harness struct {
	t       testing.TB
	srv     *bustest.Server
	nc      *nats.Conn
	js      jetstream.JetStream
	host    *bustest.Host
	fake    *fakegithub.Server
	keyStr  string
	clock   *bustest.Clock
	invoker *bustest.Invoker // attaches an installation before its first invocation
	subj    wire.Subjects
	tp      trace.TracerProvider
	nextID  atomic.Int64
	runs    []*running
	logs    *bustest.LogBuffer
	reg     *prometheus.Registry
	regUsed bool
}

// metric returns the value of a counter or gauge with the given labels.
func (h *harness) metric(name string, labels map[string]string) float64 {
	h.t.Helper()
	return bustest.Metric(h.t, h.reg, name, labels)
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	srv := bustest.NewServer(t)
	return newHarnessOn(t, srv, srv.Conn(t))
}

func newHarnessOn(t testing.TB, srv *bustest.Server, nc *nats.Conn) *harness {
	t.Helper()
	key, err := bus.NewKeyString("k1")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, nc: nc, js: js, keyStr: key, clock: &bustest.Clock{}, logs: &bustest.LogBuffer{}, reg: prometheus.NewRegistry()}
	h.host = bustest.NewHost(t, nc, wire.Subjects{})
	h.fake = fakegithub.New(fakegithub.Options{})
	t.Cleanup(h.fake.Close)
	h.invoker = bustest.NewInvoker(t, bus.NewInvoker(nc, wire.Subjects{}, nil), js, h.runners)
	return h
}

// runners returns the runners of the running instances.
func (h *harness) runners() []*bus.Runner {
	var out []*bus.Runner
	for _, r := range h.runs {
		out = append(out, r.svc.Runner())
	}
	return out
}

// start runs a service instance until the test ends; prep runs before Run.
func (h *harness) start(cfg githubkit.Config, prep func(*githubkit.Service)) *running {
	h.t.Helper()
	kr, err := bus.ParseKeyring(h.keyStr)
	if err != nil {
		h.t.Fatal(err)
	}
	cfg.AllowHTTP, cfg.AllowPrivateNetworks = true, true
	if cfg.HostTimeout == 0 {
		cfg.HostTimeout = 2 * time.Second
	}
	reg := prometheus.NewRegistry()
	hasReg := false
	if !h.regUsed {
		reg, h.regUsed, hasReg = h.reg, true, true // the first instance's metrics are the ones tests read
	}
	svc, err := githubkit.New(cfg, bus.Deps{Conn: h.nc, Keyring: kr, Clock: h.clock.Now, TracerProvider: h.tp,
		Logger: slog.New(slog.NewJSONHandler(h.logs, nil)), Registerer: reg})
	if err != nil {
		h.t.Fatal(err)
	}
	if prep != nil {
		prep(svc)
	}
	r := &running{svc: svc, hasReg: hasReg}
	h.runs = append(h.runs, r)
	r.run = bustest.Start(h.t, svc)
	return r
}

func (h *harness) stop(r *running) {
	for i, x := range h.runs {
		if x == r {
			h.runs = append(h.runs[:i:i], h.runs[i+1:]...)
			break
		}
	}
	r.run.Stop()
}

// stopAll stops every running instance.
func (h *harness) stopAll() {
	for len(h.runs) > 0 {
		h.stop(h.runs[0])
	}
}

// baseConfig is a valid config pointing at the fake GitHub.
func (h *harness) baseConfig(lang, token string, interval int) map[string]any {
	return map[string]any{"language": lang, "github_token": token, "github_api_url": h.fake.URL, "poll_interval": interval}
}

func (h *harness) attach(in *inst, enabled bool) {
	h.t.Helper()
	bustest.Attach(h.t, h.js, githubkit.Plugin, in.b, in.config(), enabled)
}

func (h *harness) revoke(in *inst, b binding.Binding, reason string) {
	h.t.Helper()
	bustest.Revoke(h.t, h.js, githubkit.Plugin, b, reason)
}

// authority reads the stored authority of a scope (nil when absent).
func (h *harness) authority(sc binding.Scope) *bus.Authority {
	h.t.Helper()
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(githubkit.Plugin))
	if err != nil {
		h.t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), bus.AuthorityKey(sc))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	var a bus.Authority
	if err := json.Unmarshal(e.Value(), &a); err != nil {
		h.t.Fatal(err)
	}
	return &a
}

type cmdOpt func(*wire.Request)

func withPrivilege(p int) cmdOpt { return func(r *wire.Request) { r.Command.Privilege = p } }

func withSession(s wire.Session) cmdOpt { return func(r *wire.Request) { r.Command.Session = s } }

func withFullText(ft string) cmdOpt { return func(r *wire.Request) { r.Command.FullText = ft } }

// cmdID runs "!gh <line>" as installation in with a given invocation id.
func (h *harness) cmdID(in *inst, id, line string, opts ...cmdOpt) (string, error) {
	h.t.Helper()
	params := strings.Split(line, " ")
	if line == "" {
		params = nil
	}
	req := &wire.Request{Binding: in.b, Config: in.config(), Command: &wire.Command{
		Name: "gh", Params: params, FullText: "!gh " + line, Session: in.session, Privilege: 1}}
	for _, o := range opts {
		if o != nil {
			o(req)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := h.invoker.Invoke(ctx, githubkit.Plugin, wire.EndpointCommand, id, req)
	if err != nil {
		return "", err
	}
	var rep wire.CommandReply
	if err := json.Unmarshal(raw, &rep); err != nil || len(rep.Returns) != 1 {
		h.t.Fatalf("reply %s: %v", raw, err)
	}
	return rep.Returns[0].Text, nil
}

func (h *harness) cmd(in *inst, line string, opts ...cmdOpt) string {
	h.t.Helper()
	text, err := h.cmdID(in, h.newID(), line, opts...)
	if err != nil {
		h.t.Fatalf("!gh %s: %v", line, err)
	}
	return text
}

func (h *harness) newID() string { return fmt.Sprintf("inv-%d", h.nextID.Add(1)) }

func (h *harness) tool(in *inst, name string, params any) (json.RawMessage, error) {
	h.t.Helper()
	p, _ := json.Marshal(params)
	req := &wire.Request{Binding: in.b, Config: in.config(), Tool: &wire.Tool{Name: name, Parameters: p, Session: in.session}}
	raw, err := h.invoker.Invoke(context.Background(), githubkit.Plugin, wire.EndpointTool, h.newID(), req)
	if err != nil {
		return nil, err
	}
	var rep struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		h.t.Fatal(err)
	}
	return rep.Result, nil
}

func (h *harness) pollSubject(sc binding.Scope, fullName string) string {
	s, err := h.subj.Internal(githubkit.Plugin, githubkit.KindPoll, sc, githubkit.RepoKey(fullName))
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) schedSubject(sc binding.Scope, fullName string) string {
	s, err := h.subj.Internal(githubkit.Plugin, githubkit.KindSched, sc, githubkit.RepoKey(fullName))
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// fire publishes a fired poll message for one repo and waits until the
// poll consumer has acknowledged it.
func (h *harness) fire(in *inst, fullName string) {
	h.t.Helper()
	single := len(h.runs) == 1 && h.runs[0].hasReg
	polls := h.metric("githubkit_polls_total", nil)
	ack, err := h.js.Publish(context.Background(), h.pollSubject(in.sc, fullName), []byte(`{"v":1}`))
	if err != nil {
		h.t.Fatal(err)
	}
	bustest.Eventually(h.t, "poll handled", func() bool {
		if single && h.metric("githubkit_polls_total", nil) <= polls {
			return false // a purge of the fired message moves the ack floor early
		}
		c, err := h.js.Consumer(context.Background(), githubkit.StreamName, githubkit.PollConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.AckFloor.Stream >= ack.Sequence && info.NumAckPending == 0
	})
}

// record reads a repo record (nil when absent).
func (h *harness) record(in *inst, fullName string) *githubkit.RepoRecord {
	h.t.Helper()
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(githubkit.Plugin))
	if err != nil {
		h.t.Fatal(err)
	}
	key, err := bus.Key(in.sc, githubkit.KindRepo, githubkit.RepoKey(fullName))
	if err != nil {
		h.t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	var r githubkit.RepoRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		h.t.Fatal(err)
	}
	return &r
}

// recordRev returns the KV revision of a repo record (0 when absent).
func (h *harness) recordRev(in *inst, fullName string) uint64 {
	h.t.Helper()
	kv, _ := h.js.KeyValue(context.Background(), bus.Bucket(githubkit.Plugin))
	key, _ := bus.Key(in.sc, githubkit.KindRepo, githubkit.RepoKey(fullName))
	e, err := kv.Get(context.Background(), key)
	if err != nil {
		return 0
	}
	return e.Revision()
}

// keys lists the keys of a bucket.
func (h *harness) keys(bucket string) []string {
	h.t.Helper()
	kv, err := h.js.KeyValue(context.Background(), bucket)
	if err != nil {
		h.t.Fatal(err)
	}
	lister, err := kv.ListKeys(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for k := range lister.Keys() {
		out = append(out, k)
	}
	return out
}

// schedule returns the Nats-Schedule header of a record's schedule message,
// or "" when there is none.
func (h *harness) schedule(in *inst, fullName string) string {
	h.t.Helper()
	st, err := h.js.Stream(context.Background(), githubkit.StreamName)
	if err != nil {
		h.t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(context.Background(), h.schedSubject(in.sc, fullName))
	if err != nil {
		return ""
	}
	return m.Header.Get("Nats-Schedule")
}

// addEvents appends fixture events with consecutive ids from first.
func (h *harness) addEvents(fullName string, first int64, fixtures ...string) {
	for i, f := range fixtures {
		h.fake.AddEvents(fullName, fakegithub.Event(f, first+int64(i)))
	}
}

// sends returns the send_message calls so far.
func (h *harness) sends() []bustest.HostCall { return h.host.Sends() }

func (h *harness) requestsTo(prefix string) []fakegithub.Request {
	var out []fakegithub.Request
	for _, r := range h.fake.Requests() {
		if strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

func jetstreamSubjects() jetstream.StreamInfoOpt { return jetstream.WithSubjectFilter(">") }

type bindingScope = binding.Scope

func mkHdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// newHarnessTB is newHarnessOn for benchmarks.
func newHarnessTB(tb testing.TB, srv *bustest.Server, nc *nats.Conn) *harness {
	return newHarnessOn(tb, srv, nc)
}
