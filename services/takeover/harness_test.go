package takeover_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
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
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// harness is one takeover replica on an embedded server, a fake host and an
// invoker.
type harness struct {
	t     testing.TB
	srv   *bustest.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	host  *bustest.Host
	hostC *nats.Conn       // the host's connection (closing it leaves no host)
	inv   *bustest.Invoker // attaches an installation before its first invocation
	svc   *takeover.Service
	all   []*takeover.Service // every replica started
	clock bustest.Clock       // the replicas' clock
	regs  []*prometheus.Registry
	stop  func()
	opts  []func(*takeover.Config)
	// logger receives the replicas' logs; nil: testLogger()
	logger *slog.Logger
}

// newHarness starts a server and one replica; opts adjust the replicas'
// configuration.
func newHarness(t testing.TB, opts ...func(*takeover.Config)) *harness {
	t.Helper()
	return newHarnessOn(t, bustest.NewServer(t), opts...)
}

// newHarnessOn is newHarness on a server of the caller's.
func newHarnessOn(t testing.TB, srv *bustest.Server, opts ...func(*takeover.Config)) *harness {
	t.Helper()
	return (&harness{t: t, srv: srv, opts: opts}).init()
}

// newLoggedHarness is newHarness with the replicas' logs written, as JSON,
// to logs.
func newLoggedHarness(t testing.TB, logs *bustest.LogBuffer, opts ...func(*takeover.Config)) *harness {
	t.Helper()
	h := &harness{t: t, srv: bustest.NewServer(t), opts: opts, logger: slog.New(slog.NewJSONHandler(logs, nil))}
	return h.init()
}

// init connects the harness to its server and starts its first replica.
func (h *harness) init() *harness {
	t, srv := h.t, h.srv
	h.nc = srv.Conn(t)
	h.js = srv.JetStream(t)
	h.hostC = srv.Conn(t)
	h.host = bustest.NewHost(t, h.hostC, wire.Subjects{})
	h.inv = bustest.NewInvoker(t, bus.NewInvoker(srv.Conn(t), wire.Subjects{}, nil), h.js, h.runners)
	h.svc = h.startReplica(h.nc)
	return h
}

// startReplica runs one more service replica on nc until cleanup.
func (h *harness) startReplica(nc *nats.Conn) *takeover.Service {
	h.t.Helper()
	reg := prometheus.NewRegistry()
	h.regs = append(h.regs, reg)
	cfg := takeover.Config{
		MinTakeoverTimeout: time.Second,
		NoticeRetry:        []time.Duration{50 * time.Millisecond},
		HostTimeout:        time.Second,
	}
	for _, o := range h.opts {
		o(&cfg)
	}
	logger := h.logger
	if logger == nil {
		logger = testLogger()
	}
	svc, err := takeover.New(cfg, bus.Deps{Conn: nc, Clock: h.now, Registerer: reg, Logger: logger})
	if err != nil {
		h.t.Fatal(err)
	}
	run := bustest.Start(h.t, svc)
	h.all = append(h.all, svc)
	stop := func() { run.Stop() }
	if h.stop == nil {
		h.stop = stop
	}
	return svc
}

func (h *harness) now() time.Time { return h.clock.Now() }

// runners returns the runners of the replicas started.
func (h *harness) runners() []*bus.Runner {
	var out []*bus.Runner
	for _, svc := range h.all {
		out = append(out, svc.Runner())
	}
	return out
}

var genCounter atomic.Int64

// newBinding returns a fresh installation's binding.
func newBinding(name string) binding.Binding {
	n := genCounter.Add(1)
	return binding.Binding{InstanceUUID: "inst", WorkspaceUUID: "ws", InstallationUUID: fmt.Sprintf("%s-%d", name, n),
		PlacementGeneration: 1, RuntimeRevision: 1, ArtifactDigest: "sha256:test"}
}

// attach publishes an attach and waits until the service's view has it.
func (h *harness) attach(b binding.Binding, config string, enabled bool) {
	h.t.Helper()
	bustest.Attach(h.t, h.js, takeover.Plugin, b, json.RawMessage(config), enabled)
	sc, _ := b.Scope()
	want := bus.StateActive
	if !enabled {
		want = bus.StateDisabled
	}
	bustest.WaitAuthority(h.t, h.svc.Runner(), sc, func(a bus.Authority) bool {
		return a.State == want && a.Binding.Compare(b) == 0
	})
}

func (h *harness) revoke(b binding.Binding, reason string, want bus.State) {
	h.t.Helper()
	bustest.Revoke(h.t, h.js, takeover.Plugin, b, reason)
	sc, _ := b.Scope()
	bustest.WaitAuthority(h.t, h.svc.Runner(), sc, func(a bus.Authority) bool { return a.State == want })
}

// msgData is the data of a MessageReceived event.
func msgData(ltype string, lid any, sender any, chain string) json.RawMessage {
	l, _ := json.Marshal(lid)
	s, _ := json.Marshal(sender)
	return json.RawMessage(fmt.Sprintf(`{"launcher_type":%q,"launcher_id":%s,"sender_id":%s,"message_event":{"sender":{"nickname":"Nick","member_name":"Member","group":{"name":"Group"}}},"message_chain":%s}`,
		ltype, l, s, chain))
}

func plain(text string) string {
	b, _ := json.Marshal([]map[string]string{{"type": "Plain", "text": text}})
	return string(b)
}

func aiData(ltype string, lid any, text string) json.RawMessage {
	l, _ := json.Marshal(lid)
	t, _ := json.Marshal(text)
	return json.RawMessage(fmt.Sprintf(`{"launcher_type":%q,"launcher_id":%s,"sender_id":%s,"response_text":%s}`, ltype, l, l, t))
}

// event invokes an event and returns the reply.
func (h *harness) event(b binding.Binding, config, name, bot string, data json.RawMessage) (wire.EventReply, error) {
	return h.eventID(b, config, name, bot, data, bus.NewInvocationID())
}

func (h *harness) eventID(b binding.Binding, config, name, bot string, data json.RawMessage, id string) (wire.EventReply, error) {
	return h.eventOf(b, config, &wire.Event{Name: name, BotUUID: bot, Data: data}, id)
}

// eventOf invokes ev, as given, under invocation id id.
func (h *harness) eventOf(b binding.Binding, config string, ev *wire.Event, id string) (wire.EventReply, error) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	raw, err := h.inv.Invoke(ctx, takeover.Plugin, wire.EndpointEvent, id, &wire.Request{
		Binding: b, Config: json.RawMessage(config), Event: ev,
	})
	var r wire.EventReply
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		h.t.Fatal(err)
	}
	return r, nil
}

// mustEvent invokes an event that must succeed.
func (h *harness) mustEvent(b binding.Binding, config, name, bot string, data json.RawMessage) wire.EventReply {
	h.t.Helper()
	r, err := h.event(b, config, name, bot, data)
	if err != nil {
		h.t.Fatalf("event %s: %v", name, err)
	}
	return r
}

// page invokes a console operation; out receives data when non-nil.
func (h *harness) page(b binding.Binding, config, method, endpoint string, body any, out any) error {
	h.t.Helper()
	return h.pageAs(b, config, method, endpoint, body, "", out)
}

func (h *harness) pageAs(b binding.Binding, config, method, endpoint string, body any, operator string, out any) error {
	h.t.Helper()
	return h.pageCall(b, config, method, endpoint, body, operator, bus.NewInvocationID(), out)
}

// pageCall is one attempt of a console operation under invocation id id
// (a host retry reuses it).
func (h *harness) pageCall(b binding.Binding, config, method, endpoint string, body any, operator, id string, out any) error {
	h.t.Helper()
	raw, _ := json.Marshal(body)
	var caller json.RawMessage
	if operator != "" {
		caller, _ = json.Marshal(map[string]string{"operator": operator})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reply, err := h.inv.Invoke(ctx, takeover.Plugin, wire.EndpointPage, id, &wire.Request{
		Binding: b, Config: json.RawMessage(config),
		Page: &wire.Page{PageID: "console", Endpoint: endpoint, Method: method, Body: raw, Caller: caller},
	})
	if err != nil {
		return err
	}
	if out != nil {
		var pr struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(reply, &pr); err != nil {
			h.t.Fatal(err)
		}
		if err := json.Unmarshal(pr.Data, out); err != nil {
			h.t.Fatalf("decode %s: %v", endpoint, err)
		}
	}
	return nil
}

func (h *harness) mustPage(b binding.Binding, config, method, endpoint string, body any, out any) {
	h.t.Helper()
	if err := h.page(b, config, method, endpoint, body, out); err != nil {
		h.t.Fatalf("%s %s: %v", method, endpoint, err)
	}
}

// messages reads a session's history through the console (newest first).
func (h *harness) messages(b binding.Binding, config, sid string) takeover.MessagePage {
	h.t.Helper()
	var p takeover.MessagePage
	h.mustPage(b, config, "GET", "/messages", map[string]any{"sid": sid, "limit": 200}, &p)
	return p
}

// record reads a stored session record directly.
func (h *harness) record(b binding.Binding, sid string) *model.Record {
	h.t.Helper()
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
	if err != nil {
		h.t.Fatal(err)
	}
	sc, _ := b.Scope()
	key, _ := bus.Key(sc, "session", sid)
	e, err := kv.Get(context.Background(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	r, err := model.DecodeRecord(e.Value())
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// historyOf returns the stream and subject of a session's history.
func historyOf(t testing.TB, js jetstream.JetStream, sc binding.Scope, sid string) (jetstream.Stream, string) {
	t.Helper()
	_, name, subj := store.HistoryOf(wire.Subjects{}, sc, sid)
	st, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st, subj
}

// historyState sums the states of the history shards: the sum of their
// last sequences grows with every append anywhere.
func historyState(t testing.TB, js jetstream.JetStream) (lastSeqs, msgs, bytes uint64) {
	t.Helper()
	for k := range store.HistoryShards {
		st, err := js.Stream(context.Background(), store.HistoryStream(k))
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		lastSeqs += info.State.LastSeq
		msgs += info.State.Msgs
		bytes += info.State.Bytes
	}
	return lastSeqs, msgs, bytes
}

// waitAcks waits for the acknowledgement of every async publish and fails
// on the first error.
func waitAcks(t testing.TB, futures []jetstream.PubAckFuture) {
	t.Helper()
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatal(err)
		case <-time.After(30 * time.Second):
			t.Fatal("no publish acknowledgement in 30 s")
		}
	}
}

// holdOp holds every storage call op of scope sc until release: held
// receives once per call that reached the hold (the first 16). release
// lets them all go and removes the fault; it runs at cleanup too, and
// more than once is fine.
func (h *harness) holdOp(op string, sc binding.Scope) (held <-chan struct{}, release func()) {
	gate, reached := make(chan struct{}), make(chan struct{}, 16)
	takeover.SetFault(h.svc, func(o string, s binding.Scope) error {
		if o == op && s == sc {
			select {
			case reached <- struct{}{}:
			default: // more calls than anyone counts: never block on the count
			}
			<-gate
		}
		return nil
	})
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(gate)
			takeover.SetFault(h.svc, nil)
		})
	}
	h.t.Cleanup(release)
	return reached, release
}

// historyCount counts the stored messages on a session's history subject.
func (h *harness) historyCount(b binding.Binding, sid string) int {
	h.t.Helper()
	sc, _ := b.Scope()
	st, subj := historyOf(h.t, h.js, sc, sid)
	info, err := st.Info(context.Background(), jetstream.WithSubjectFilter(subj))
	if err != nil {
		h.t.Fatal(err)
	}
	return int(info.State.Subjects[subj])
}

func sidOf(bot, ltype string, lid any) string {
	return model.SID(model.SessionKey(bot, ltype, fmt.Sprint(lid)))
}

func isCode(err error, code int, reason string) bool {
	var e *wire.Error
	return errors.As(err, &e) && e.Code == code && (reason == "" || e.Reason == reason)
}

// metric sums a counter over every replica, for series whose labels
// include all of labels.
func (h *harness) metric(name string, labels map[string]string) float64 {
	h.t.Helper()
	var sum float64
	for _, reg := range h.regs {
		sum += bustest.Metric(h.t, reg, name, labels)
	}
	return sum
}

// keys lists every key of a bucket.
func (h *harness) keys(bucket string) []string {
	h.t.Helper()
	kv, err := h.js.KeyValue(context.Background(), bucket)
	if err != nil {
		h.t.Fatal(err)
	}
	// A listing whose entries expire while it runs (a TTL bucket) can miss
	// its end-of-initial-values marker and never end (nats.go's watcher):
	// each try is bounded, and a cut-short listing is tried again, never
	// taken for a complete one.
	for try := 0; try < 5; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		l, err := kv.ListKeys(ctx)
		if err != nil {
			cancel()
			h.t.Fatal(err)
		}
		var out []string
		for k := range l.Keys() {
			out = append(out, k)
		}
		cut := ctx.Err() != nil
		cancel()
		if !cut {
			return out
		}
	}
	h.t.Fatalf("listing the keys of %s never finished", bucket)
	return nil
}

// putRecord writes a record directly, as another replica or an import would.
func (h *harness) putRecord(b binding.Binding, sid string, r *model.Record) {
	h.t.Helper()
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
	if err != nil {
		h.t.Fatal(err)
	}
	sc, _ := b.Scope()
	key, _ := bus.Key(sc, "session", sid)
	v, _ := json.Marshal(r)
	rev, err := kv.Put(context.Background(), key, v)
	if err != nil {
		h.t.Fatal(err)
	}
	// as another replica's write would be, it is seen by a live view
	// before the next event (the recording reads the record from there)
	bustest.Eventually(h.t, "the view to see the record", func() bool {
		seen, live := takeover.ViewRevision(h.svc, sc, sid)
		return !live || seen >= rev
	})
}

// testLogger discards logs unless TAKEOVER_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("TAKEOVER_TEST_LOG") != "" {
		return slog.Default()
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
