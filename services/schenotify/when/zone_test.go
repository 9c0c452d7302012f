package when_test

import (
	"errors"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := settings.LoadZone(name)
	if err != nil {
		t.Fatalf("LoadZone(%q): %v", name, err)
	}
	return loc
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name   string
		zone   string
		wall   when.Wall
		want   string
		adjust string
	}{
		{"plain", "Asia/Shanghai", when.Wall{2030, 1, 2, 9, 0, 0}, "2030-01-02T01:00:00Z", ""},
		{"utc", "UTC", when.Wall{2030, 6, 1, 12, 30, 5}, "2030-06-01T12:30:05Z", ""},
		{"ny gap", "America/New_York", when.Wall{2030, 3, 10, 2, 30, 0}, "2030-03-10T07:30:00Z", when.AdjustGap},
		{"ny gap start", "America/New_York", when.Wall{2030, 3, 10, 2, 0, 0}, "2030-03-10T07:00:00Z", when.AdjustGap},
		{"ny before gap", "America/New_York", when.Wall{2030, 3, 10, 1, 59, 59}, "2030-03-10T06:59:59Z", ""},
		{"ny after gap", "America/New_York", when.Wall{2030, 3, 10, 3, 0, 0}, "2030-03-10T07:00:00Z", ""},
		{"ny overlap", "America/New_York", when.Wall{2030, 11, 3, 1, 30, 0}, "2030-11-03T05:30:00Z", when.AdjustOverlap},
		{"ny after overlap", "America/New_York", when.Wall{2030, 11, 3, 2, 0, 0}, "2030-11-03T07:00:00Z", ""},
		{"lord howe half hour gap", "Australia/Lord_Howe", when.Wall{2030, 10, 6, 2, 15, 0}, "2030-10-05T15:45:00Z", when.AdjustGap},
		{"samoa skipped day", "Pacific/Apia", when.Wall{2011, 12, 30, 12, 0, 0}, "2011-12-30T22:00:00Z", when.AdjustGap},
		{"berlin overlap", "Europe/Berlin", when.Wall{2030, 10, 27, 2, 30, 0}, "2030-10-27T00:30:00Z", when.AdjustOverlap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, adj := when.Resolve(tt.wall, mustZone(t, tt.zone))
			if got.Format(time.RFC3339) != tt.want || adj != tt.adjust {
				t.Errorf("Resolve(%v) = %s %q, want %s %q", tt.wall, got.Format(time.RFC3339), adj, tt.want, tt.adjust)
			}
		})
	}
}

// TestResolveMatchesTimeDateAwayFromTransitions checks the policy against
// time.Date wherever a wall time exists exactly once.
func TestResolveMatchesTimeDateAwayFromTransitions(t *testing.T) {
	for _, name := range []string{"America/New_York", "Europe/London", "Asia/Shanghai", "Australia/Sydney"} {
		loc := mustZone(t, name)
		for h := 0; h < 24*400; h += 7 {
			base := time.Date(2030, 1, 1, 0, 17, 0, 0, time.UTC).Add(time.Duration(h) * time.Hour)
			w := when.Wall{base.Year(), int(base.Month()), base.Day(), base.Hour(), base.Minute(), base.Second()}
			got, adj := when.Resolve(w, loc)
			if adj != "" {
				continue
			}
			want := time.Date(w.Year, time.Month(w.Month), w.Day, w.Hour, w.Minute, w.Second, 0, loc)
			if !got.Equal(want) {
				t.Fatalf("%s %v: got %s want %s", name, w, got, want)
			}
		}
	}
}

func TestDefaultZoneName(t *testing.T) {
	noLink := func(string) (string, error) { return "", errors.New("no link") }
	link := func(target string) func(string) (string, error) {
		return func(string) (string, error) { return target, nil }
	}
	env := func(v string, ok bool) func(string) (string, bool) {
		return func(string) (string, bool) { return v, ok }
	}
	tests := []struct {
		name     string
		env      func(string) (string, bool)
		readlink func(string) (string, error)
		want     string
	}{
		{"tz set", env("Asia/Tokyo", true), noLink, "Asia/Tokyo"},
		{"tz colon", env(":Europe/Paris", true), noLink, "Europe/Paris"},
		{"tz empty means utc", env("", true), link("/usr/share/zoneinfo/Asia/Tokyo"), "UTC"},
		{"tz bad falls to link", env("Mars/Base", true), link("/usr/share/zoneinfo/Europe/Berlin"), "Europe/Berlin"},
		{"link relative", env("", false), link("../usr/share/zoneinfo/America/New_York"), "America/New_York"},
		{"link bad", env("", false), link("/etc/somewhere"), "UTC"},
		{"nothing", env("", false), noLink, "UTC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := when.DefaultZoneName(tt.env, tt.readlink); got != tt.want {
				t.Errorf("got %q want %q", got, tt.want)
			}
		})
	}
}
