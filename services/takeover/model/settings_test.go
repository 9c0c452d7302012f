package model_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

func TestConfigParsing(t *testing.T) {
	def := model.DefaultSettings()
	longWord := strings.Repeat("x", 65)
	many := make([]string, 0, 120)
	for i := range 120 {
		many = append(many, fmt.Sprintf("w%d", i))
	}
	manyJSON, _ := json.Marshal(many)
	tests := []struct {
		name     string
		config   string
		check    func(s model.Settings) bool
		problems []string
	}{
		{"empty", ``, func(s model.Settings) bool { return equalSettings(s, def) }, nil},
		{"null", `null`, func(s model.Settings) bool { return equalSettings(s, def) }, nil},
		{"not an object", `[1,2]`, func(s model.Settings) bool { return equalSettings(s, def) }, []string{"config"}},
		{"timeout integer", `{"takeover_timeout":120}`, func(s model.Settings) bool { return s.TakeoverTimeout == 120 }, nil},
		{"timeout float truncated", `{"takeover_timeout":120.9}`, func(s model.Settings) bool { return s.TakeoverTimeout == 120 }, nil},
		{"timeout decimal string", `{"takeover_timeout":" 90 "}`, func(s model.Settings) bool { return s.TakeoverTimeout == 90 }, nil},
		{"timeout float string", `{"takeover_timeout":"90.5"}`, func(s model.Settings) bool { return s.TakeoverTimeout == 90 }, nil},
		{"timeout zero clamps up", `{"takeover_timeout":0}`, func(s model.Settings) bool { return s.TakeoverTimeout == 30 }, []string{"takeover_timeout"}},
		{"timeout negative clamps up", `{"takeover_timeout":-5}`, func(s model.Settings) bool { return s.TakeoverTimeout == 30 }, []string{"takeover_timeout"}},
		{"timeout huge clamps down", `{"takeover_timeout":1e30}`, func(s model.Settings) bool { return s.TakeoverTimeout == 86400 }, []string{"takeover_timeout"}},
		{"timeout true is default", `{"takeover_timeout":true}`, func(s model.Settings) bool { return s.TakeoverTimeout == 600 }, []string{"takeover_timeout"}},
		{"timeout junk is default", `{"takeover_timeout":"soon"}`, func(s model.Settings) bool { return s.TakeoverTimeout == 600 }, []string{"takeover_timeout"}},
		{"timeout null is default", `{"takeover_timeout":null}`, func(s model.Settings) bool { return s.TakeoverTimeout == 600 }, nil},
		{"timeout object is default", `{"takeover_timeout":{}}`, func(s model.Settings) bool { return s.TakeoverTimeout == 600 }, []string{"takeover_timeout"}},
		{"history limit clamps", `{"history_limit":2001}`, func(s model.Settings) bool { return s.HistoryLimit == 2000 }, []string{"history_limit"}},
		{"history limit low", `{"history_limit":"3"}`, func(s model.Settings) bool { return s.HistoryLimit == 10 }, []string{"history_limit"}},
		{"bare string is one word", `{"trigger_words":"help me"}`, func(s model.Settings) bool { return slices.Equal(s.TriggerWords, []string{"help me"}) }, nil},
		{"scalars become text", `{"trigger_words":[12, true, 1.5, null, {"a":1}, [1], " refund ", "", "refund"]}`,
			func(s model.Settings) bool {
				return slices.Equal(s.TriggerWords, []string{"12", "true", "1.5", "refund"})
			}, []string{"trigger_words"}},
		{"long word dropped", `{"trigger_words":["` + longWord + `","ok"]}`, func(s model.Settings) bool { return slices.Equal(s.TriggerWords, []string{"ok"}) }, []string{"trigger_words"}},
		{"at most 100 words", `{"trigger_words":` + string(manyJSON) + `}`, func(s model.Settings) bool { return len(s.TriggerWords) == 100 && s.TriggerWords[99] == "w99" }, []string{"trigger_words"}},
		{"string false", `{"auto_takeover_on_trigger":"false"}`, func(s model.Settings) bool { return !s.AutoTakeoverOnTrigger }, nil},
		{"string OFF", `{"takeover_on_reply":"OFF"}`, func(s model.Settings) bool { return !s.TakeoverOnReply }, nil},
		{"string Yes", `{"trigger_case_sensitive":"Yes"}`, func(s model.Settings) bool { return s.TriggerCaseSensitive }, nil},
		{"bool junk default", `{"auto_takeover_on_trigger":"maybe","trigger_case_sensitive":1}`, func(s model.Settings) bool { return s.AutoTakeoverOnTrigger && !s.TriggerCaseSensitive }, []string{"auto_takeover_on_trigger", "trigger_case_sensitive"}},
		{"match word", `{"trigger_match":"Word"}`, func(s model.Settings) bool { return s.TriggerMatch == model.MatchWord }, nil},
		{"match unknown", `{"trigger_match":"regex"}`, func(s model.Settings) bool { return s.TriggerMatch == model.MatchSubstring }, []string{"trigger_match"}},
		{"record groups", `{"record_groups":"active_only"}`, func(s model.Settings) bool { return s.RecordGroups == model.RecordActiveOnly }, nil},
		{"record groups unknown", `{"record_groups":"none"}`, func(s model.Settings) bool { return s.RecordGroups == model.RecordAll }, []string{"record_groups"}},
		{"notice trimmed", `{"user_notice_on_takeover":"  hi  "}`, func(s model.Settings) bool { return s.NoticeOnTakeover == "hi" }, nil},
		{"notice cut", `{"user_notice_on_release":"` + strings.Repeat("é", 2100) + `"}`, func(s model.Settings) bool { return utf8.RuneCountInString(s.NoticeOnRelease) == 2000 }, []string{"user_notice_on_release"}},
		{"notice not a string", `{"user_notice_on_release":5}`, func(s model.Settings) bool { return s.NoticeOnRelease == "" }, []string{"user_notice_on_release"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, problems := model.ParseSettings([]byte(tt.config), 0)
			if !tt.check(s) {
				t.Errorf("settings = %+v", s)
			}
			slices.Sort(problems)
			if !slices.Equal(problems, tt.problems) {
				t.Errorf("problems = %v, want %v", problems, tt.problems)
			}
		})
	}
}

func TestConfigMinTimeoutSeam(t *testing.T) {
	s, _ := model.ParseSettings([]byte(`{"takeover_timeout":2}`), 1)
	if s.TakeoverTimeout != 2 {
		t.Fatalf("timeout = %d, want 2 with a lowered minimum", s.TakeoverTimeout)
	}
	s, _ = model.ParseSettings([]byte(`{"takeover_timeout":2}`), 0)
	if s.TakeoverTimeout != 30 {
		t.Fatalf("timeout = %d, want 30", s.TakeoverTimeout)
	}
}

func TestHistorySlack(t *testing.T) {
	for _, tt := range []struct{ limit, slack int }{{10, 1}, {300, 30}, {2000, 200}, {15, 1}} {
		if got := (model.Settings{HistoryLimit: tt.limit}).HistorySlack(); got != tt.slack {
			t.Errorf("slack(%d) = %d, want %d", tt.limit, got, tt.slack)
		}
	}
}

func equalSettings(a, b model.Settings) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// FuzzConfig checks that parsing never fails and always yields values within
// the bounds of spec §2, and that parsing its own output is a fixed point.
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `{"takeover_timeout":"12.5e1","trigger_words":"a"}`,
		`{"trigger_words":[1,"x",null,{"y":2}],"auto_takeover_on_trigger":"No"}`,
		`{"history_limit":-1e400,"record_groups":"ADDRESSED","trigger_match":"word"}`,
		`{"user_notice_on_takeover":"\u0000 hi","takeover_on_reply":"1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, _ := model.ParseSettings(raw, 0)
		if s.TakeoverTimeout < 30 || s.TakeoverTimeout > 86400 {
			t.Fatalf("timeout %d out of bounds", s.TakeoverTimeout)
		}
		if s.HistoryLimit < 10 || s.HistoryLimit > 2000 {
			t.Fatalf("history limit %d out of bounds", s.HistoryLimit)
		}
		if len(s.TriggerWords) > 100 {
			t.Fatalf("%d words", len(s.TriggerWords))
		}
		seen := map[string]bool{}
		for _, w := range s.TriggerWords {
			if w == "" || w != strings.TrimSpace(w) || utf8.RuneCountInString(w) > 64 || seen[w] {
				t.Fatalf("bad word %q", w)
			}
			seen[w] = true
		}
		if s.TriggerMatch != "substring" && s.TriggerMatch != "word" {
			t.Fatalf("match %q", s.TriggerMatch)
		}
		switch s.RecordGroups {
		case "all", "addressed", "active_only":
		default:
			t.Fatalf("record_groups %q", s.RecordGroups)
		}
		if utf8.RuneCountInString(s.NoticeOnTakeover) > 2000 || utf8.RuneCountInString(s.NoticeOnRelease) > 2000 {
			t.Fatal("notice too long")
		}
		again, _ := json.Marshal(s)
		s2, problems := model.ParseSettings(again, 0)
		if !equalSettings(s, s2) || len(problems) != 0 {
			t.Fatalf("round trip: %+v -> %+v (%v)", s, s2, problems)
		}
	})
}
