package schenotify_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/<name>.golden, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func renderer(t testing.TB) schenotify.Renderer {
	cat, err := schenotify.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	return schenotify.Renderer{Cat: cat}
}

func settings(t testing.TB, lang, zone string, extra string) schenotify.Settings {
	raw := fmt.Sprintf(`{"language":%q,"timezone":%q%s}`, lang, zone, extra)
	return schenotify.NormalizeConfig(json.RawMessage(raw), time.UTC)
}

func TestCatalogComplete(t *testing.T) {
	rd := renderer(t)
	if langs := rd.Cat.Languages(); strings.Join(langs, ",") != "en_US,zh_Hans" {
		t.Fatalf("languages %v", langs)
	}
	for _, k := range rd.Cat.Keys() {
		for _, l := range []string{i18n.EnUS, i18n.ZhHans} {
			if strings.TrimSpace(rd.Cat.Text(l, k, nil)) == "" && !strings.HasPrefix(k, "cmd.state_") {
				t.Errorf("%s %s is empty", l, k)
			}
		}
	}
}

// TestErrorTexts renders every error code in both languages: never empty,
// never the key itself.
func TestErrorTexts(t *testing.T) {
	rd := renderer(t)
	codes := []string{"missing_params", "invalid_param", "conflicting_params", "invalid_time", "invalid_delay",
		"invalid_recurrence", "interval_too_short", "invalid_until", "time_passed", "too_far", "until_before_start",
		"no_session", "too_many", "too_many_in_session", "not_found", "unavailable", "internal", "natural_unreadable", "no_message", "too_long"}
	var out strings.Builder
	for _, lang := range []string{"en_US", "zh_Hans"} {
		s := settings(t, lang, "Asia/Shanghai", "")
		for _, c := range codes {
			r := rd.ToolError(s, &when.Failure{Code: c, Args: map[string]string{"field": "delay", "value": "soon",
				"min": "1m", "time": "2030-01-01 09:00:00", "now": "2030-01-01 09:00:05", "max": "2035-01-01 09:00:05",
				"until": "2029-01-01 00:00:00", "limit": "100", "id": "k7m2pq"}})
			if r.Text == "" || strings.HasPrefix(r.Text, "err.") {
				t.Errorf("%s %s: text %q", lang, c, r.Text)
			}
			fmt.Fprintf(&out, "%s %s: %s\n", lang, c, r.Text)
		}
	}
	golden(t, "render/errors", []byte(out.String()))
}

func TestRenderTool(t *testing.T) {
	rd := renderer(t)
	now := utc("2030-01-01T01:00:05Z")
	for _, lang := range []string{"en_US", "zh_Hans"} {
		sh := settings(t, lang, "Asia/Shanghai", "")
		golden(t, "render/time_"+lang, mustJSON(t, rd.Now(sh, now)))
		bad := settings(t, lang, "Mars/Base", `,"max_reminders":5000`)
		golden(t, "render/time_badzone_"+lang, mustJSON(t, rd.Now(bad, now)))

		ny := settings(t, lang, "America/New_York", "")
		in := when.ScheduleInput{Now: utc("2030-03-01T00:00:00Z"), Zone: ny.Zone}
		p, f := when.PlanTool(params(t, `{"message":"stand up","time_str":"2030-03-10 02:30:00"}`), in)
		if f != nil {
			t.Fatal(f)
		}
		golden(t, "render/scheduled_gap_"+lang, mustJSON(t, rd.ScheduleResult(ny, "k7m2pq", p, in.Now)))
		p, f = when.PlanTool(params(t, `{"message":"`+strings.Repeat("x", 2100)+`","recurrence":"30 2 * * *","time_str":"2030-03-09 00:00:00","until":"2030-03-10 23:00:00"}`), in)
		if f != nil {
			t.Fatal(f)
		}
		golden(t, "render/scheduled_recurring_"+lang, mustJSON(t, rd.ScheduleResult(ny, "k7m2pq", p, in.Now)))

		recs := sampleRecords()
		golden(t, "render/list_"+lang, mustJSON(t, rd.List(sh, recs[:4], now)))
		golden(t, "render/cancel_"+lang, mustJSON(t, rd.Cancelled(sh, recs[0], true)))
	}
}

func sampleRecords() []*schenotify.Record {
	base := utc("2030-01-02T01:00:00Z")
	var recs []*schenotify.Record
	for i := 0; i < 25; i++ {
		r := &schenotify.Record{V: 1, ID: fmt.Sprintf("k7m2%c%c", 'a'+i%20, 'p'), Zone: "Asia/Shanghai",
			NextDue: base.Add(time.Duration(i) * time.Hour), CreatedAt: base.Add(-time.Hour), State: schenotify.StateScheduled,
			Message: fmt.Sprintf("reminder %d", i)}
		recs = append(recs, r)
	}
	recs[0].Message = "line one\nline two " + strings.Repeat("長", 120)
	recs[1].State, recs[1].Attempt = schenotify.StateRetrying, 2
	recs[1].LastError = &schenotify.LastError{Code: schenotify.ErrCodeHost, Detail: "503", At: base}
	recs[2].State = schenotify.StateFailed
	recs[2].LastError = &schenotify.LastError{Code: schenotify.ErrCodeTimeout, At: base}
	recs[3].Recurrence = &when.Recurrence{Kind: when.KindCron, Expr: "0 9 * * 1-5"}
	recs[3].Zone = "Europe/Berlin"
	recs[4].State = schenotify.StatePaused
	return recs
}

func TestRenderCommands(t *testing.T) {
	rd := renderer(t)
	now := utc("2030-01-01T01:00:05Z")
	for _, lang := range []string{"en_US", "zh_Hans"} {
		s := settings(t, lang, "Asia/Shanghai", "")
		recs := sampleRecords()
		var out strings.Builder
		out.WriteString(rd.ListReply(s, recs, 1, 4, now) + "\n----\n")
		out.WriteString(rd.ListReply(s, recs, 99, 0, now) + "\n----\n")
		out.WriteString(rd.ListReply(s, recs[:3], 1, 0, now) + "\n----\n")
		out.WriteString(rd.ListReply(s, nil, 1, 0, now) + "\n----\n")
		out.WriteString(rd.Reply(s, rd.Deleted(s, recs[0], true)) + "\n----\n")
		out.WriteString(rd.Reply(s, rd.Cat.Text(lang, "cmd.help", map[string]string{"prefix": s.CommandPrefix})) + "\n----\n")
		bad := settings(t, lang, "Mars/Base", `,"notify_prefix":"a\nb"`)
		out.WriteString(rd.Reply(bad, rd.Cat.Text(lang, "cmd.add_usage", map[string]string{"prefix": bad.CommandPrefix})) + "\n")
		golden(t, "render/commands_"+lang, []byte(out.String()))
	}
}

func TestDeliveryText(t *testing.T) {
	rd := renderer(t)
	due := utc("2030-01-01T01:00:00Z")
	rec := &schenotify.Record{ID: "k7m2pq", Message: "drink water", Zone: "Asia/Shanghai"}
	tests := []struct {
		name, lang, extra string
		late              time.Duration
		skipped           int
		want              string
	}{
		{"on time", "en_US", "", 2 * time.Second, 0, "[Notify] drink water"},
		{"empty prefix", "en_US", `,"notify_prefix":""`, 0, 0, "drink water"},
		{"emoji prefix", "en_US", `,"notify_prefix":"⏰ "`, 0, 0, "⏰ drink water"},
		{"newline prefix", "en_US", `,"notify_prefix":"x\n"`, 0, 0, "[Notify] drink water"},
		{"60s is not late", "en_US", "", 60 * time.Second, 0, "[Notify] drink water"},
		{"90s late", "en_US", "", 90 * time.Second, 0, "[Notify] drink water\n(This was due at 2030-01-01 09:00:00 and arrives 1 min 30 s late.)"},
		{"late merged", "en_US", "", 2*time.Hour + 5*time.Minute + 7*time.Second, 2, "[Notify] drink water\n(This was due at 2030-01-01 09:00:00 and arrives 2 h 5 min late; 2 later occurrence(s) are included in it.)"},
		{"late zh", "zh_Hans", "", 3 * 24 * time.Hour, 0, "[Notify] drink water\n（原定 2030-01-01 09:00:00，晚到了 3 天。）"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := settings(t, tt.lang, "Asia/Shanghai", tt.extra)
			if got := rd.DeliveryText(s, rec, due, due.Add(tt.late), tt.skipped); got != tt.want {
				t.Errorf("got %q want %q", got, tt.want)
			}
		})
	}
}

// TestManifest checks the declaration against a golden file and that every
// label, description and prompt is filled in both languages.
func TestManifest(t *testing.T) {
	m, err := schenotify.Declaration()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
	check := func(what string, texts plugin.Text) {
		for l, s := range map[string]string{"en_US": texts.EnUS, "zh_Hans": texts.ZhHans} {
			if strings.TrimSpace(s) == "" || strings.Contains(s, ".label") || strings.Contains(s, ".description") {
				t.Errorf("%s %s: %q", what, l, s)
			}
		}
	}
	for _, c := range m.Config {
		check("config "+c.Name, c.Label)
		check("config "+c.Name, c.Description)
	}
	for _, c := range m.Commands {
		check("command "+c.Name, c.Label)
	}
	for _, tl := range m.Tools {
		check("tool "+tl.Name, tl.Label)
		check("tool "+tl.Name, tl.Description)
		if !json.Valid(tl.Parameters) || tl.LLMPrompt == "" {
			t.Errorf("tool %s: schema or prompt missing", tl.Name)
		}
	}
	p := m.Tools[1].LLMPrompt
	for _, must := range []string{"get_current_time_str first", "delay", "time_str", "cron", "@every", "session", "'ai'"} {
		if !strings.Contains(p, must) {
			t.Errorf("schedule_notify prompt does not mention %q", must)
		}
	}
	// An empty config normalises to the declared defaults.
	s := schenotify.NormalizeConfig(nil, time.UTC)
	defaults := map[string]any{"language": s.Language, "timezone": "", "notify_prefix": s.Prefix,
		"max_reminders": s.MaxReminders, "max_per_session": s.MaxPerSession, "mention_creator": s.MentionCreator,
		"command_prefix": s.CommandPrefix, "ai_calls_per_day": s.AICallsPerDay}
	for _, c := range m.Config {
		if w, ok := defaults[c.Name]; !ok || w != c.Default {
			t.Errorf("config %s: default %#v, settings use %#v", c.Name, c.Default, w)
		}
	}
	golden(t, "manifest", mustJSON(t, m))
}
