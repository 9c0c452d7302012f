package schenotify_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// FuzzPlanTool checks schedule_notify validation on arbitrary parameter
// objects: a failure carries a known code; a success is in the future,
// within the horizon, with a stored message of at most 2000 valid code
// points, and its result round-trips through JSON to the same instant.
func FuzzPlanTool(f *testing.F) {
	for _, s := range []string{
		`{"message":"x","delay":"5m"}`, `{"message":"x","time_str":"2030-03-10 02:30:00"}`,
		`{"message":"x","recurrence":"30 2 * * *","until":"2030-04-01T00:00:00Z"}`, `{"message":1}`,
		`{"message":"x","delay":"5m","time_str":"2030-01-01T00:00:00Z"}`, `{"message":"\u00ff","recurrence":"@every P1D"}`,
	} {
		f.Add(s)
	}
	ny := mustZone(f, "America/New_York")
	rd := renderer(f)
	set := schenotify.NormalizeConfig([]byte(`{"language":"en_US","timezone":"America/New_York"}`), time.UTC)
	known := map[string]bool{"missing_params": true, "invalid_param": true, "conflicting_params": true, "invalid_time": true,
		"invalid_delay": true, "invalid_recurrence": true, "interval_too_short": true, "invalid_until": true,
		"time_passed": true, "too_far": true, "until_before_start": true, "too_long": true}
	now := utc("2030-03-01T12:00:00Z")
	f.Fuzz(func(t *testing.T, js string) {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(js), &m) != nil {
			return
		}
		p, fl := when.PlanTool(m, when.ScheduleInput{Now: now, Zone: ny})
		if fl != nil {
			if !known[fl.Code] {
				t.Fatalf("unknown code %q", fl.Code)
			}
			if txt := rd.ToolError(set, fl).Text; txt == "" || strings.HasPrefix(txt, "err.") {
				t.Fatalf("%s: text %q", fl.Code, txt)
			}
			return
		}
		if !p.First.After(now) || p.First.After(now.AddDate(5, 0, 0)) {
			t.Fatalf("first %v", p.First)
		}
		if !utf8.ValidString(p.Message) || utf8.RuneCountInString(p.Message) > when.MaxMessageRunes {
			t.Fatalf("stored message invalid or long")
		}
		b, err := json.Marshal(rd.ScheduleResult(set, "k7m2pq", p, now))
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			DueUTC string `json:"due_utc"`
		}
		if json.Unmarshal(b, &back) != nil || back.DueUTC != p.First.UTC().Format(time.RFC3339) {
			t.Fatalf("due_utc %q for %v", back.DueUTC, p.First)
		}
	})
}

// params decodes a tool's parameter object of a test table.
func params(t testing.TB, js string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	return m
}
