package schenotify_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/schenotify"
)

// Fuzz targets added by the reliability work (issue 9): the legacy !dsche
// command line, the installation config and reminder ids. Seeds are in
// testdata/fuzz/<target>.

func FuzzParseDsche(f *testing.F) {
	for _, s := range []string{"!dsche abc123", "!dsche", "!dsche ABC123 extra", "!dsche \x00", "!dsche 1 2 3", "／dsche x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, full string) {
		words := strings.Fields(full)
		in := schenotify.CommandIn{Name: "dsche", FullText: full, Prefix: "!"}
		if len(words) > 1 {
			in.Params = words[1:]
		}
		a, b := schenotify.ParseDsche(in), schenotify.ParseDsche(in)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("not deterministic: %s vs %s", ja, jb)
		}
	})
}

func FuzzNormalizeConfig(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"language":"en_US","timezone":"Asia/Shanghai","max_reminders":5,"max_per_session":9}`,
		`{"max_reminders":"7"}`, `{"max_reminders":-1}`, `{"timezone":"../../etc/passwd"}`, `[1]`, `{"language":1e309}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := schenotify.NormalizeConfig(raw, time.UTC)
		if s.Zone == nil || s.Language == "" {
			t.Fatalf("%q: no zone or language: %+v", raw, s)
		}
		if s.MaxReminders <= 0 || s.MaxPerSession <= 0 || s.MaxPerSession > s.MaxReminders {
			t.Fatalf("%q: limits %d/%d", raw, s.MaxPerSession, s.MaxReminders)
		}
	})
}

func FuzzNormalizeID(f *testing.F) {
	for _, s := range []string{"abc123", "ABC123", "", "a.b", "a*", strings.Repeat("a", 100), "İ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := schenotify.NormalizeID(s)
		if !ok {
			return
		}
		if id != strings.ToLower(id) || strings.ContainsAny(id, ".*> \t") || id == "" {
			t.Fatalf("%q accepted as %q", s, id)
		}
		if again, ok := schenotify.NormalizeID(id); !ok || again != id {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, id, again)
		}
	})
}
