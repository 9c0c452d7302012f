package when_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// FuzzReadNatural checks the natural reader on any text: it never panics;
// on success exactly one of instant, delay and rule is set, the expression
// and the rest give back the input, the expression is within its cap, a
// rule is one the recurrence grammar accepts (round trip through
// ParseRecurrence), and reading the expression alone gives the same
// result. Seeds are in testdata/fuzz/FuzzReadNatural.
func FuzzReadNatural(f *testing.F) {
	for _, s := range []string{"明天下午3点半 开会", "每周一三五 9:00", "tomorrow 3pm call mom", "every weekday 9am",
		"in an hour and a half", "三点一刻", "１２月２４日 ２０：００", "明天25点", "12/24 8pm", "每隔30分钟", "下下周三", ""} {
		f.Add(s)
	}
	ny, _ := settings.LoadZone("America/New_York")
	now := time.Date(2030, 3, 9, 17, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		in := when.ScheduleInput{Now: now, Zone: ny}
		n, err := when.ReadNatural(text, in)
		if err != nil {
			return
		}
		set := 0
		if n.Time != nil {
			set++
		}
		if n.Delay > 0 {
			set++
		}
		if n.Rule != nil {
			set++
		}
		if set != 1 {
			t.Fatalf("%q: %d of instant, delay, rule set", text, set)
		}
		if utf8.RuneCountInString(n.Expr) > when.MaxExprRunes || strings.TrimSpace(n.Expr) == "" {
			t.Fatalf("%q: expression %q", text, n.Expr)
		}
		if !strings.HasSuffix(text, n.Expr+n.Rest) || strings.TrimSpace(strings.TrimSuffix(text, n.Expr+n.Rest)) != "" {
			t.Fatalf("%q: expr %q + rest %q do not give back the input", text, n.Expr, n.Rest)
		}
		if n.Rule != nil {
			if _, err := when.ParseRecurrence(n.Rule.Display(), time.Minute); err != nil {
				t.Fatalf("%q: rule %q does not parse: %v", text, n.Rule.Display(), err)
			}
		}
		if n.Time != nil && (n.Time.At.Year() < 999 || n.Time.At.Year() > 10000) {
			t.Fatalf("%q: instant %v out of range", text, n.Time.At)
		}
		again, err := when.ParseNatural(n.Expr, in)
		if err != nil {
			t.Fatalf("%q: its expression %q alone is refused: %v", text, n.Expr, err)
		}
		if describe(again, ny) != describe(n, ny) {
			t.Fatalf("%q: expression %q alone reads %s, in context %s", text, n.Expr, describe(again, ny), describe(n, ny))
		}
	})
}
