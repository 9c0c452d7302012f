package when_test

import (
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// TestPlanWhen: the new time of a snooze or an edit, with a fixed now.
func TestPlanWhen(t *testing.T) {
	loc := mustZone(t, "Asia/Shanghai")
	now, _ := time.ParseInLocation(time.DateTime, "2030-01-01 10:00:00", loc)
	in := when.ScheduleInput{Now: now, Zone: loc}
	for _, tt := range []struct {
		expr      string
		allowRule bool
		want      string // local first occurrence, or the failure code
	}{
		{"", false, "2030-01-01 10:10:00"},
		{"15m", false, "2030-01-01 10:15:00"},
		{"10分钟", false, "2030-01-01 10:10:00"},
		{"10 minutes", false, "2030-01-01 10:10:00"},
		{"半小时后", false, "2030-01-01 10:30:00"},
		{"明天9点", false, "2030-01-02 09:00:00"},
		{"tomorrow 9am", false, "2030-01-02 09:00:00"},
		{"2030-01-05 08:00:00", false, "2030-01-05 08:00:00"},
		{"每天8点", false, "natural_unreadable"},
		{"每天8点", true, "2030-01-02 08:00:00"},
		{"0s", false, "invalid_delay"},
		{"今天早上8点", false, "time_passed"},
		{"whenever", false, "natural_unreadable"},
		{"every 10 seconds", true, "interval_too_short"},
	} {
		p, f := when.PlanWhen(tt.expr, "text", tt.allowRule, in)
		got := ""
		if f != nil {
			got = f.Code
		} else {
			got = p.First.In(loc).Format(time.DateTime)
		}
		if got != tt.want {
			t.Errorf("PlanWhen(%q, %v) = %s, want %s", tt.expr, tt.allowRule, got, tt.want)
		}
	}
}
