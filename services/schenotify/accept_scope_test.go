package schenotify_test

import (
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

const (
	cfgEN = `{"language":"en_US","timezone":"UTC"}`
	cfgZH = `{"language":"zh_Hans","timezone":"UTC"}`
)

// O1, O3, O7: per-installation schedules, delivery under the captured
// binding with the idempotency key and a linked trace, nothing left after.
func TestO1ScheduleIsPerInstallation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(rec))
	e.start(t, testConfig(), nil, nil, tp)
	a, b := bind("installation-a", 1), bind("installation-b", 1)
	sa, sb := sess("bot", "person", "1"), sess("bot", "person", "2")
	T := nextSecond()
	idA := e.schedule(t, a, cfgEN, sa, map[string]any{"message": "A reminder", "time_str": rfc(T.Add(2 * time.Second))})
	e.schedule(t, b, cfgZH, sb, map[string]any{"message": "B reminder", "time_str": rfc(T.Add(4 * time.Second))})
	// O3: an attach that changes only the language changes nothing delivered.
	if _, err := bus.PublishAttach(t.Context(), e.js, wire.Subjects{}, schenotify.Plugin,
		wire.Attach{Binding: a, Config: []byte(`{"language":"zh_Hans","timezone":"UTC"}`), Enabled: true}, ""); err != nil {
		t.Fatal(err)
	}
	if got := e.list(t, b, cfgZH, sb); len(got) != 1 || got[0] != "B reminder" {
		t.Fatalf("B's list %q", got)
	}
	first := e.host.wait(t, 1, 5*time.Second)
	if sentText(first[0]) != "[Notify] A reminder" || first[0].Scope != scopeOf(a) {
		t.Fatalf("first send %q under %v", sentText(first[0]), first[0].Scope)
	}
	checkOnTime(t, first[0], T.Add(2*time.Second))
	if first[0].Request.Binding != a {
		t.Errorf("binding %+v, want all six fields of %+v", first[0].Request.Binding, a)
	}
	if want := scopeOf(a).String() + ":" + idA + ":" + rfc(T.Add(2*time.Second)); first[0].IdempotencyKey != want {
		t.Errorf("idempotency key %q, want %q", first[0].IdempotencyKey, want)
	}
	if d := first[0].SendMessage(); d.BotUUID != "bot" || d.TargetType != "person" || d.TargetID != "1" || len(d.MessageChain) != 1 || d.MessageChain[0].Type != "Plain" {
		t.Errorf("send data %+v", d)
	}
	if got := e.list(t, b, cfgZH, sb); len(got) != 1 {
		t.Fatalf("B not listed after A's delivery: %q", got)
	}
	all := e.host.wait(t, 2, 5*time.Second)
	if sentText(all[1]) != "[Notify] B reminder" || all[1].Scope != scopeOf(b) {
		t.Fatalf("second send %q under %v", sentText(all[1]), all[1].Scope)
	}
	checkOnTime(t, all[1], T.Add(4*time.Second))
	for _, bb := range []struct{ name string }{{"a"}, {"b"}} {
		sc := scopeOf(a)
		if bb.name == "b" {
			sc = scopeOf(b)
		}
		bustest.EventuallyWithin(t, 5*time.Second, "scope "+bb.name+" empty", func() bool {
			return len(e.reminderKeys(t, sc)) == 0 && e.streamMsgs(t, sc) == 0
		})
	}
	// O7: the handling span links to the scheduling trace.
	bustest.EventuallyWithin(t, 5*time.Second, "a linked consumer span", func() bool {
		for _, s := range rec.Ended() {
			if s.SpanKind().String() == "consumer" && len(s.Links()) > 0 && s.Links()[0].SpanContext.IsValid() {
				return true
			}
		}
		return false
	})
	if n := len(e.host.sends()); n != 2 {
		t.Errorf("%d sends, want 2", n)
	}
}

// O2: uninstall purges a scope; other scopes keep working.
func TestO2UninstallStopsScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	a, b := bind("installation-a", 1), bind("installation-b", 1)
	s := sess("bot", "group", "9")
	T := nextSecond()
	e.schedule(t, a, cfgEN, s, map[string]any{"message": "A reminder", "time_str": rfc(T.Add(3 * time.Second))})
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "B reminder", "time_str": rfc(T.Add(3 * time.Second))})
	if _, err := bus.PublishRevoke(t.Context(), e.js, wire.Subjects{}, schenotify.Plugin, wire.Revoke{Binding: a, Reason: wire.ReasonUninstall}, ""); err != nil {
		t.Fatal(err)
	}
	bustest.EventuallyWithin(t, 5*time.Second, "A purged", func() bool {
		k := e.keys(t, "langbot_schenotify", scopeOf(a))
		return len(k) == 1 && k[0] == scopeOf(a).String()+".authority" && len(e.keys(t, "langbot_schenotify_dedupe", scopeOf(a))) == 0 &&
			e.streamMsgs(t, scopeOf(a)) == 0
	})
	e.host.wait(t, 1, 6*time.Second)
	time.Sleep(time.Until(T.Add(6 * time.Second))) // the window in which A would have fired
	sends := e.host.sends()
	if len(sends) != 1 || sentText(sends[0]) != "[Notify] B reminder" {
		t.Fatalf("sends %q", e.host.texts())
	}
	if _, err := e.call(t, wire.EndpointTool, "", &wire.Request{Binding: a, Config: []byte(cfgEN),
		Tool: &wire.Tool{Name: schenotify.ToolList, Parameters: []byte(`{}`), Session: s}}); !isCode(err, 403) {
		t.Fatalf("invocation after uninstall: %v, want 403", err)
	}
}

// O2: goroutines do not grow with the number of scopes. The count is the
// process's, so this test must not run in parallel with others: their
// servers and services start and stop goroutines of their own.
func TestO2NoGoroutinePerScope(t *testing.T) {
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	s := sess("bot", "group", "9")
	far := rfc(time.Now().Add(time.Hour))
	e.schedule(t, bind("many-first", 1), cfgEN, s, map[string]any{"message": "x", "time_str": far})
	base := runtime.NumGoroutine()
	for i := range 200 {
		e.schedule(t, bind("many-"+strconv.Itoa(i), 1), cfgEN, s, map[string]any{"message": "x", "time_str": far})
	}
	bustest.EventuallyWithin(t, 5*time.Second, "goroutines settle", func() bool { return runtime.NumGoroutine() <= base+5 })
}

func isCode(err error, code int) bool {
	e, ok := wire.AsError(err)
	return err != nil && ok && e.Code == code
}

// O4, O6: the scope is the full binding; malformed or missing bindings
// are refused and leave no state; an unrelated revoke leaves others alone.
func TestO4ScopeKeyIsTheFullBinding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	s := sess("bot", "person", "1")
	w1, w2 := bindIn("workspace-1", "installation-a", 1), bindIn("workspace-2", "installation-a", 1)
	far := rfc(time.Now().Add(time.Hour))
	id1 := e.schedule(t, w1, cfgEN, s, map[string]any{"message": "in w1", "time_str": far})
	e.schedule(t, w2, cfgEN, s, map[string]any{"message": "in w2", "time_str": far})
	if got := e.list(t, w1, cfgEN, s); len(got) != 1 || got[0] != "in w1" {
		t.Fatalf("w1 list %q", got)
	}
	if got := e.list(t, w2, cfgEN, s); len(got) != 1 || got[0] != "in w2" {
		t.Fatalf("w2 list %q", got)
	}
	want := "instance-1.workspace-1.installation-a.reminder." + id1
	if k := e.reminderKeys(t, scopeOf(w1)); len(k) != 1 || k[0] != want {
		t.Fatalf("keys %v, want %s", k, want)
	}
	for _, tok := range []string{"a.b", "*", ""} {
		body := `{"binding":{"instance_uuid":"instance-1","workspace_uuid":"workspace-1","placement_generation":1,"installation_uuid":"` + tok +
			`","runtime_revision":1,"artifact_digest":"sha256:test"},"config":{},"tool":{"name":"schedule_notify","parameters":{"message":"x","delay":"5m"},"session":{"launcher_type":"person","launcher_id":"1","bot_uuid":"bot"}}}`
		_, err := e.inv.InvokeRaw(t.Context(), "langbot.plugin.schenotify.tool.instance-1.workspace-1.installation-z", bus.NewInvocationID(), []byte(body))
		if err == nil {
			t.Errorf("token %q accepted", tok)
		}
	}
	// O6: a binding-less invocation is a bad request and leaves no state
	// (on an installation that is attached: on one never attached the
	// dispatcher refuses it first, not_attached, leaving nothing either).
	z := bindIn("workspace-1", "installation-z", 1)
	if _, err := e.inv.InvokeRaw(t.Context(), "langbot.plugin.schenotify.tool.instance-1.workspace-1.installation-z", bus.NewInvocationID(),
		[]byte(`{}`)); !errors.Is(err, wire.ErrNotAttached) {
		t.Fatalf("never attached: %v, want 403 not_attached", err)
	}
	e.attached(t, z, json.RawMessage(`{}`))
	_, err := e.inv.InvokeRaw(t.Context(), "langbot.plugin.schenotify.tool.instance-1.workspace-1.installation-z", bus.NewInvocationID(),
		[]byte(`{"config":{},"tool":{"name":"schedule_notify","parameters":{"message":"x","delay":"5m"},"session":{"launcher_type":"person","launcher_id":"1","bot_uuid":"bot"}}}`))
	if !isCode(err, 400) {
		t.Fatalf("binding-less: %v, want 400", err)
	}
	for _, k := range e.keys(t, "langbot_schenotify", scopeOf(z)) {
		if k != bus.AuthorityKey(scopeOf(z)) { // the attach's
			t.Fatalf("state left: %s", k)
		}
	}
	// Revoking an unrelated binding leaves w1's reminder armed; it fires.
	if _, err := bus.PublishRevoke(t.Context(), e.js, wire.Subjects{}, schenotify.Plugin, wire.Revoke{Binding: bind("installation-other", 1), Reason: wire.ReasonUninstall}, ""); err != nil {
		t.Fatal(err)
	}
	T := nextSecond()
	e.schedule(t, w1, cfgEN, s, map[string]any{"message": "fires", "time_str": rfc(T.Add(time.Second))})
	got := e.host.wait(t, 1, 5*time.Second)
	if sentText(got[0]) != "[Notify] fires" {
		t.Fatalf("sent %q", sentText(got[0]))
	}
	if e.streamMsgs(t, scopeOf(w1)) == 0 {
		t.Fatalf("w1's far reminder lost its schedule")
	}
}

// O8, O9, O10, O11: sessions are the trusted triple.
func TestO8SessionIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	far := rfc(time.Now().Add(time.Hour))
	sA, sB, sG := sess("bot-a", "person", "42"), sess("bot-b", "person", "42"), sess("bot-a", "group", "42")
	e.schedule(t, b, cfgEN, sA, map[string]any{"message": "from bot-a", "time_str": far, "bot_uuid": "bot-b", "target_id": "7"})
	idB := e.schedule(t, b, cfgEN, sB, map[string]any{"message": "B reminder", "time_str": far})
	e.schedule(t, b, cfgEN, sG, map[string]any{"message": "group one", "time_str": far})
	for _, c := range []struct {
		s    wire.Session
		want string
	}{{sA, "from bot-a"}, {sB, "B reminder"}, {sG, "group one"}} {
		text := e.cmd(t, b, cfgEN, c.s, "!sche")
		if !strings.Contains(text, c.want) || strings.Count(text, "\n") != 1 {
			t.Errorf("!sche for %v: %q", c.s, text)
		}
	}
	if got := e.list(t, b, cfgEN, sB); len(got) != 1 || got[0] != "B reminder" {
		t.Fatalf("O11: bot-b sees %q", got)
	}
	// O9: launcher_id 42 as a number is the same session.
	raw, err := e.call(t, wire.EndpointTool, "", &wire.Request{Binding: b, Config: []byte(cfgEN),
		Tool: &wire.Tool{Name: schenotify.ToolList, Parameters: []byte(`{}`), Session: wire.Session{LauncherType: "person", LauncherID: "42", BotUUID: "bot-a"}}})
	if err != nil || !strings.Contains(string(raw), "from bot-a") {
		t.Fatalf("numeric launcher id: %s %v", raw, err)
	}
	var numeric wire.Session
	if err := jsonUnmarshal(`{"launcher_type":"person","launcher_id":42,"bot_uuid":"bot-a"}`, &numeric); err != nil || numeric.LauncherID != "42" {
		t.Fatalf("numeric id decodes as %q %v", numeric.LauncherID, err)
	}
	noBot := sess("", "person", "42")
	if r := e.tool(t, b, cfgEN, noBot, schenotify.ToolSchedule, map[string]any{"message": "x", "delay": "5m"}); r["code"] != "no_session" {
		t.Fatalf("tool without bot: %v", r)
	}
	if text := e.cmd(t, b, cfgEN, noBot, "!sche"); !strings.Contains(text, "Cannot tell which chat") {
		t.Fatalf("!sche without bot: %q", text)
	}
	// O8: bot-a cannot delete bot-b's reminder by id; bot-b can.
	if text := e.cmd(t, b, cfgEN, sA, "!dsche "+idB); !strings.Contains(text, "no reminder with id "+idB) {
		t.Fatalf("cross-bot delete: %q", text)
	}
	if got := e.list(t, b, cfgEN, sB); len(got) != 1 {
		t.Fatalf("bot-b's reminder gone: %q", got)
	}
	// O10: !dsche i 1 from bot-b deletes its own only.
	if text := e.cmd(t, b, cfgEN, sB, "!dsche i 1"); !strings.Contains(text, "Deleted reminder "+idB) {
		t.Fatalf("bot-b delete: %q", text)
	}
	if got := e.list(t, b, cfgEN, sB); len(got) != 0 {
		t.Fatalf("bot-b list after delete %q", got)
	}
	if got := e.list(t, b, cfgEN, sA); len(got) != 1 || got[0] != "from bot-a" {
		t.Fatalf("bot-a list changed: %q", got)
	}
	ix := e.index(t, scopeOf(b))
	if len(ix.Entries) != 2 {
		t.Fatalf("index has %d entries, want 2", len(ix.Entries))
	}
}

// O5: a fresh service has its stream and consumer and nothing else.
func TestO5FreshServiceStartsNoScheduler(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	st, err := e.js.Stream(t.Context(), schenotify.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 || !info.Config.AllowMsgSchedules || info.Config.MaxAge != 0 || info.Config.MaxMsgs > 0 || info.Config.MaxBytes > 0 {
		t.Fatalf("stream: %d msgs, config %+v", info.State.Msgs, info.Config)
	}
	c, err := st.Consumer(t.Context(), schenotify.DueConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if ci := c.CachedInfo(); ci.Config.AckWait != 30*time.Second || ci.Config.FilterSubject != "langbot.schenotify.due.>" {
		t.Fatalf("consumer %+v", ci.Config)
	}
	if k := e.keys(t, "langbot_schenotify", scopeOf(bind("installation-a", 1))); len(k) != 0 {
		t.Fatalf("keys %v", k)
	}
}

// Run stops intake and waits for its workers: after a delivery and a stop,
// no goroutine of the service, the runner or the JetStream consumer is
// left (the embedded server's own goroutines are not counted).
func TestRunLeavesNoGoroutines(t *testing.T) {
	e := newEnv(t)
	nc := e.srv.Conn(t)
	in := e.start(t, testConfig(), nc, nil, nil)
	if n, _ := ownedGoroutines(); n == 0 {
		t.Fatal("no service goroutines seen while running: the probe is blind")
	}
	T := nextSecond()
	e.schedule(t, bind("installation-a", 1), cfgEN, sess("bot", "person", "1"), map[string]any{"message": "x", "time_str": rfc(T.Add(time.Second))})
	e.host.wait(t, 1, 5*time.Second)
	in.stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, dump := ownedGoroutines()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines outlive Run:\n%s", n, dump)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ownedGoroutines counts the goroutines running code of this service, of
// pkg/bus, or of the nats.go jetstream and micro packages, other than the
// test's own.
func ownedGoroutines() (int, string) {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var dump strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "TestRunLeavesNoGoroutines") || strings.Contains(g, "testing.") {
			continue
		}
		if strings.Contains(g, "plugins/services/schenotify.") || strings.Contains(g, "plugins/pkg/bus.") ||
			strings.Contains(g, "nats.go/jetstream.") || strings.Contains(g, "nats.go/micro.") {
			n++
			dump.WriteString(g + "\n\n")
		}
	}
	return n, dump.String()
}
