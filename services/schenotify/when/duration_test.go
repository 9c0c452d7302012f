package when_test

import (
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/schenotify/when"
)

func TestParseDuration(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30m", 30 * time.Minute, true},
		{"2h15m", 2*time.Hour + 15*time.Minute, true},
		{"1d12h", day + 12*time.Hour, true},
		{"1w", 7 * day, true},
		{"90s", 90 * time.Second, true},
		{"2000ms", 2 * time.Second, true},
		{"0s", 0, true},
		{"PT30M", 30 * time.Minute, true},
		{"P1DT2H", day + 2*time.Hour, true},
		{"P2W", 14 * day, true},
		{"PT90M", 90 * time.Minute, true},
		{"P1W2DT3H4M5S", 9*day + 3*time.Hour + 4*time.Minute + 5*time.Second, true},
		{"", 0, false},
		{"1.5h", 0, false},
		{"-5m", 0, false},
		{"+5m", 0, false},
		{"500ms", 0, false},
		{"5", 0, false},
		{"m", 0, false},
		{"5y", 0, false},
		{"1mo", 0, false},
		{"5 m", 0, false},
		{"P", 0, false},
		{"PT", 0, false},
		{"P1DT", 0, false},
		{"P1M", 0, false},
		{"P1Y", 0, false},
		{"P1D1W", 0, false},
		{"PT1.5H", 0, false},
		{"pt30m", 0, false},
		{"99999999999999999999s", 0, false},
		{"300000w", 0, false},
		{"５m", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := when.ParseDuration(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

// FuzzParseDuration checks the parser against time.ParseDuration for the
// shared syntax, and the FormatDuration round trip.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30m", "1d12h", "PT30M", "P1DT2H", "2000ms", "1.5h", "-1s", "P1W", "1h1h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := when.ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 || d%time.Second != 0 {
			t.Fatalf("%q gave %v", s, d)
		}
		if !strings.HasPrefix(s, "P") && !strings.ContainsAny(s, "dw") {
			want, err := time.ParseDuration(s)
			if err != nil || want != d {
				t.Fatalf("%q: got %v, time.ParseDuration %v %v", s, d, want, err)
			}
		}
		back, err := when.ParseDuration(when.FormatDuration(d))
		if err != nil || back != d {
			t.Fatalf("round trip %q -> %q -> %v %v", s, when.FormatDuration(d), back, err)
		}
	})
}
