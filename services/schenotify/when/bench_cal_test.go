package when_test

import (
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// BenchmarkWorkdayRule: parsing a stored working-day rule (each delivery
// does) and finding its next occurrence over a holiday.
func BenchmarkWorkdayRule(b *testing.B) {
	sh, _ := settings.LoadZone("Asia/Shanghai")
	at := time.Date(2026, 9, 30, 10, 0, 0, 0, sh)
	for b.Loop() {
		r, err := when.RuleOf(when.Recurrence{Kind: when.KindCalendar, Expr: "workdays cn 09:00"})
		if err != nil || r.CronNext(at, sh).IsZero() {
			b.Fatal(err)
		}
	}
}

func BenchmarkCalendarLastYear(b *testing.B) {
	for b.Loop() {
		when.CalendarLastYear()
	}
}
