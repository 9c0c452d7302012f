package when_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/schenotify/when"
)

func params(t testing.TB, js string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPlanToolErrors(t *testing.T) {
	sh := mustZone(t, "Asia/Shanghai")
	in := when.ScheduleInput{Now: utc("2030-01-01T01:00:05Z").Add(300 * time.Millisecond), Zone: sh}
	tests := []struct {
		name, params, code, field string
	}{
		{"no message", `{"delay":"5m"}`, "missing_params", ""},
		{"null message", `{"message":null,"delay":"5m"}`, "missing_params", ""},
		{"blank message", `{"message":"  \n","delay":"5m"}`, "missing_params", ""},
		{"no time", `{"message":"x"}`, "missing_params", ""},
		{"only empty time", `{"message":"x","time_str":""}`, "missing_params", ""},
		{"number message", `{"message":5,"delay":"5m"}`, "invalid_param", "message"},
		{"number delay", `{"message":"x","delay":300}`, "invalid_param", "delay"},
		{"bool until", `{"message":"x","recurrence":"@daily","until":true}`, "invalid_param", "until"},
		{"both", `{"message":"x","delay":"5m","time_str":"2030-01-02 09:00:00"}`, "conflicting_params", "delay"},
		{"bad time", `{"message":"x","time_str":"whenever"}`, "invalid_time", "time_str"},
		{"iso no offset", `{"message":"x","time_str":"2030-01-01T09:00:00"}`, "invalid_time", "time_str"},
		{"bad delay", `{"message":"x","delay":"soon"}`, "invalid_delay", "delay"},
		{"zero delay", `{"message":"x","delay":"0s"}`, "invalid_delay", "delay"},
		{"bad recurrence", `{"message":"x","recurrence":"every so often"}`, "invalid_recurrence", "recurrence"},
		{"tz prefix", `{"message":"x","recurrence":"TZ=UTC 0 9 * * *"}`, "invalid_recurrence", "recurrence"},
		{"six fields", `{"message":"x","recurrence":"0 0 9 * * *"}`, "invalid_recurrence", "recurrence"},
		{"never", `{"message":"x","recurrence":"0 0 30 2 *"}`, "invalid_recurrence", "recurrence"},
		{"short every", `{"message":"x","recurrence":"@every 30s"}`, "interval_too_short", "recurrence"},
		{"until alone", `{"message":"x","delay":"5m","until":"2030-02-01 00:00:00"}`, "invalid_until", "until"},
		{"bad until", `{"message":"x","recurrence":"@daily","until":"soon"}`, "invalid_until", "until"},
		{"past", `{"message":"x","time_str":"2030-01-01 09:00:00"}`, "time_passed", "time_str"},
		{"this second", `{"message":"x","time_str":"2030-01-01 09:00:05"}`, "time_passed", "time_str"},
		{"too far", `{"message":"x","time_str":"2035-01-01T01:00:06Z"}`, "too_far", ""},
		{"too far delay", `{"message":"x","delay":"300w"}`, "too_far", ""},
		{"until before", `{"message":"x","recurrence":"@daily","until":"2030-01-01 12:00:00"}`, "until_before_start", "until"},
		// Order: a bad time wins over everything later.
		{"bad time before recurrence", `{"message":"x","time_str":"nope","recurrence":"nope"}`, "invalid_time", "time_str"},
		{"past before until", `{"message":"x","time_str":"2020-01-01 00:00:00","recurrence":"@daily","until":"2019-01-01 00:00:00"}`, "time_passed", "time_str"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, f := when.PlanTool(params(t, tt.params), in)
			if f == nil {
				t.Fatalf("no failure, want %s", tt.code)
			}
			if f.Code != tt.code || f.Field != tt.field {
				t.Fatalf("got %s/%s, want %s/%s", f.Code, f.Field, tt.code, tt.field)
			}
		})
	}
}

func TestPlanToolSuccess(t *testing.T) {
	sh := mustZone(t, "Asia/Shanghai")
	ny := mustZone(t, "America/New_York")
	now := utc("2030-01-01T01:00:05Z")
	tests := []struct {
		name, params string
		zone         *time.Location
		now          time.Time
		first        string
		next         []string
		adjust       string
	}{
		{"form L", `{"message":"x","time_str":"2030-01-02 09:00:00"}`, sh, now, "2030-01-02T01:00:00Z", nil, ""},
		{"form R any zone", `{"message":"x","time_str":"2030-01-02T09:00:00+02:00"}`, sh, now, "2030-01-02T07:00:00Z", nil, ""},
		{"next second", `{"message":"x","time_str":"2030-01-01 09:00:06"}`, sh, now.Add(999 * time.Millisecond), "2030-01-01T01:00:06Z", nil, ""},
		{"horizon", `{"message":"x","time_str":"2035-01-01T01:00:05Z"}`, sh, now, "2035-01-01T01:00:05Z", nil, ""},
		{"delay", `{"message":"x","delay":"PT30M"}`, sh, now, "2030-01-01T01:30:05Z", nil, ""},
		{"empty strings are absent", `{"message":"x","delay":"1d","time_str":"","until":""}`, sh, now, "2030-01-02T01:00:05Z", nil, ""},
		{"cron from now", `{"message":"x","recurrence":"0 9 * * *"}`, sh, now, "2030-01-02T01:00:00Z",
			[]string{"2030-01-02T01:00:00Z", "2030-01-03T01:00:00Z", "2030-01-04T01:00:00Z"}, ""},
		{"cron at start", `{"message":"x","recurrence":"0 9 * * *","time_str":"2030-01-05 09:00:00"}`, sh, now, "2030-01-05T01:00:00Z", nil, ""},
		{"cron until", `{"message":"x","recurrence":"0 9 * * *","until":"2030-01-03 09:00:00"}`, sh, now, "2030-01-02T01:00:00Z",
			[]string{"2030-01-02T01:00:00Z", "2030-01-03T01:00:00Z"}, ""},
		{"every without start", `{"message":"x","recurrence":"@every 1d12h"}`, sh, now, "2030-01-02T13:00:05Z", nil, ""},
		{"every with start", `{"message":"x","recurrence":"@every 2h","time_str":"2030-01-01T02:00:00Z"}`, sh, now, "2030-01-01T02:00:00Z",
			[]string{"2030-01-01T02:00:00Z", "2030-01-01T04:00:00Z", "2030-01-01T06:00:00Z"}, ""},
		{"dst gap", `{"message":"x","time_str":"2030-03-10 02:30:00"}`, ny, utc("2030-03-01T00:00:00Z"), "2030-03-10T07:30:00Z", nil, when.AdjustGap},
		{"dst overlap", `{"message":"x","time_str":"2030-11-03 01:30:00"}`, ny, utc("2030-03-01T00:00:00Z"), "2030-11-03T05:30:00Z", nil, when.AdjustOverlap},
		{"dst cron next", `{"message":"x","recurrence":"30 2 * * *","time_str":"2030-03-09 00:00:00"}`, ny, utc("2030-03-01T00:00:00Z"), "2030-03-09T07:30:00Z",
			[]string{"2030-03-09T07:30:00Z", "2030-03-10T07:30:00Z", "2030-03-11T06:30:00Z"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, f := when.PlanTool(params(t, tt.params), when.ScheduleInput{Now: tt.now, Zone: tt.zone})
			if f != nil {
				t.Fatalf("failure %+v", f)
			}
			if p.First.Format(time.RFC3339) != tt.first {
				t.Fatalf("first %s want %s", p.First.Format(time.RFC3339), tt.first)
			}
			if tt.next != nil {
				var got []string
				for _, n := range p.Next {
					got = append(got, n.Format(time.RFC3339))
				}
				if strings.Join(got, ",") != strings.Join(tt.next, ",") {
					t.Fatalf("next %v want %v", got, tt.next)
				}
			}
			adj := ""
			if p.Adjusted != nil {
				adj = p.Adjusted.Reason
			}
			if adj != tt.adjust {
				t.Fatalf("adjusted %q want %q", adj, tt.adjust)
			}
		})
	}
}

func TestPlanToolMessage(t *testing.T) {
	in := when.ScheduleInput{Now: utc("2030-01-01T00:00:00Z"), Zone: time.UTC}
	long := strings.Repeat("字", 2500)
	p, f := when.PlanTool(params(t, `{"message":"`+long+`","delay":"1m"}`), in)
	if f != nil || !p.Truncated || p.OriginalLength != 2500 || len([]rune(p.Message)) != 2000 {
		t.Fatalf("got truncated=%v len=%d stored=%d %v", p.Truncated, p.OriginalLength, len([]rune(p.Message)), f)
	}
	p, _ = when.PlanTool(params(t, `{"message":"  keep  spaces \n","delay":"1m"}`), in)
	if p.Message != "  keep  spaces \n" || p.Truncated {
		t.Fatalf("message %q", p.Message)
	}
}
