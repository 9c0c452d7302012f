package schenotify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// A working-day reminder at the end of its working calendar: the last
// delivery the calendar covers says so, the reminder is kept paused with
// its reason (lists show it; a user's resume explains it), and a start
// with a calendar that covers further re-arms it at its next working day,
// whose delivery carries no note. The first service's calendar ends in
// 2026 (schenotify.WithCalendarEnd), the second has the library's (2027).
func TestWorkdayReminderPausesAtCalendarEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clock := bustest.FixedClock(utc("2026-12-30T12:00:00Z"))
	first := e.start(t, schenotify.WithCalendarEnd(testConfig(), 2026), nil, clock.Now, nil)
	b := bind("installation-a", 1)
	sc := scopeOf(b)
	s := sess("bot", "person", "1")
	const cfg = `{"language":"en_US","timezone":"UTC"}`
	id := e.schedule(t, b, cfg, s, map[string]any{"message": "stand-up", "recurrence": "workdays cn 09:00", "time_str": "2026-12-31 00:00:00"})
	if rec := e.record(t, sc, id); rec.NextDue.Format(time.RFC3339) != "2026-12-31T09:00:00Z" {
		t.Fatalf("first occurrence %v, want the year's last working day", rec.NextDue)
	}

	clock.Set(utc("2026-12-31T09:00:00Z"))
	e.fire(t, sc, id)
	calls := e.host.wait(t, 1, 10*time.Second)
	text := sentText(calls[0])
	if !strings.HasPrefix(text, "[Notify] stand-up\n") || !strings.Contains(text, "published up to 2026") || !strings.Contains(text, "resumes by itself") {
		t.Fatalf("last covered delivery %q: no calendar note", text)
	}
	bustest.EventuallyWithin(t, 10*time.Second, "paused at the calendar's end", func() bool {
		rec := e.record(t, sc, id)
		return rec != nil && rec.State == schenotify.StatePaused && rec.Pause == "calendar_end" && !rec.Held
	})
	r := e.tool(t, b, cfg, s, schenotify.ToolList, map[string]any{})
	items, _ := r["reminders"].([]any)
	if len(items) != 1 {
		t.Fatalf("list after the pause: %v", r)
	}
	if it := items[0].(map[string]any); it["state"] != "paused" || it["pause"] != "calendar_end" || it["held"] != false {
		t.Fatalf("listed %v", it)
	}
	if got := e.cmd(t, b, cfg, s, "!sche"); !strings.Contains(got, "waits for a newer working calendar") {
		t.Fatalf("command list %q", got)
	}
	if got := e.cmd(t, b, cfg, s, "!sche resume "+id); !strings.Contains(got, "published up to 2026") {
		t.Fatalf("resume of a calendar pause %q", got)
	}
	if rec := e.record(t, sc, id); rec.Pause != "calendar_end" || rec.State != schenotify.StatePaused {
		t.Fatalf("the refused resume changed the record: %+v", rec)
	}

	// A newer calendar: the same store, a service with the library's.
	first.stop()
	rule, err := when.RuleOf(when.Recurrence{Kind: when.KindCalendar, Expr: "workdays cn 09:00"})
	if err != nil {
		t.Fatal(err)
	}
	next := rule.CronNext(utc("2026-12-31T09:00:00Z"), time.UTC)
	if next.Year() != 2027 {
		t.Fatalf("the library's next working day %v", next)
	}
	clock.Set(utc("2026-12-31T09:00:30Z"))
	e.start(t, testConfig(), nil, clock.Now, nil)
	bustest.EventuallyWithin(t, 10*time.Second, "re-armed by the start's sweep", func() bool {
		rec := e.record(t, sc, id)
		got, _ := e.armed(t, sc, id)
		return rec != nil && rec.State == schenotify.StateScheduled && rec.Pause == "" && rec.NextDue.Equal(next) &&
			got == armedFor(rfc(next))
	})
	clock.Set(next)
	e.fire(t, sc, id)
	calls = e.host.wait(t, 2, 10*time.Second)
	if got := sentText(calls[1]); got != "[Notify] stand-up" {
		t.Fatalf("delivery inside the newer calendar %q", got)
	}
}
