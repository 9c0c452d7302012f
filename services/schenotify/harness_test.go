package schenotify_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
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
	"github.com/langbot-nats/plugins/services/schenotify"
)

// sentText is the text of a send_message the fake host received: its
// Plain component, after the At mentions of a group delivery and the space
// that follows them.
func sentText(c bustest.HostCall) string {
	m := c.SendMessage()
	for _, p := range m.MessageChain {
		if p.Type == "Plain" {
			if m.MessageChain[0].Type == "At" {
				return strings.TrimPrefix(p.Text, " ")
			}
			return p.Text
		}
	}
	return ""
}

// hostAction says how the fake host answers one send_message.
type hostAction struct {
	Err  *wire.Error   // error reply
	Hang chan struct{} // answer (success) only once closed
	Drop bool          // never answer
}

// fakeHost is bustest.Host answering through hostAction.
type fakeHost struct{ *bustest.Host }

func newFakeHost(t testing.TB, nc *nats.Conn) *fakeHost {
	t.Helper()
	return &fakeHost{bustest.NewHost(t, nc, wire.Subjects{})}
}

func (h *fakeHost) respond(f func(bustest.HostCall) hostAction) {
	h.Respond(func(c bustest.HostCall) bustest.HostReply {
		a := f(c)
		if a.Hang != nil && !a.Drop && a.Err == nil {
			<-a.Hang // bustest.Host answers each call on its own goroutine
		}
		return bustest.HostReply{Err: a.Err, Drop: a.Drop}
	})
}

func (h *fakeHost) sends() []bustest.HostCall { return h.Sends() }

func (h *fakeHost) texts() []string {
	var out []string
	for _, c := range h.sends() {
		out = append(out, sentText(c))
	}
	return out
}

// wait waits until at least n calls arrived, up to timeout.
func (h *fakeHost) wait(t testing.TB, n int, timeout time.Duration) []bustest.HostCall {
	t.Helper()
	h.WaitSends(t, n, timeout)
	return h.sends()
}

// env is one embedded server with a fake host and an invoker.
type env struct {
	srv  *bustest.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	inv  *bus.Invoker
	host *fakeHost
	last *instance // the instance started last
	all  []*instance
}

func newEnv(t testing.TB) *env {
	t.Helper()
	srv := bustest.NewServer(t)
	nc := srv.Conn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{srv: srv, nc: nc, js: js, inv: bus.NewInvoker(nc, wire.Subjects{}, nil)}
	e.host = newFakeHost(t, nc)
	return e
}

// instance is one running service.
type instance struct {
	svc  *schenotify.Service
	logs *bustest.LogBuffer
	reg  *prometheus.Registry
	stop func()
}

// testConfig is the default configuration of tests: quick sweeps off,
// the UTC default zone.
func testConfig() schenotify.Config {
	return schenotify.Config{DefaultZone: "UTC", SweepDelay: -1, SweepInterval: time.Hour, DueWorkers: 16, Workers: 16}
}

// start runs a service on nc until the test ends (or stop is called).
func (e *env) start(t testing.TB, cfg schenotify.Config, nc *nats.Conn, clock func() time.Time, tp trace.TracerProvider) *instance {
	t.Helper()
	if nc == nil {
		nc = e.srv.Conn(t)
	}
	logs := &bustest.LogBuffer{}
	reg := prometheus.NewRegistry()
	svc, err := schenotify.New(cfg, bus.Deps{Conn: nc, Clock: clock, TracerProvider: tp, Registerer: reg,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	run := bustest.Start(t, svc)
	in := &instance{svc: svc, logs: logs, reg: reg, stop: func() { run.Stop() }}

	e.last = in
	e.all = append(e.all, in)
	return in
}

// counter reads a counter, gauge or histogram (its sample count) with one
// label ("" for none) from the instance's registry.
func (in *instance) counter(t testing.TB, name, label, value string) float64 {
	t.Helper()
	labels := map[string]string{}
	if label != "" {
		labels[label] = value
	}
	return bustest.Metric(t, in.reg, name, labels)
}

func bind(installation string, rev int64) binding.Binding {
	return bindIn("workspace-1", installation, rev)
}

func bindIn(workspace, installation string, rev int64) binding.Binding {
	return binding.Binding{InstanceUUID: "instance-1", WorkspaceUUID: workspace, PlacementGeneration: 1,
		InstallationUUID: installation, RuntimeRevision: rev, ArtifactDigest: "sha256:test"}
}

func sess(bot, typ, id string) wire.Session {
	return wire.Session{LauncherType: typ, LauncherID: wire.ID(id), SenderID: wire.ID("sender-" + id), BotUUID: bot}
}

// call invokes the plugin; cfg is the installation config JSON.
func (e *env) call(t testing.TB, ep wire.Endpoint, invID string, req *wire.Request) (json.RawMessage, error) {
	t.Helper()
	if invID == "" {
		invID = bus.NewInvocationID()
	}
	e.attached(t, req.Binding, req.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return e.inv.Invoke(ctx, schenotify.Plugin, ep, invID, req)
}

// attached attaches b's installation (with cfg) the first time the test
// uses it, as its host would before invoking, unless the test attached
// it itself, and waits until every running instance knows it.
func (e *env) attached(t testing.TB, b binding.Binding, cfg json.RawMessage) {
	t.Helper()
	if b.Validate() != nil {
		return // a malformed binding is refused before the authority
	}
	if !json.Valid(cfg) {
		cfg = nil
	}
	bustest.EnsureAttached(t, e.js, schenotify.Plugin, b, cfg)
	for _, in := range e.all {
		if in.svc.Ready() {
			bustest.WaitAuthority(t, in.svc.Runner(), bus.ScopeOf(b), nil)
		}
	}
}

// tool calls a tool and returns its result object.
func (e *env) tool(t testing.TB, b binding.Binding, cfg string, s wire.Session, name string, params any) map[string]any {
	t.Helper()
	return e.toolID(t, "", b, cfg, s, name, params)
}

func (e *env) toolID(t testing.TB, invID string, b binding.Binding, cfg string, s wire.Session, name string, params any) map[string]any {
	t.Helper()
	p, _ := json.Marshal(params)
	raw, err := e.call(t, wire.EndpointTool, invID, &wire.Request{Binding: b, Config: json.RawMessage(cfg),
		Tool: &wire.Tool{Name: name, Parameters: p, Session: s}})
	if err != nil {
		t.Fatalf("tool %s: %v", name, err)
	}
	var reply struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil || reply.Result == nil {
		t.Fatalf("tool %s reply %s: %v", name, raw, err)
	}
	return reply.Result
}

// cmd sends a chat command ("!sche add ...") and returns the reply text.
func (e *env) cmd(t testing.TB, b binding.Binding, cfg string, s wire.Session, full string) string {
	t.Helper()
	text, err := e.cmdErr(t, "", b, cfg, s, full)
	if err != nil {
		t.Fatalf("command %q: %v", full, err)
	}
	return text
}

func (e *env) cmdErr(t testing.TB, invID string, b binding.Binding, cfg string, s wire.Session, full string) (string, error) {
	t.Helper()
	words := strings.Split(full, " ")
	raw, err := e.call(t, wire.EndpointCommand, invID, &wire.Request{Binding: b, Config: json.RawMessage(cfg),
		Command: &wire.Command{Name: strings.TrimPrefix(words[0], "!"), Params: words[1:], FullText: full, Session: s}})
	if err != nil {
		return "", err
	}
	var reply wire.CommandReply
	if err := json.Unmarshal(raw, &reply); err != nil || len(reply.Returns) != 1 {
		t.Fatalf("command %q reply %s: %v", full, raw, err)
	}
	return reply.Returns[0].Text, nil
}

// schedule sets a reminder through the tool and fails the test unless ok.
func (e *env) schedule(t testing.TB, b binding.Binding, cfg string, s wire.Session, params map[string]any) string {
	t.Helper()
	r := e.tool(t, b, cfg, s, schenotify.ToolSchedule, params)
	if r["status"] != "ok" {
		t.Fatalf("schedule_notify %v: %v", params, r)
	}
	return r["id"].(string)
}

// list returns the messages of a session's reminders (list tool).
func (e *env) list(t testing.TB, b binding.Binding, cfg string, s wire.Session) []string {
	t.Helper()
	r := e.tool(t, b, cfg, s, schenotify.ToolList, map[string]any{})
	if r["status"] != "ok" {
		t.Fatalf("list: %v", r)
	}
	var out []string
	for _, it := range r["reminders"].([]any) {
		out = append(out, it.(map[string]any)["message"].(string))
	}
	return out
}

// nextSecond is T, the next whole second.
// nextSecond is a whole second at least one second ahead: the add that
// names it must still find it in the future (the reader refuses a time
// that is not), and on a loaded machine the add can take most of a second
// to run (a clean-clone CI run refused the very next second twice).
func nextSecond() time.Time { return time.Now().Truncate(time.Second).Add(2 * time.Second) }

func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// keys lists the scope's keys in the plugin bucket (and the dedupe bucket).
func (e *env) keys(t testing.TB, bucket string, sc binding.Scope) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := e.js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	l, err := kv.ListKeysFiltered(ctx, sc.String()+".>")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil
		}
		t.Fatal(err)
	}
	var out []string
	for k := range l.Keys() {
		out = append(out, k)
	}
	return out
}

// reminderKeys lists the scope's reminder keys.
func (e *env) reminderKeys(t testing.TB, sc binding.Scope) []string {
	var out []string
	for _, k := range e.keys(t, bus.Bucket(schenotify.Plugin), sc) {
		if strings.Contains(k, ".reminder.") {
			out = append(out, k)
		}
	}
	return out
}

// streamMsgs counts the stream's messages on the scope's subjects.
func (e *env) streamMsgs(t testing.TB, sc binding.Scope) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := e.js.Stream(ctx, schenotify.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, kind := range []string{schenotify.KindSched, schenotify.KindDue} {
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(wire.Subjects{}.InternalScope(schenotify.Plugin, kind, sc)))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range info.State.Subjects {
			n += c
		}
	}
	return n
}

// checkOnTime checks that a send arrived in [due, due+2s].
func checkOnTime(t testing.TB, c bustest.HostCall, due time.Time) {
	t.Helper()
	if c.At.Before(due) || c.At.After(due.Add(2*time.Second)) {
		t.Errorf("%q arrived at %s, due %s", sentText(c), c.At.Format(time.StampMilli), due.Format(time.StampMilli))
	}
}

func scopeOf(b binding.Binding) binding.Scope { return bus.ScopeOf(b) }

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// index reads a scope's index.
func (e *env) index(t testing.TB, sc binding.Scope) schenotify.Index {
	t.Helper()
	kv, err := e.js.KeyValue(t.Context(), bus.Bucket(schenotify.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(t.Context(), sc.String()+".index")
	if err != nil {
		t.Fatal(err)
	}
	var ix schenotify.Index
	if err := json.Unmarshal(entry.Value(), &ix); err != nil {
		t.Fatal(err)
	}
	return ix
}

// record reads a reminder record (nil when absent).
func (e *env) record(t testing.TB, sc binding.Scope, id string) *schenotify.Record {
	t.Helper()
	kv, err := e.js.KeyValue(t.Context(), bus.Bucket(schenotify.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(t.Context(), sc.String()+".reminder."+id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var r schenotify.Record
	if err := json.Unmarshal(entry.Value(), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}
