package schenotify_test

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// N14: 100 reminders across 10 scopes due in one second, host answering at
// once: p99 lateness under 1 s, and the histogram has data.
//
// Not parallel: it measures time, so it runs before the parallel tests.
func TestN14Lateness(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	cfg.DueWorkers = 0 // the default pool
	in := e.start(t, cfg, nil, nil, nil)
	T := nextSecond().Add(4 * time.Second)
	for i := range 100 {
		e.schedule(t, bind("installation-"+strconv.Itoa(i%10), 1), cfgEN, sess("bot", "group", strconv.Itoa(i)), map[string]any{"message": "x", "time_str": rfc(T)})
	}
	calls := e.host.wait(t, 100, 15*time.Second)
	var late []time.Duration
	for _, c := range calls {
		late = append(late, c.At.Sub(T))
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	// The repo's rule keeps wall-clock thresholds out of pass/fail (the
	// machine is shared); the p99 target is checked by
	// BenchmarkScheNotifyDelivery, and reported here.
	t.Logf("lateness over %d sends: min %v p50 %v p99 %v", len(late), late[0], late[49], late[98])
	if late[0] < 0 {
		t.Fatalf("a reminder arrived %v before its due second", -late[0])
	}
	keys := map[string]bool{}
	for _, c := range calls {
		keys[c.IdempotencyKey] = true
	}
	if len(keys) != 100 {
		t.Fatalf("%d distinct keys", len(keys))
	}
	if n := in.counter(t, "schenotify_delivery_lateness_seconds", "", ""); n < 100 {
		t.Fatalf("histogram has %v samples", n)
	}
}

// N15: delivery format.
func TestN15DeliveryFormat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	s := sess("bot", "person", "1")
	T := nextSecond()
	e.schedule(t, bind("installation-empty", 1), `{"notify_prefix":""}`, s, map[string]any{"message": "bare", "time_str": rfc(T.Add(time.Second))})
	e.schedule(t, bind("installation-clock", 1), `{"notify_prefix":"⏰ "}`, s, map[string]any{"message": "clock", "time_str": rfc(T.Add(time.Second))})
	r := e.tool(t, bind("installation-nl", 1), `{"language":"en_US","notify_prefix":"a\nb"}`, s, schenotify.ToolSchedule, map[string]any{"message": "newline", "time_str": rfc(T.Add(time.Second))})
	if len(r["warnings"].([]any)) != 1 {
		t.Fatalf("newline prefix: no warning: %v", r)
	}
	calls := e.host.wait(t, 3, 5*time.Second)
	got := map[string]bool{}
	for _, c := range calls {
		if len(c.SendMessage().MessageChain) != 1 || c.SendMessage().MessageChain[0].Type != "Plain" {
			t.Errorf("chain %+v", c.SendMessage().MessageChain)
		}
		got[sentText(c)] = true
	}
	for _, want := range []string{"bare", "⏰ clock", "[Notify] newline"} {
		if !got[want] {
			t.Errorf("no send %q in %v", want, got)
		}
	}
}

// N16: list and cancel.
func TestN16ListAndCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s, other := sess("bot", "person", "1"), sess("bot", "person", "2")
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	for _, off := range []int{3, 1, 2} {
		e.schedule(t, b, cfgEN, s, map[string]any{"message": "at " + strconv.Itoa(off), "time_str": rfc(base.Add(time.Duration(off) * time.Minute))})
	}
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "daily", "recurrence": "0 9 * * *", "time_str": rfc(base.Add(48 * time.Hour))})
	text := e.cmd(t, b, cfgEN, s, "!sche")
	lines := strings.Split(text, "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "4 reminder(s), times in UTC (UTC+00:00)") ||
		!strings.HasSuffix(lines[1], "at 1") || !strings.HasSuffix(lines[2], "at 2") || !strings.HasSuffix(lines[3], "at 3") ||
		!strings.Contains(lines[4], "repeats 0 9 * * *") {
		t.Fatalf("list:\n%s", text)
	}
	idRE := regexp.MustCompile(`\[([a-hjkmnp-z][a-hjkmnp-z2-9]{5})\]`)
	if m := idRE.FindAllStringSubmatch(text, -1); len(m) != 4 {
		t.Fatalf("ids in list: %v", m)
	}
	long := "first line\n" + strings.Repeat("y", 150)
	idLong := e.schedule(t, b, cfgEN, s, map[string]any{"message": long, "time_str": rfc(base.Add(-30 * time.Minute))})
	if rec := e.record(t, scopeOf(b), idLong); rec.CreatorSenderID != "sender-1" || rec.Session.BotUUID != "bot" {
		t.Fatalf("record identity %+v", rec)
	}
	text = e.cmd(t, b, cfgEN, s, "!sche")
	line := strings.Split(text, "\n")[1]
	if !strings.Contains(line, "first line yyyy") || !strings.HasSuffix(line, "…") || strings.Count(line, "y") > 100 {
		t.Fatalf("preview line %q", line)
	}
	for i := range 20 {
		e.schedule(t, b, cfgEN, s, map[string]any{"message": "more " + strconv.Itoa(i), "time_str": rfc(base.Add(time.Duration(10+i) * time.Minute))})
	}
	if text := e.cmd(t, b, cfgEN, s, "!sche 2"); !strings.Contains(text, "Page 2 of 2") || !strings.Contains(text, "21. [") {
		t.Fatalf("page 2:\n%s", text)
	}
	// The tools see only the caller's session.
	if got := e.list(t, b, cfgEN, other); len(got) != 0 {
		t.Fatalf("other session sees %q", got)
	}
	if r := e.tool(t, b, cfgEN, other, schenotify.ToolCancel, map[string]any{"id": idLong}); r["code"] != "not_found" {
		t.Fatalf("foreign cancel: %v", r)
	}
	r := e.tool(t, b, cfgEN, s, schenotify.ToolCancel, map[string]any{"id": strings.ToUpper(idLong)})
	if r["status"] != "ok" || r["id"] != idLong || r["in_flight"] != false {
		t.Fatalf("cancel: %v", r)
	}
	lr := e.tool(t, b, cfgEN, s, schenotify.ToolList, nil)
	if lr["count"] != float64(24) {
		t.Fatalf("count after cancel %v", lr["count"])
	}
	// Markers: retrying and failed.
	c := bind("installation-markers", 1)
	cfg := testConfig()
	_ = cfg
	e.host.respond(func(hc bustest.HostCall) hostAction {
		if hc.Scope == scopeOf(c) {
			return hostAction{Err: wire.Errorf(wire.ErrInternal, "down")}
		}
		return hostAction{}
	})
	T := nextSecond()
	id := e.schedule(t, c, cfgEN, s, map[string]any{"message": "flaky", "time_str": rfc(T.Add(time.Second))})
	bustest.EventuallyWithin(t, 5*time.Second, "retrying marker", func() bool {
		return strings.Contains(e.cmd(t, c, cfgEN, s, "!sche"), "(retrying, attempt 1 of unlimited)")
	})
	lr = e.tool(t, c, cfgEN, s, schenotify.ToolList, nil)
	it := lr["reminders"].([]any)[0].(map[string]any)
	if it["id"] != id || it["state"] != "retrying" || it["last_error"] != "host_error" || it["attempt"] != float64(1) {
		t.Fatalf("list item %v", it)
	}
}
