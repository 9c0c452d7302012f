package schenotify_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// schedule reads the armed schedule of a reminder: its Nats-Schedule
// header and whether a zone header is present.
func (e *env) armed(t testing.TB, sc binding.Scope, id string) (string, bool) {
	t.Helper()
	st, err := e.js.Stream(t.Context(), schenotify.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := wire.Subjects{}.Internal(schenotify.Plugin, schenotify.KindSched, sc, id)
	m, err := st.GetLastMsgForSubject(t.Context(), subj)
	if err != nil {
		return "", false
	}
	_, hasZone := m.Header["Nats-Schedule-Time-Zone"]
	return m.Header.Get("Nats-Schedule"), hasZone
}

// armedFor is the Nats-Schedule header of a reminder due at due (RFC 3339):
// the schedule fires the default lead ahead of it.
func armedFor(due string) string {
	return "@at " + rfc(utc(due).Add(-schenotify.DefaultLead))
}

// fire injects a fired message for a reminder, as the server would.
func (e *env) fire(t testing.TB, sc binding.Scope, id string) {
	t.Helper()
	subj, _ := wire.Subjects{}.Internal(schenotify.Plugin, schenotify.KindDue, sc, id)
	if _, err := e.js.PublishMsg(t.Context(), &nats.Msg{Subject: subj, Data: []byte(`{"id":"` + id + `"}`)}); err != nil {
		t.Fatal(err)
	}
}

// N1: zones in tools and commands.
func TestN1TimeZones(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clock := bustest.FixedClock(time.Date(2030, 1, 1, 1, 0, 5, 0, time.UTC))
	e.start(t, testConfig(), nil, clock.Now, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	sh := `{"language":"en_US","timezone":"Asia/Shanghai"}`
	r := e.tool(t, b, sh, s, schenotify.ToolNow, map[string]any{"ignored": 1})
	if r["now"] != "2030-01-01T09:00:05+08:00" || r["weekday"] != "Tuesday" || r["local"] != "2030-01-01 09:00:05" || r["zone"] != "Asia/Shanghai" || r["offset"] != "+08:00" {
		t.Fatalf("now: %v", r)
	}
	mars := `{"language":"en_US","timezone":"Mars/Base"}`
	if r := e.tool(t, b, mars, s, schenotify.ToolNow, nil); r["zone"] != "UTC" || len(r["warnings"].([]any)) != 1 {
		t.Fatalf("bad zone tool: %v", r)
	}
	if text := e.cmd(t, b, mars, s, "!sche"); !strings.Contains(text, "Setting timezone has an invalid value") {
		t.Fatalf("bad zone command: %q", text)
	}
	r = e.tool(t, b, sh, s, schenotify.ToolSchedule, map[string]any{"message": "L", "time_str": "2030-01-02 09:00:00"})
	if r["due_utc"] != "2030-01-02T01:00:00Z" {
		t.Fatalf("form L: %v", r)
	}
	idL := r["id"].(string)
	r = e.tool(t, b, sh, s, schenotify.ToolSchedule, map[string]any{"message": "R", "time_str": "2030-01-02T09:00:00+02:00"})
	if r["due_utc"] != "2030-01-02T07:00:00Z" || r["due"] != "2030-01-02T15:00:00+08:00" {
		t.Fatalf("form R: %v", r)
	}
	e.schedule(t, b, sh, s, map[string]any{"message": "daily", "recurrence": "0 9 * * *"})
	if text := e.cmd(t, b, sh, s, "!sche"); !strings.Contains(text, "Asia/Shanghai (UTC+08:00)") {
		t.Fatalf("list header: %q", text)
	}
	// A later zone change moves nothing.
	tokyo := `{"language":"en_US","timezone":"Asia/Tokyo"}`
	text := e.cmd(t, b, tokyo, s, "!sche")
	if !strings.Contains(text, "2030-01-02 10:00:00") || !strings.Contains(text, "(Asia/Shanghai)") {
		t.Fatalf("after zone change: %q", text)
	}
	if rec := e.record(t, scopeOf(b), idL); rec.NextDue.Format(time.RFC3339) != "2030-01-02T01:00:00Z" {
		t.Fatalf("instant moved: %v", rec.NextDue)
	}
}

// N2: DST policy through the service with a fake clock and injected fires.
func TestN2DST(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clock := bustest.FixedClock(time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC))
	e.start(t, testConfig(), nil, clock.Now, nil)
	b := bind("installation-a", 1)
	sc := scopeOf(b)
	s := sess("bot", "person", "1")
	ny := `{"language":"en_US","timezone":"America/New_York"}`
	r := e.tool(t, b, ny, s, schenotify.ToolSchedule, map[string]any{"message": "gap", "time_str": "2030-03-10 02:30:00"})
	adj, _ := r["adjusted"].(map[string]any)
	if r["due"] != "2030-03-10T03:30:00-04:00" || adj["reason"] != "dst_gap" || !strings.Contains(r["text"].(string), "does not exist") {
		t.Fatalf("gap: %v", r)
	}
	r = e.tool(t, b, ny, s, schenotify.ToolSchedule, map[string]any{"message": "overlap", "time_str": "2030-11-03 01:30:00"})
	if adj, _ := r["adjusted"].(map[string]any); r["due_utc"] != "2030-11-03T05:30:00Z" || adj["reason"] != "dst_overlap" {
		t.Fatalf("overlap: %v", r)
	}
	r = e.tool(t, b, ny, s, schenotify.ToolSchedule, map[string]any{"message": "daily", "recurrence": "30 2 * * *", "time_str": "2030-03-09 00:00:00"})
	if !strings.Contains(strings.Join(toStrings(r["next"]), ","), "2030-03-10T03:30:00-04:00") {
		t.Fatalf("next: %v", r["next"])
	}
	id := r["id"].(string)
	steps := []struct{ at, want string }{
		{"2030-03-09T07:30:00Z", armedFor("2030-03-10T07:30:00Z")},
		{"2030-03-10T07:30:00Z", armedFor("2030-03-11T06:30:00Z")},
	}
	for i, st := range steps {
		clock.Set(utc(st.at))
		e.fire(t, sc, id)
		e.host.wait(t, i+1, 5*time.Second)
		bustest.EventuallyWithin(t, 5*time.Second, "armed "+st.want, func() bool {
			got, zone := e.armed(t, sc, id)
			return got == st.want && !zone
		})
	}
	r = e.tool(t, b, ny, s, schenotify.ToolSchedule, map[string]any{"message": "once a day", "recurrence": "30 1 * * *", "time_str": "2030-11-03 00:00:00"})
	id2 := r["id"].(string)
	clock.Set(utc("2030-11-03T05:30:00Z"))
	e.fire(t, sc, id2)
	e.host.wait(t, 3, 5*time.Second)
	bustest.EventuallyWithin(t, 5*time.Second, "armed for 11-04", func() bool {
		got, _ := e.armed(t, sc, id2)
		return got == armedFor("2030-11-04T06:30:00Z")
	})
	clock.Set(utc("2030-11-03T06:30:00Z"))
	e.fire(t, sc, id2) // stale: not due
	bustest.EventuallyWithin(t, 5*time.Second, "stale fire handled", func() bool {
		return counter(t, e, "not_due") >= 1
	})
	if got, zone := e.armed(t, sc, id2); got != armedFor("2030-11-04T06:30:00Z") || zone {
		t.Fatalf("after stale fire: %q zone %v", got, zone)
	}
	if n := len(e.host.sends()); n != 3 {
		t.Fatalf("%d sends, want 3", n)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// counter reads schenotify_deliveries_total{outcome} from the last started
// instance of e.
func counter(t testing.TB, e *env, outcome string) float64 {
	t.Helper()
	return e.last.counter(t, "schenotify_deliveries_total", "outcome", outcome)
}

// N3: recurrence armed one occurrence at a time.
func TestN3Recurrence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := testConfig()
	cfg.MinEvery = time.Second
	e.start(t, cfg, nil, nil, nil)
	a, b := bind("installation-a", 1), bind("installation-b", 1)
	s := sess("bot", "person", "1")
	var mu sync.Mutex
	failedB := false
	e.host.respond(func(c bustest.HostCall) hostAction {
		mu.Lock()
		defer mu.Unlock()
		if c.Scope == scopeOf(b) && !failedB {
			failedB = true
			return hostAction{Err: wire.Errorf(wire.ErrUnavailable, "busy")}
		}
		return hostAction{}
	})
	T := nextSecond()
	params := map[string]any{"message": "tick", "recurrence": "@every 2s", "time_str": rfc(T.Add(time.Second)), "until": rfc(T.Add(6 * time.Second))}
	idA := e.schedule(t, a, cfgEN, s, params)
	idB := e.schedule(t, b, cfgEN, s, params)
	e.host.wait(t, 7, 10*time.Second)
	bustest.EventuallyWithin(t, 5*time.Second, "records gone", func() bool {
		return e.record(t, scopeOf(a), idA) == nil && e.record(t, scopeOf(b), idB) == nil
	})
	time.Sleep(500 * time.Millisecond)
	byScope := map[binding.Scope][]bustest.HostCall{}
	for _, c := range e.host.sends() {
		byScope[c.Scope] = append(byScope[c.Scope], c)
	}
	check := func(name string, calls []bustest.HostCall, due []int) {
		if len(calls) != len(due) {
			t.Fatalf("%s: %d sends, want %d", name, len(calls), len(due))
		}
		keys := map[string]bool{}
		for i, c := range calls {
			checkOnTime(t, c, T.Add(time.Duration(due[i])*time.Second))
			keys[c.IdempotencyKey] = true
		}
		if name == "a" && len(keys) != 3 {
			t.Errorf("%s: keys not distinct: %v", name, keys)
		}
	}
	check("a", byScope[scopeOf(a)], []int{1, 3, 5})
	check("b", byScope[scopeOf(b)], []int{1, 2, 3, 5})
	if k := byScope[scopeOf(b)]; k[0].IdempotencyKey != k[1].IdempotencyKey {
		t.Errorf("retry key %q differs from %q", k[1].IdempotencyKey, k[0].IdempotencyKey)
	}
	for _, expr := range []string{"@every 1d12h", "@every PT90M"} {
		e.schedule(t, a, cfgEN, s, map[string]any{"message": "ok", "recurrence": expr})
	}
}

// N3 at the default minimum, through a fresh service.
func TestN3RecurrenceRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	for expr, code := range map[string]string{
		"@every 30s": "interval_too_short", "TZ=UTC 0 9 * * *": "invalid_recurrence", "CRON_TZ=UTC 0 9 * * *": "invalid_recurrence",
		"0 0 9 * * *": "invalid_recurrence", "0 0 30 2 *": "invalid_recurrence",
	} {
		if r := e.tool(t, b, cfgEN, s, schenotify.ToolSchedule, map[string]any{"message": "x", "recurrence": expr}); r["code"] != code || r["field"] != "recurrence" {
			t.Errorf("%q: %v", expr, r)
		}
	}
}

// N3 long mode: "* * * * *" fires at the next minute boundary.
func TestN3EveryMinuteLong(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a minute boundary")
	}
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	id := e.schedule(t, b, cfgEN, sess("bot", "person", "1"), map[string]any{"message": "minute", "recurrence": "* * * * *"})
	due := time.Now().Truncate(time.Minute).Add(time.Minute)
	calls := e.host.wait(t, 1, 65*time.Second)
	checkOnTime(t, calls[0], due)
	bustest.EventuallyWithin(t, 5*time.Second, "next minute armed", func() bool {
		got, zone := e.armed(t, scopeOf(b), id)
		return got == armedFor(rfc(due.Add(time.Minute))) && !zone
	})
}

var (
	_ = json.Marshal
	_ jetstream.JetStream
)
