package schenotify_test

import (
	"encoding/json"
	"testing"

	"github.com/langbot-nats/plugins/services/schenotify"
)

func TestNormalizeConfig(t *testing.T) {
	def := mustZone(t, "Europe/Berlin")
	tests := []struct {
		name       string
		raw        string
		lang, zone string
		prefix     string
		maxR, maxS int
		warned     []string
	}{
		{"empty", `{}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, nil},
		{"not an object", `[1]`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, nil},
		{"all set", `{"language":"en_US","timezone":"Asia/Shanghai","notify_prefix":"⏰ ","max_reminders":10,"max_per_session":5}`, "en_US", "Asia/Shanghai", "⏰ ", 10, 5, nil},
		{"bad language silent", `{"language":"fr_FR"}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, nil},
		{"empty zone is default", `{"timezone":""}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, nil},
		{"unknown zone", `{"timezone":"Mars/Base"}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, []string{"timezone"}},
		{"offset zone", `{"timezone":"+08:00"}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, []string{"timezone"}},
		{"local zone", `{"timezone":"Local"}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, []string{"timezone"}},
		{"empty prefix", `{"notify_prefix":""}`, "zh_Hans", "Europe/Berlin", "", 100, 50, nil},
		{"newline prefix", `{"notify_prefix":"a\nb"}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, []string{"notify_prefix"}},
		{"long prefix", `{"notify_prefix":"123456789012345678901234567890123"}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, []string{"notify_prefix"}},
		{"32 rune prefix", `{"notify_prefix":"一二三四五六七八九十一二三四五六七八九十一二三四五六七八九十一二"}`, "zh_Hans", "Europe/Berlin", "一二三四五六七八九十一二三四五六七八九十一二三四五六七八九十一二", 100, 50, nil},
		{"clamped", `{"max_reminders":5000,"max_per_session":5000}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 1000, 1000, []string{"max_reminders", "max_per_session"}},
		{"zero", `{"max_reminders":0}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, []string{"max_reminders"}},
		{"fraction", `{"max_reminders":2.5}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, []string{"max_reminders"}},
		{"integral float", `{"max_reminders":20.0}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 20, 20, nil},
		{"string number", `{"max_per_session":"5"}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, []string{"max_per_session"}},
		{"session above installation", `{"max_reminders":3}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 3, 3, nil},
		{"null values", `{"timezone":null,"max_reminders":null}`, "zh_Hans", "Europe/Berlin", "[Notify] ", 100, 50, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := schenotify.NormalizeConfig(json.RawMessage(tt.raw), def)
			var warned []string
			for _, w := range s.Warnings {
				warned = append(warned, w.Field)
			}
			if s.Language != tt.lang || s.Zone.String() != tt.zone || s.Prefix != tt.prefix ||
				s.MaxReminders != tt.maxR || s.MaxPerSession != tt.maxS || len(warned) != len(tt.warned) {
				t.Fatalf("got %s %s %q %d %d %v", s.Language, s.Zone, s.Prefix, s.MaxReminders, s.MaxPerSession, warned)
			}
			for i := range warned {
				if warned[i] != tt.warned[i] {
					t.Fatalf("warnings %v, want %v", warned, tt.warned)
				}
			}
		})
	}
}
