package schenotify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// Natural time expressions through !sche add and schedule_notify (issue
// 22): the same reader behind both, the reply saying what was understood
// in the chat's zone, unreadable expressions answered with examples and
// nothing stored.
func TestNaturalAddCommandAndTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Tuesday 2030-01-01 10:00 in Shanghai.
	clock := bustest.FixedClock(time.Date(2030, 1, 1, 2, 0, 0, 0, time.UTC))
	e.start(t, testConfig(), nil, clock.Now, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "group", "g1")
	zh := `{"language":"zh_Hans","timezone":"Asia/Shanghai"}`
	en := `{"language":"en_US","timezone":"Asia/Shanghai"}`
	for _, tc := range []struct {
		cfg, in string
		want    []string // in the reply
		due     string   // next_due UTC of the record
		msg     string   // stored message
	}{
		{zh, "!sche add 明天下午3点半开会", []string{"已把“明天下午3点半”理解为 2030-01-02 15:30:00（星期三", "Asia/Shanghai"}, "2030-01-02T07:30:00Z", "开会"},
		{zh, "!sche add 10分钟后 喝水", []string{"2030-01-01 10:10:00"}, "2030-01-01T02:10:00Z", "喝水"},
		{zh, "!sche add 下周一9点 交周报", []string{"2030-01-07 09:00:00（星期一"}, "2030-01-07T01:00:00Z", "交周报"},
		{zh, "!sche add 每周一三五 9:00 健身", []string{"规则 0 9 * * 1,3,5", "2030-01-02 09:00:00"}, "2030-01-02T01:00:00Z", "健身"},
		{zh, "!sche add １２月２４日 ２０：００ 聚餐", []string{"2030-12-24 20:00:00"}, "2030-12-24T12:00:00Z", "聚餐"},
		{en, "!sche add tomorrow 3pm call mom", []string{`Understood "tomorrow 3pm" as Wednesday 2030-01-02 15:00:00`}, "2030-01-02T07:00:00Z", "call mom"},
		{en, "!sche add every weekday 9am stand-up", []string{"the rule 0 9 * * 1-5", "Wednesday 2030-01-02 09:00:00"}, "2030-01-02T01:00:00Z", "stand-up"},
		{en, "!sche add in 2 hours stretch", []string{"2030-01-01 12:00:00"}, "2030-01-01T04:00:00Z", "stretch"},
	} {
		got := e.cmd(t, b, tc.cfg, s, tc.in)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q: reply %q lacks %q", tc.in, got, w)
			}
		}
		id := idIn(got)
		r := e.record(t, scopeOf(b), id)
		if r == nil {
			t.Fatalf("%q: no record %q (reply %q)", tc.in, id, got)
		}
		if r.NextDue.Format(time.RFC3339) != tc.due || r.Message != tc.msg {
			t.Errorf("%q: stored due %s message %q, want %s %q", tc.in, r.NextDue.Format(time.RFC3339), r.Message, tc.due, tc.msg)
		}
	}
	before := len(e.reminderKeys(t, scopeOf(b)))
	for _, tc := range []struct{ cfg, in, want string }{
		{zh, "!sche add 明天25点 开会", "没看懂"},
		{en, "!sche add soon x", "I could not tell when"},
		{en, "!sche add tomorrow 3 tickets", "every weekday 9am"},
		{zh, "!sche add 明天下午3点", "要提醒什么"},
		{en, "!sche add today 8am too late", "is not in the future"},
	} {
		if got := e.cmd(t, b, tc.cfg, s, tc.in); !strings.Contains(got, tc.want) {
			t.Errorf("%q: reply %q lacks %q", tc.in, got, tc.want)
		}
	}
	if after := len(e.reminderKeys(t, scopeOf(b))); after != before {
		t.Fatalf("refused adds stored reminders: %d -> %d", before, after)
	}

	// The tool reads time_str and recurrence with the same rules.
	r := e.tool(t, b, en, s, schenotify.ToolSchedule, map[string]any{"message": "dentist", "time_str": "next friday 9:00"})
	if r["status"] != "ok" || r["due"] != "2030-01-11T09:00:00+08:00" || !strings.Contains(r["text"].(string), "Understood") {
		t.Fatalf("tool natural time_str: %v", r)
	}
	r = e.tool(t, b, zh, s, schenotify.ToolSchedule, map[string]any{"message": "喝水", "recurrence": "每2小时"})
	if r["status"] != "ok" || r["recurrence"].(map[string]any)["expr"] != "2h" || r["due"] != "2030-01-01T12:00:00+08:00" {
		t.Fatalf("tool natural recurrence: %v", r)
	}
	r = e.tool(t, b, en, s, schenotify.ToolSchedule, map[string]any{"message": "x", "time_str": "whenever"})
	if r["status"] != "error" || r["code"] != "invalid_time" || !strings.Contains(r["text"].(string), "tomorrow 3pm") {
		t.Fatalf("tool unreadable time_str: %v", r)
	}
	r = e.tool(t, b, en, s, schenotify.ToolSchedule, map[string]any{"message": "x", "time_str": "tomorrow 3pm call"})
	if r["status"] != "error" || r["code"] != "invalid_time" {
		t.Fatalf("tool time_str with trailing words: %v", r)
	}
}

// TestNaturalZoneAndDST: the installation's zone decides the instant, and
// a wall time in a DST gap moves later with the note, in one reply.
func TestNaturalZoneAndDST(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Saturday 2030-03-09 12:00 in New York; the clocks go forward at 02:00 on the 10th.
	clock := bustest.FixedClock(time.Date(2030, 3, 9, 17, 0, 0, 0, time.UTC))
	e.start(t, testConfig(), nil, clock.Now, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	got := e.cmd(t, b, `{"language":"en_US","timezone":"America/New_York"}`, s, "!sche add tomorrow 2:30am early flight")
	for _, w := range []string{"2030-03-10 03:30:00", "does not exist", "Sunday"} {
		if !strings.Contains(got, w) {
			t.Errorf("gap reply %q lacks %q", got, w)
		}
	}
	if r := e.record(t, scopeOf(b), idIn(got)); r == nil || r.NextDue.Format(time.RFC3339) != "2030-03-10T07:30:00Z" {
		t.Fatalf("gap record: %+v", r)
	}
	got = e.cmd(t, b, `{"language":"en_US","timezone":"Europe/Berlin"}`, s, "!sche add tomorrow 3pm berlin")
	if r := e.record(t, scopeOf(b), idIn(got)); r == nil || r.NextDue.Format(time.RFC3339) != "2030-03-10T14:00:00Z" {
		t.Fatalf("Berlin record (reply %q): %+v", got, r)
	}
}

// idIn finds the reminder id in a reply ("Reminder k7m2pq set ...").
func idIn(reply string) string {
	for _, f := range strings.FieldsFunc(reply, func(r rune) bool { return r == ' ' || r == '\n' || r == '：' || r == '（' }) {
		if id, ok := schenotify.NormalizeID(f); ok && len(f) == 6 {
			return id
		}
	}
	return ""
}
