package schenotify_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// N8: retries with backoff, then failed; 403 pauses without an attempt;
// a recurring reminder fails after 3 failed occurrences.
func TestN8RetryBackoffDeadLetter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := testConfig()
	cfg.Retry = schenotify.RetryPolicy{MaxAttempts: 4}
	cfg.MinEvery = time.Second
	in := e.start(t, cfg, nil, nil, nil)
	a := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	e.host.respond(func(bustest.HostCall) hostAction { return hostAction{Err: wire.Errorf(wire.ErrInternal, "down")} })
	T := nextSecond()
	id := e.schedule(t, a, cfgEN, s, map[string]any{"message": "doomed", "time_str": rfc(T.Add(time.Second))})
	calls := e.host.wait(t, 4, 15*time.Second)
	for i, off := range []int{1, 2, 4, 8} {
		due := T.Add(time.Duration(off) * time.Second)
		if d := calls[i].At.Sub(due); d < -500*time.Millisecond || d > 1500*time.Millisecond {
			t.Errorf("try %d at %v, want about %v", i+1, calls[i].At.Sub(T), due.Sub(T))
		}
	}
	bustest.EventuallyWithin(t, 3*time.Second, "failed", func() bool {
		r := e.record(t, scopeOf(a), id)
		return r != nil && r.State == schenotify.StateFailed
	})
	if text := e.cmd(t, a, cfgEN, s, "!sche"); !strings.Contains(text, "(failed: host_error)") {
		t.Fatalf("list: %q", text)
	}
	bustest.EventuallyWithin(t, 2*time.Second, "failed counted", func() bool {
		return in.counter(t, "schenotify_deliveries_total", "outcome", "failed") == 1
	})
	time.Sleep(1500 * time.Millisecond)
	if n := len(e.host.sends()); n != 4 {
		t.Fatalf("%d tries, want 4", n)
	}
	if e.record(t, scopeOf(a), id) == nil {
		t.Fatal("failed record not kept")
	}
	if text := e.cmd(t, a, cfgEN, s, "!dsche "+id); !strings.Contains(text, "Deleted") {
		t.Fatalf("delete: %q", text)
	}

	// 403: paused, not an attempt, and the authority is superseded.
	b := bind("installation-b", 1)
	e.host.respond(func(bustest.HostCall) hostAction { return hostAction{Err: wire.ErrBindingRefused} })
	T = nextSecond()
	idB := e.schedule(t, b, cfgEN, s, map[string]any{"message": "refused", "time_str": rfc(T.Add(time.Second))})
	bustest.EventuallyWithin(t, 5*time.Second, "paused", func() bool {
		r := e.record(t, scopeOf(b), idB)
		return r != nil && r.State == schenotify.StatePaused && r.Attempt == 0
	})
	if _, err := e.call(t, wire.EndpointTool, "", &wire.Request{Binding: b, Config: []byte(cfgEN),
		Tool: &wire.Tool{Name: schenotify.ToolList, Parameters: []byte(`{}`), Session: s}}); !isCode(err, 403) {
		t.Fatalf("after host 403: %v, want 403 (superseded)", err)
	}

	// Recurring: 3 consecutive failed occurrences give failed.
	c := bind("installation-c", 1)
	e.host.respond(func(hc bustest.HostCall) hostAction {
		if hc.Scope == scopeOf(c) {
			return hostAction{Err: wire.Errorf(wire.ErrInternal, "down")}
		}
		return hostAction{}
	})
	idC := e.schedule(t, c, `{"language":"en_US"}`, s, map[string]any{"message": "tick", "recurrence": "@every 2s"})
	bustest.EventuallyWithin(t, 30*time.Second, "recurring failed", func() bool {
		r := e.record(t, scopeOf(c), idC)
		return r != nil && r.State == schenotify.StateFailed && r.ConsecutiveFailures == 3
	})
}

// N9: limits.
func TestN9Limits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	a := bind("installation-a", 1)
	far := rfc(time.Now().Add(time.Hour))
	s1, s2 := sess("bot", "person", "1"), sess("bot", "person", "2")
	for range 50 {
		e.schedule(t, a, cfgEN, s1, map[string]any{"message": "x", "time_str": far})
	}
	if r := e.tool(t, a, cfgEN, s1, schenotify.ToolSchedule, map[string]any{"message": "x", "time_str": far}); r["code"] != "too_many_in_session" {
		t.Fatalf("51st: %v", r)
	}
	e.schedule(t, a, cfgEN, s2, map[string]any{"message": "x", "time_str": far})

	b := bind("installation-b", 1)
	three := `{"language":"en_US","max_reminders":3}`
	for i := range 3 {
		e.schedule(t, b, three, sess("bot", "person", strconv.Itoa(i)), map[string]any{"message": "x", "time_str": far})
	}
	if r := e.tool(t, b, three, s1, schenotify.ToolSchedule, map[string]any{"message": "x", "time_str": far}); r["code"] != "too_many" {
		t.Fatalf("4th: %v", r)
	}
	r := e.tool(t, b, `{"language":"en_US","max_reminders":5000}`, sess("bot", "group", "g"), schenotify.ToolSchedule, map[string]any{"message": "x", "time_str": far})
	if r["status"] != "ok" || len(r["warnings"].([]any)) != 1 {
		t.Fatalf("clamped: %v", r)
	}

	c := bind("installation-c", 1)
	clock := bustest.FixedClock(time.Date(2030, 1, 1, 0, 0, 0, 500e6, time.UTC))
	e2 := newEnv(t)
	e2.start(t, testConfig(), nil, clock.Now, nil)
	for _, tc := range []struct {
		at, code string
	}{
		{"2030-01-01T00:00:00Z", "time_passed"},
		{"2030-01-01T00:00:01Z", ""},
		{"2035-01-01T00:00:00Z", ""},
		{"2035-01-01T00:00:01Z", "too_far"},
	} {
		r := e2.tool(t, c, cfgEN, s1, schenotify.ToolSchedule, map[string]any{"message": "x", "time_str": tc.at})
		if got, _ := r["code"].(string); got != tc.code {
			t.Errorf("%s: %v", tc.at, r)
		}
	}

	// At cap - 5, 20 concurrent adds from different sessions: exactly 5 win.
	d := bind("installation-d", 1)
	cap10 := `{"language":"en_US","max_reminders":10}`
	for i := range 5 {
		e.schedule(t, d, cap10, sess("bot", "person", "pre"+strconv.Itoa(i)), map[string]any{"message": "x", "time_str": far})
	}
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.tool(t, d, cap10, sess("bot", "group", "c"+strconv.Itoa(i)), schenotify.ToolSchedule, map[string]any{"message": "x", "time_str": far})
			switch r["status"] {
			case "ok":
				ok.Add(1)
			default:
				if r["code"] != "too_many" {
					t.Errorf("concurrent add: %v", r)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 5 || len(e.reminderKeys(t, scopeOf(d))) != 10 {
		t.Fatalf("%d concurrent adds won, %d reminders", ok.Load(), len(e.reminderKeys(t, scopeOf(d))))
	}
}

// N10: structured results, check order, retried invocations.
func TestN10StructuredResults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	noSess := sess("", "person", "1")
	far := rfc(time.Now().Add(time.Hour))
	r := e.tool(t, b, cfgEN, noSess, schenotify.ToolSchedule, map[string]any{"message": "x", "time_str": "nope"})
	if r["code"] != "invalid_time" || r["field"] != "time_str" {
		t.Fatalf("bad time without session: %v", r)
	}
	full := bind("installation-full", 1)
	one := `{"language":"en_US","max_reminders":1}`
	e.schedule(t, full, one, s, map[string]any{"message": "x", "time_str": far})
	if r := e.tool(t, full, one, s, schenotify.ToolSchedule, map[string]any{"message": "x", "time_str": "2020-01-01T00:00:00Z"}); r["code"] != "time_passed" {
		t.Fatalf("past with full installation: %v", r)
	}
	goErr := regexp.MustCompile(`(?i)(nats:|jetstream|context deadline|\berr\b|panic|\.go:)`)
	for _, cfg := range []string{cfgEN, cfgZH} {
		for _, p := range []map[string]any{
			{}, {"message": 1, "delay": "5m"}, {"message": "x", "delay": "5m", "time_str": far}, {"message": "x", "delay": "?"},
			{"message": "x", "recurrence": "?"}, {"message": "x", "recurrence": "@every 1s"}, {"message": "x", "delay": "5m", "until": far},
			{"message": "x", "recurrence": "@daily", "until": "2020-01-01T00:00:00Z"}, {"message": "x", "time_str": "2099-01-01T00:00:00Z"},
		} {
			r := e.tool(t, b, cfg, s, schenotify.ToolSchedule, p)
			if r["status"] != "error" || r["text"] == "" || goErr.MatchString(r["text"].(string)) || r["warnings"] == nil {
				t.Errorf("%v: %v", p, r)
			}
		}
		if r := e.tool(t, b, cfg, s, schenotify.ToolCancel, map[string]any{"id": 5}); r["code"] != "invalid_param" {
			t.Errorf("cancel number id: %v", r)
		}
		if r := e.tool(t, b, cfg, s, schenotify.ToolCancel, map[string]any{}); r["code"] != "missing_params" {
			t.Errorf("cancel without id: %v", r)
		}
		if r := e.tool(t, b, cfg, s, schenotify.ToolCancel, map[string]any{"id": "zzzzzz"}); r["code"] != "not_found" {
			t.Errorf("cancel unknown: %v", r)
		}
		if r := e.tool(t, b, cfg, noSess, schenotify.ToolList, nil); r["code"] != "no_session" || r["text"] == "" {
			t.Errorf("list without session: %v", r)
		}
	}
	if _, err := e.call(t, wire.EndpointTool, "", &wire.Request{Binding: b, Config: []byte(cfgEN),
		Tool: &wire.Tool{Name: "no_such_tool", Parameters: []byte(`{}`), Session: s}}); !isCode(err, 404) {
		t.Fatalf("unknown tool: %v", err)
	}
	// A retried invocation creates one reminder and gets the same reply.
	c := bind("installation-retry", 1)
	id := bus.NewInvocationID()
	p := map[string]any{"message": "once", "delay": "1h"}
	r1 := e.toolID(t, id, c, cfgEN, s, schenotify.ToolSchedule, p)
	r2 := e.toolID(t, id, c, cfgEN, s, schenotify.ToolSchedule, p)
	j1, _ := json.Marshal(r1)
	j2, _ := json.Marshal(r2)
	if string(j1) != string(j2) || len(e.reminderKeys(t, scopeOf(c))) != 1 {
		t.Fatalf("retry: %s vs %s, %d reminders", j1, j2, len(e.reminderKeys(t, scopeOf(c))))
	}
	// A retry while the first attempt runs gets 409 in_progress.
	kv, err := e.js.KeyValue(context.Background(), bus.DedupeBucket(schenotify.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	running := bus.NewInvocationID()
	marker, _ := json.Marshal(map[string]any{"state": "running", "started_at": time.Now().UTC()})
	if _, err := kv.Create(context.Background(), bus.InvocationKey(scopeOf(c), running), marker); err != nil {
		t.Fatal(err)
	}
	_, err = e.call(t, wire.EndpointTool, running, &wire.Request{Binding: c, Config: []byte(cfgEN),
		Tool: &wire.Tool{Name: schenotify.ToolSchedule, Parameters: []byte(`{"message":"x","delay":"1h"}`), Session: s}})
	if e, ok := wire.AsError(err); !ok || e.Code != 409 || e.Reason != "in_progress" {
		t.Fatalf("retry during the first attempt: %v", err)
	}
}

// N11: legacy !dsche forms and command help.
func TestN11LegacyDsche(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	far := time.Now().Add(time.Hour)
	add := func(n int) {
		for i := range n {
			e.schedule(t, b, cfgEN, s, map[string]any{"message": "m" + strconv.Itoa(i), "time_str": rfc(far.Add(time.Duration(i) * time.Minute))})
		}
	}
	add(3)
	for _, tc := range []struct{ in, want string }{
		{"!dsche i", "Usage: !dsche"},
		{"!dsche", "Usage: !dsche"},
		{"!dsche i x", `"x" is neither`},
		{"!dsche i 0", "no reminder at position 0; this chat has 3"},
		{"!dsche i -1", "no reminder at position -1"},
		{"!dsche i 4", "no reminder at position 4"},
		{"!sche foo", "Reminder commands:"},
		{"!dsche i 1", "Deleted reminder"},
		{"!dsche 1", "Deleted reminder"},
		{"!dsche i １", "Deleted reminder"},
	} {
		if got := e.cmd(t, b, cfgEN, s, tc.in); !strings.HasPrefix(got, "[Notify] ") || !strings.Contains(got, tc.want) {
			t.Errorf("%q: %q", tc.in, got)
		}
	}
	add(2)
	if got := e.cmd(t, b, cfgEN, s, "!dsche  i  1"); !strings.Contains(got, "m0") {
		t.Errorf("double spaces: %q", got)
	}
	if got := e.cmd(t, b, cfgEN, s, "!dsche all"); !strings.Contains(got, "Deleted 1 reminder") {
		t.Errorf("all: %q", got)
	}
}

// N12: !sche add forms.
func TestN12ScheAdd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clock := bustest.FixedClock(time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC))
	e.start(t, testConfig(), nil, clock.Now, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	for _, tc := range []struct{ in, want string }{
		{"!sche add in 90m stretch", "2030-01-01 11:30:00"},
		{`!sche add cron "0 9 * * 1-5" standup`, "2030-01-02 09:00:00"},
		{"!sche add 2030-01-05 08:00 dentist", "2030-01-05 08:00:00"},
		{"!sche add 2030-01-05 08:00:30 dentist", "2030-01-05 08:00:30"},
		{"!sche add 11:00 later today", "2030-01-01 11:00:00"},
		{"!sche add 9:00 past means tomorrow", "2030-01-02 09:00:00"},
		{"!sche add in 90m", "Usage: !sche add"},
		{"!sche add soon x", "I could not tell when"},
	} {
		if got := e.cmd(t, b, cfgEN, s, tc.in); !strings.Contains(got, tc.want) {
			t.Errorf("%q: %q", tc.in, got)
		}
	}
	e.cmd(t, b, cfgEN, s, "!sche add in 1h keep  inner\nlines")
	r := e.tool(t, b, cfgEN, s, schenotify.ToolList, nil)
	found := false
	for _, it := range r["reminders"].([]any) {
		if it.(map[string]any)["message"] == "keep  inner\nlines" {
			found = true
		}
	}
	if !found {
		t.Fatalf("message spacing lost: %v", r["reminders"])
	}
}

// N13: lifecycle pause, resume, uninstall.
func TestN13Lifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	a := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	T := nextSecond()
	e.schedule(t, a, cfgEN, s, map[string]any{"message": "paused one", "time_str": rfc(T.Add(2 * time.Second))})
	if _, err := bus.PublishRevoke(t.Context(), e.js, wire.Subjects{}, schenotify.Plugin, wire.Revoke{Binding: a, Reason: wire.ReasonDisable}, ""); err != nil {
		t.Fatal(err)
	}
	bustest.EventuallyWithin(t, 3*time.Second, "disabled", func() bool {
		_, err := e.cmdErr(t, "", a, cfgEN, s, "!sche")
		return isCode(err, 403)
	})
	time.Sleep(time.Until(T.Add(4 * time.Second)))
	if n := len(e.host.sends()); n != 0 {
		t.Fatalf("%d sends while disabled", n)
	}
	if _, err := e.cmdErr(t, "", a, cfgEN, s, "!sche"); !isCode(err, 403) {
		t.Fatalf("still disabled: %v", err)
	}
	a2 := bind("installation-a", 2)
	if _, err := bus.PublishAttach(t.Context(), e.js, wire.Subjects{}, schenotify.Plugin, wire.Attach{Binding: a2, Config: []byte(cfgEN), Enabled: true}, ""); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	calls := e.host.wait(t, 1, 5*time.Second)
	if calls[0].At.Sub(resumed) > 2*time.Second || calls[0].Request.Binding != a2 {
		t.Fatalf("resumed send after %v under rev %d", calls[0].At.Sub(resumed), calls[0].Request.Binding.RuntimeRevision)
	}
	// A late revoke of the older revision is a no-op.
	if _, err := bus.PublishRevoke(t.Context(), e.js, wire.Subjects{}, schenotify.Plugin, wire.Revoke{Binding: a, Reason: wire.ReasonDisable}, ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := e.cmdErr(t, "", a2, cfgEN, s, "!sche"); err != nil {
		t.Fatalf("after a late revoke: %v", err)
	}
	// Uninstall with a reminder due in 2 s: never sent, only the tombstone.
	T = nextSecond()
	e.schedule(t, a2, cfgEN, s, map[string]any{"message": "never", "time_str": rfc(T.Add(2 * time.Second))})
	if _, err := bus.PublishRevoke(t.Context(), e.js, wire.Subjects{}, schenotify.Plugin, wire.Revoke{Binding: a2, Reason: wire.ReasonUninstall}, ""); err != nil {
		t.Fatal(err)
	}
	bustest.EventuallyWithin(t, 3*time.Second, "tombstone only", func() bool {
		k := e.keys(t, "langbot_schenotify", scopeOf(a))
		return len(k) == 1 && strings.HasSuffix(k[0], ".authority") && len(e.keys(t, "langbot_schenotify_dedupe", scopeOf(a))) == 0
	})
	time.Sleep(time.Until(T.Add(3 * time.Second)))
	if n := len(e.host.sends()); n != 1 {
		t.Fatalf("%d sends, the uninstalled reminder fired", n)
	}
	if _, err := e.cmdErr(t, "", a2, cfgEN, s, "!sche"); !isCode(err, 403) {
		t.Fatalf("after uninstall: %v", err)
	}
}
