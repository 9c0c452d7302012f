package model_test

import (
	"slices"
	"testing"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

// TestAssistAndSurveySettings: issue 31's settings are off by default,
// read bools as the other settings do and clamp their numbers.
func TestAssistAndSurveySettings(t *testing.T) {
	s, problems := model.ParseSettings([]byte(`{}`), 0)
	if s.SatisfactionSurvey || s.AIAssist || s.SatisfactionWindow != 600 || s.AICallsPerDay != 50 || len(problems) != 0 {
		t.Fatalf("defaults %+v %v", s, problems)
	}
	s, _ = model.ParseSettings([]byte(`{"satisfaction_survey":"on","ai_assist":"true","satisfaction_window":"90","ai_calls_per_day":7.9}`), 0)
	if !s.SatisfactionSurvey || !s.AIAssist || s.SatisfactionWindow != 90 || s.AICallsPerDay != 7 {
		t.Fatalf("set %+v", s)
	}
	s, problems = model.ParseSettings([]byte(`{"satisfaction_window":5,"ai_calls_per_day":100000,"ai_assist":"maybe"}`), 0)
	if s.SatisfactionWindow != 60 || s.AICallsPerDay != 1000 || s.AIAssist {
		t.Fatalf("clamped %+v", s)
	}
	for _, f := range []string{"satisfaction_window", "ai_calls_per_day", "ai_assist"} {
		if !slices.Contains(problems, f) {
			t.Errorf("problem %s not reported: %v", f, problems)
		}
	}
}

func TestSurveyScore(t *testing.T) {
	for in, want := range map[string]int{"5": 5, " 1 ": 1, "３": 3, "4分": 4, "5星": 5, "2.": 2, "5!": 5} {
		if got, ok := model.SurveyScore(in); !ok || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "0", "6", "10", "55", "5 stars", "five", "-1", "1.5", "５５"} {
		if got, ok := model.SurveyScore(in); ok {
			t.Errorf("%q read as score %d", in, got)
		}
	}
}

func TestCannedName(t *testing.T) {
	for in, want := range map[string]string{"hi": "hi", "/Hi": "hi", " thanks_2 ": "thanks_2", "退款": "退款", "a-b": "a-b"} {
		if got, ok := model.CannedName(in); !ok || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "/", "two words", "a/b", "x!", "n\tm", "123456789012345678901234567890123"} {
		if got, ok := model.CannedName(in); ok {
			t.Errorf("%q accepted as %q", in, got)
		}
	}
}
