package when_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// FuzzReadReminder checks the "!sche add" reading of any line: it never
// panics; on success the expression and the message are pieces of the
// input, the message is trimmed, and a rule's stored form parses back.
// Seeds are in testdata/fuzz/FuzzReadReminder.
func FuzzReadReminder(f *testing.F) {
	for _, s := range []string{"remind me to call mom in 2 hours", "2小时后提醒我开会", "明天下午3点 开会 提前10分钟提醒我",
		"tomorrow 3pm meeting, remind me 10 minutes before", "每隔一天 早上7点 浇花", "提醒我", "remind me", ""} {
		f.Add(s)
	}
	sh, _ := settings.LoadZone("Asia/Shanghai")
	now := time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		in := when.ScheduleInput{Now: now, Zone: sh}
		n, msg, err := when.ReadReminder(text, in)
		if err != nil {
			return
		}
		if !strings.Contains(text, n.Expr) || strings.TrimSpace(n.Expr) == "" {
			t.Fatalf("%q: expression %q is not a piece of the input", text, n.Expr)
		}
		if msg != "" && (!strings.Contains(text, msg) || strings.TrimSpace(msg) != strings.TrimRight(msg, " \t\r\n")) {
			t.Fatalf("%q: message %q", text, msg)
		}
		if n.Rule != nil {
			if back, err := when.RuleOf(n.Rule.Recurrence); err != nil || back.Recurrence != n.Rule.Recurrence {
				t.Fatalf("%q: rule %+v does not parse back: %v", text, n.Rule.Recurrence, err)
			}
		}
	})
}

// TestCalendarCoverage: the working calendar's last year is read from the
// library's holiday data (docs/reminders.md states it; update both when
// the library is upgraded).
func TestCalendarCoverage(t *testing.T) {
	if got := when.CalendarLastYear(); got != 2027 {
		t.Fatalf("CalendarLastYear() = %d; the lunar-go v1.4.7 data ends in 2027", got)
	}
}

// TestCalendarSpecs: the calendar spec strings parse to their canonical
// form and back, malformed ones are refused, and cron strings are still
// cron (stored reminders read as before).
func TestCalendarSpecs(t *testing.T) {
	for in, want := range map[string]string{
		"monthly last-day 9:00":            "monthly last-day 09:00",
		"monthly  3 fri 16:00 early 10m":   "monthly 3 fri 16:00 early 10m",
		"workdays cn 09:00":                "workdays cn 09:00",
		"lunar 8-15 20:00 early 1d":        "lunar 8-15 20:00 early 1d",
		"days 2 from 2030-03-08 07:00":     "days 2 from 2030-03-08 07:00",
		"cron 0 9 * * 1-5 early PT15M":     "cron 0 9 * * 1-5 early 15m",
		"monthly last sun 00:00 early 90m": "monthly last sun 00:00 early 1h30m",
	} {
		r, err := when.ParseRecurrence(in, time.Minute)
		if err != nil || r.Kind != when.KindCalendar || r.Expr != want || r.Display() != want {
			t.Errorf("ParseRecurrence(%q) = %+v, %v; want calendar %q", in, r.Recurrence, err, want)
			continue
		}
		back, err := when.RuleOf(r.Recurrence)
		if err != nil || back.Recurrence != r.Recurrence {
			t.Errorf("RuleOf(%+v) = %+v, %v", r.Recurrence, back.Recurrence, err)
		}
	}
	for _, bad := range []string{"monthly last-day", "monthly 6 fri 09:00", "monthly 0 fri 09:00", "monthly 3 fry 09:00",
		"workdays us 09:00", "lunar 13-1 09:00", "lunar 8-31 09:00", "lunar 08-15 09:00", "days 0 from 2030-01-01 07:00",
		"days 2 from 2030-1-1 07:00", "monthly last-day 09:00:30", "monthly last-day 09:00 early 8d", "monthly last-day 09:00 early 0s",
		"cron TZ=UTC 0 9 * * *", "cron 0 9 * *", "workdays cn 24:00"} {
		if r, err := when.ParseRecurrence(bad, time.Minute); err == nil {
			t.Errorf("ParseRecurrence(%q) = %+v, want refused", bad, r.Recurrence)
		}
	}
	for _, s := range []string{"0 9 * * 1-5", "@monthly", "0 0 L * *"} {
		r, err := when.ParseRecurrence(s, time.Minute)
		if s == "0 0 L * *" {
			if err == nil {
				t.Errorf("%q accepted", s)
			}
			continue
		}
		if err != nil || r.Kind != when.KindCron || r.Expr != s {
			t.Errorf("ParseRecurrence(%q) = %+v, %v; want cron as before", s, r.Recurrence, err)
		}
	}
	if _, err := when.RuleOf(when.Recurrence{Kind: when.KindCalendar, Expr: "0 9 * * *"}); err == nil {
		t.Error("a calendar record holding a cron expression was accepted")
	}
}

// TestCalendarOccurrences walks calendar rules over the holidays: the
// working days of the 2027 Spring Festival (make-up Sundays included),
// the last day of February in a leap year, a fifth weekday, and an
// advance notice on each occurrence.
func TestCalendarOccurrences(t *testing.T) {
	sh := mustZone(t, "Asia/Shanghai")
	for _, tt := range []struct {
		spec, after string
		want        []string
	}{
		{"workdays cn 09:00", "2027-01-29 10:00:00", []string{"2027-01-31 09:00", "2027-02-01 09:00", "2027-02-02 09:00", "2027-02-03 09:00", "2027-02-04 09:00", "2027-02-14 09:00", "2027-02-15 09:00"}},
		{"workdays cn 09:00 early 30m", "2027-12-29 10:00:00", []string{"2027-12-30 08:30", "2027-12-31 08:30"}},
		{"monthly last-day 18:00", "2028-01-31 18:00:00", []string{"2028-02-29 18:00", "2028-03-31 18:00"}},
		{"monthly 5 fri 09:00", "2027-01-01 00:00:00", []string{"2027-01-29 09:00", "2027-04-30 09:00", "2027-07-30 09:00"}},
		{"lunar 1-1 08:00 early 1d", "2026-01-01 00:00:00", []string{"2026-02-16 08:00", "2027-02-05 08:00"}},
		{"days 3 from 2027-01-30 07:00", "2027-01-01 00:00:00", []string{"2027-01-30 07:00", "2027-02-02 07:00", "2027-02-05 07:00"}},
	} {
		r, err := when.ParseRecurrence(tt.spec, time.Minute)
		if err != nil {
			t.Fatalf("%q: %v", tt.spec, err)
		}
		at, _ := time.ParseInLocation(time.DateTime, tt.after, sh)
		var got []string
		for t0 := r.CronNext(at, sh); !t0.IsZero() && len(got) < len(tt.want)+1; t0 = r.CronNext(t0, sh) {
			got = append(got, t0.In(sh).Format("2006-01-02 15:04"))
			if len(got) == len(tt.want) && !strings.HasPrefix(tt.spec, "workdays cn 09:00 early") {
				break
			}
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s after %s: %v, want %v", tt.spec, tt.after, got, tt.want)
		}
	}
}

// TestHintTexts: every refusal the reader can give has a text in both
// catalogues, which keep the {prefix} convention for command examples.
func TestHintTexts(t *testing.T) {
	for _, lang := range []string{"en_US", "zh_Hans"} {
		raw, err := os.ReadFile("../messages/" + lang + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var cat map[string]string
		if err := json.Unmarshal(raw, &cat); err != nil {
			t.Fatal(err)
		}
		for _, code := range []string{"interval_with_clock", "interval_ambiguous", "calendar_range", "lunar_needs_date", "advance_too_long"} {
			text := cat["err."+code]
			if text == "" || !strings.Contains(text, "{prefix}sche add") {
				t.Errorf("%s: err.%s = %q", lang, code, text)
			}
		}
		if !strings.Contains(cat["err.calendar_range"], "{year}") {
			t.Errorf("%s: err.calendar_range does not name the year", lang)
		}
	}
}

// TestCalendarEnd: a working-day rule past its calendar's last covered
// day has no next occurrence and says so (PastCalendar), at the library's
// end (2027) and at an earlier end a test sets (WithCalendarEnd); an
// earlier end never moves a covered occurrence, and a later one or 0
// changes nothing. Other rules follow no calendar.
func TestCalendarEnd(t *testing.T) {
	r, err := when.RuleOf(when.Recurrence{Kind: when.KindCalendar, Expr: "workdays cn 09:00"})
	if err != nil {
		t.Fatal(err)
	}
	last27 := time.Date(2027, 12, 31, 9, 0, 0, 0, time.UTC)
	if r.CalendarEnd() != 2027 || !r.CronNext(last27, time.UTC).IsZero() || !r.PastCalendar(last27, time.UTC) {
		t.Fatalf("library end: %d %v %v", r.CalendarEnd(), r.CronNext(last27, time.UTC), r.PastCalendar(last27, time.UTC))
	}
	mid := time.Date(2026, 12, 30, 9, 0, 0, 0, time.UTC)
	want := r.CronNext(mid, time.UTC)
	if want.Year() != 2026 || r.PastCalendar(mid, time.UTC) {
		t.Fatalf("covered: %v", want)
	}
	r26 := r.WithCalendarEnd(2026)
	if r26.CalendarEnd() != 2026 || !r26.CronNext(mid, time.UTC).Equal(want) {
		t.Fatalf("an earlier end moved a covered day: %v", r26.CronNext(mid, time.UTC))
	}
	if !r26.CronNext(want, time.UTC).IsZero() || !r26.PastCalendar(want, time.UTC) || r.CronNext(want, time.UTC).Year() != 2027 {
		t.Fatalf("end 2026 after %v: %v", want, r26.CronNext(want, time.UTC))
	}
	if r26.Recurrence != r.Recurrence {
		t.Fatalf("the stored form changed: %+v", r26.Recurrence)
	}
	for _, y := range []int{0, 2027, 2030} {
		if got := r.WithCalendarEnd(y).CalendarEnd(); got != 2027 {
			t.Errorf("WithCalendarEnd(%d) widened or changed the end: %d", y, got)
		}
	}
	m, _ := when.RuleOf(when.Recurrence{Kind: when.KindCalendar, Expr: "monthly last-day 09:00"})
	if m.CalendarEnd() != 0 || m.WithCalendarEnd(2026).CalendarEnd() != 0 || m.PastCalendar(last27, time.UTC) {
		t.Errorf("a month rule follows a working calendar")
	}
}
