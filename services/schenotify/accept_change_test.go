package schenotify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// Snooze (issue 22): "!sche snooze <duration>" brings back the reminder
// just delivered in this chat, whose one-shot record is gone by then; a
// retried invocation creates it once; by id a pending one-shot is moved.
func TestSnoozeLastDelivered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	a := bind("installation-a", 1)
	g, other := sess("bot", "group", "g1"), sess("bot", "group", "g2")
	if got := e.cmd(t, a, cfgEN, g, "!sche snooze 5m"); !strings.Contains(got, "nothing to snooze") {
		t.Fatalf("snooze before any delivery: %q", got)
	}
	T := nextSecond()
	e.schedule(t, a, cfgEN, g, map[string]any{"message": "stretch", "time_str": rfc(T.Add(time.Second)), "mentions": []string{"bob"}})
	e.host.wait(t, 1, 5*time.Second)
	bustest.EventuallyWithin(t, 3*time.Second, "one-shot finished", func() bool { return len(e.reminderKeys(t, scopeOf(a))) == 0 })
	if got := e.cmd(t, a, cfgEN, other, "!sche snooze 5m"); !strings.Contains(got, "nothing to snooze") {
		t.Fatalf("another chat snoozed this chat's delivery: %q", got)
	}
	first, err := e.cmdErr(t, "inv-snooze-1", a, cfgEN, g, "!sche snooze 2s")
	if err != nil || !strings.Contains(first, "Snoozed") || !strings.Contains(first, "stretch") {
		t.Fatalf("snooze: %q %v", first, err)
	}
	again, err := e.cmdErr(t, "inv-snooze-1", a, cfgEN, g, "!sche snooze 2s")
	if err != nil || again != first {
		t.Fatalf("retried snooze: %q %v, first %q", again, err, first)
	}
	if n := len(e.reminderKeys(t, scopeOf(a))); n != 1 {
		t.Fatalf("%d reminders after a retried snooze, want 1", n)
	}
	calls := e.host.wait(t, 2, 6*time.Second)
	if sentText(calls[1]) != "[Notify] stretch" || len(calls[1].SendMessage().MessageChain) != 3 {
		t.Fatalf("snoozed delivery: %q chain %+v", sentText(calls[1]), calls[1].SendMessage().MessageChain)
	}

	// By id: a pending one-shot moves, it is not copied.
	id := e.schedule(t, a, cfgEN, g, map[string]any{"message": "later", "delay": "1h"})
	got := e.cmd(t, a, cfgEN, g, "!sche snooze "+id+" 2h")
	r := e.record(t, scopeOf(a), id)
	if r == nil || !strings.Contains(got, id) || time.Until(r.NextDue) < 110*time.Minute {
		t.Fatalf("snooze by id: %q, record %+v", got, r)
	}
	if n := len(e.reminderKeys(t, scopeOf(a))); n != 1 {
		t.Fatalf("%d reminders after snoozing by id, want 1", n)
	}
	if at, _ := e.armed(t, scopeOf(a), id); at != armedFor(rfc(r.NextDue)) {
		t.Fatalf("armed %q after the snooze, record due %s", at, rfc(r.NextDue))
	}
}

// Edit, pause and resume through the command and the tool: each a CAS of
// the record that re-arms or cancels its schedule; the list shows the
// pause; a pause survives an attach; retries repeat nothing.
func TestEditPauseResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := testConfig()
	cfg.MinEvery = time.Second
	e.start(t, cfg, nil, nil, nil)
	a := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	sc := scopeOf(a)

	id := e.schedule(t, a, cfgEN, s, map[string]any{"message": "dentist", "delay": "3h"})
	got := e.cmd(t, a, cfgEN, s, "!sche edit "+id+" tomorrow 9am")
	r := e.record(t, sc, id)
	if r == nil || r.NextDue.UTC().Hour() != 9 || !strings.Contains(got, "Understood \"tomorrow 9am\"") {
		t.Fatalf("edit time: %q, record %+v", got, r)
	}
	if at, _ := e.armed(t, sc, id); at != armedFor(rfc(r.NextDue)) {
		t.Fatalf("armed %q, record due %s", at, rfc(r.NextDue))
	}
	if got := e.cmd(t, a, cfgEN, s, "!sche edit "+id+" text see  the dentist"); !strings.Contains(got, "now says") {
		t.Fatalf("edit text: %q", got)
	}
	if r := e.record(t, sc, id); r.Message != "see  the dentist" {
		t.Fatalf("edited text %q", r.Message)
	}
	if got := e.cmd(t, a, cfgEN, s, "!sche pause "+id); !strings.Contains(got, "does not repeat") {
		t.Fatalf("pause of a one-shot: %q", got)
	}
	if got := e.cmd(t, a, cfgEN, s, "!sche edit zzzzzz tomorrow"); !strings.Contains(got, "no reminder with id zzzzzz") {
		t.Fatalf("edit of an unknown id: %q", got)
	}
	if got := e.cmd(t, a, cfgEN, s, "!sche edit "+id); !strings.Contains(got, "Usage: !sche edit") {
		t.Fatalf("edit without a change: %q", got)
	}

	// A repeating reminder every 2 s: pause stops it, resume restarts it.
	T := nextSecond()
	rid := e.schedule(t, a, cfgEN, s, map[string]any{"message": "tick", "recurrence": "@every 2s", "time_str": rfc(T.Add(time.Second))})
	e.host.wait(t, 1, 5*time.Second)
	// While an occurrence is being sent the change is refused as
	// unavailable (not kept for retries); the retry after the send succeeds.
	var p1 map[string]any
	bustest.EventuallyWithin(t, 5*time.Second, "pause accepted", func() bool {
		p1 = e.tool(t, a, cfgEN, s, schenotify.ToolPause, map[string]any{"id": rid})
		return p1["code"] != "unavailable"
	})
	if p1["status"] != "ok" || p1["held"] != true {
		t.Fatalf("pause tool: %v", p1)
	}
	if r := e.record(t, sc, rid); r == nil || r.State != schenotify.StatePaused || !r.Held {
		t.Fatalf("paused record %+v", r)
	}
	bustest.EventuallyWithin(t, 3*time.Second, "schedule cancelled", func() bool { at, _ := e.armed(t, sc, rid); return at == "" })
	if got := e.cmd(t, a, cfgEN, s, "!sche"); !strings.Contains(got, "(paused; !sche resume "+rid+")") {
		t.Fatalf("list of a paused reminder: %q", got)
	}
	if got := e.cmd(t, a, cfgEN, s, "!sche pause "+rid); !strings.Contains(got, "already paused") {
		t.Fatalf("second pause: %q", got)
	}
	// An attach (the installation's own resume) leaves a user's pause alone.
	e.cmd(t, bind("installation-a", 2), cfgEN, s, "!sche")
	if r := e.record(t, sc, rid); !r.Held {
		t.Fatalf("an attach resumed a paused reminder: %+v", r)
	}
	a = bind("installation-a", 2)
	sent := len(e.host.sends())
	time.Sleep(3 * time.Second) // two periods: nothing may arrive while paused
	if n := len(e.host.sends()); n > sent+1 {
		t.Fatalf("%d sends while paused", n-sent)
	}
	sent = len(e.host.sends())
	r1 := e.toolID(t, "inv-resume-1", a, cfgEN, s, schenotify.ToolResume, map[string]any{"id": rid})
	r2 := e.toolID(t, "inv-resume-1", a, cfgEN, s, schenotify.ToolResume, map[string]any{"id": rid})
	if r1["status"] != "ok" || r2["text"] != r1["text"] {
		t.Fatalf("resume and its retry: %v / %v", r1, r2)
	}
	e.host.wait(t, sent+1, 5*time.Second)

	// The edit tool: a rule replaces the rule; a message replaces the text.
	ed := e.changeTool(t, a, cfgZH, s, schenotify.ToolEdit, map[string]any{"id": rid, "time_str": "每天8点"})
	if ed["status"] != "ok" || ed["recurrence"].(map[string]any)["expr"] != "0 8 * * *" {
		t.Fatalf("edit tool rule: %v", ed)
	}
	ed = e.changeTool(t, a, cfgEN, s, schenotify.ToolEdit, map[string]any{"id": rid, "message": "tock"})
	if ed["status"] != "ok" || ed["message"] != "tock" {
		t.Fatalf("edit tool message: %v", ed)
	}
	ed = e.tool(t, a, cfgEN, s, schenotify.ToolEdit, map[string]any{"id": rid})
	if ed["code"] != "missing_params" {
		t.Fatalf("edit tool without a change: %v", ed)
	}
	sn := e.tool(t, a, cfgEN, sess("bot", "person", "2"), schenotify.ToolSnooze, map[string]any{"id": rid, "delay": "5m"})
	if sn["code"] != "not_found" {
		t.Fatalf("snooze of another chat's reminder: %v", sn)
	}
}

// changeTool calls a change tool until it is not refused as unavailable
// (the reminder was being sent at that moment).
func (e *env) changeTool(t testing.TB, b binding.Binding, cfg string, s wire.Session, name string, params map[string]any) map[string]any {
	t.Helper()
	var r map[string]any
	bustest.EventuallyWithin(t, 5*time.Second, name+" accepted", func() bool {
		r = e.tool(t, b, cfg, s, name, params)
		return r["code"] != "unavailable"
	})
	return r
}
