package when_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/schenotify/when"
)

func TestParseTime(t *testing.T) {
	sh := mustZone(t, "Asia/Shanghai")
	ny := mustZone(t, "America/New_York")
	tests := []struct {
		name   string
		in     string
		loc    *time.Location
		want   string // RFC 3339 UTC, "" for an error
		adjust string
	}{
		{"form L", "2030-01-02 09:00:00", sh, "2030-01-02T01:00:00Z", ""},
		{"form L short fields", "2030-1-2 9:0:0", sh, "2030-01-02T01:00:00Z", ""},
		{"form L tabs", "2030-01-02\t \t09:00:00", sh, "2030-01-02T01:00:00Z", ""},
		{"form L gap", "2030-03-10 02:30:00", ny, "2030-03-10T07:30:00Z", when.AdjustGap},
		{"form L overlap", "2030-11-03 01:30:00", ny, "2030-11-03T05:30:00Z", when.AdjustOverlap},
		{"form L year 1", "0001-01-01 00:00:00", time.UTC, "0001-01-01T00:00:00Z", ""},
		{"form R offset", "2030-01-01T09:00:00+02:00", sh, "2030-01-01T07:00:00Z", ""},
		{"form R Z", "2030-01-01T09:00:00Z", sh, "2030-01-01T09:00:00Z", ""},
		{"form R fraction", "2030-01-01T09:00:00.999+08:00", sh, "2030-01-01T01:00:00Z", ""},
		{"form R lower t z", "2030-01-01t09:00:00z", sh, "2030-01-01T09:00:00Z", ""},
		{"leading space", " 2030-01-02 09:00:00", sh, "", ""},
		{"trailing space", "2030-01-02 09:00:00 ", sh, "", ""},
		{"missing seconds", "2030-01-02 09:00", sh, "", ""},
		{"hour 24", "2030-01-02 24:00:00", sh, "", ""},
		{"second 60", "2030-01-02 09:00:60", sh, "", ""},
		{"second 61", "2030-01-02 09:00:61", sh, "", ""},
		{"feb 30", "2030-02-30 09:00:00", sh, "", ""},
		{"feb 29 non leap", "2030-02-29 09:00:00", sh, "", ""},
		{"feb 29 leap", "2032-02-29 09:00:00", time.UTC, "2032-02-29T09:00:00Z", ""},
		{"5 digit year", "20300-01-02 09:00:00", sh, "", ""},
		{"year 0", "0000-01-02 09:00:00", sh, "", ""},
		{"3 digit month", "2030-001-02 09:00:00", sh, "", ""},
		{"fullwidth digits", "２０３０-01-02 09:00:00", sh, "", ""},
		{"no separator", "2030-01-0209:00:00", sh, "", ""},
		{"iso without offset", "2030-01-01T09:00:00", sh, "", ""},
		{"form R bad offset", "2030-01-01T09:00:00+24:00", sh, "", ""},
		{"form R short offset", "2030-01-01T09:00:00+08", sh, "", ""},
		{"form R second 60", "2030-01-01T09:00:60Z", sh, "", ""},
		{"empty", "", sh, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := when.ParseTime(tt.in, tt.loc)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("ParseTime(%q) = %v, want error", tt.in, got.At)
				}
				return
			}
			if err != nil || got.At.Format(time.RFC3339) != tt.want || got.Adjust != tt.adjust {
				t.Fatalf("ParseTime(%q) = %v %q %v, want %s %q", tt.in, got.At, got.Adjust, err, tt.want, tt.adjust)
			}
		})
	}
}

// FuzzParseTime checks form R against time.Parse and form L by formatting
// the wall time back.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2030-01-02 09:00:00", "2030-1-2 9:0:0", "2030-01-01T09:00:00+02:00",
		"2030-01-01T09:00:00.5Z", "2030-02-30 09:00:00", "2030-03-10 02:30:00"} {
		f.Add(s)
	}
	ny := mustZone(f, "America/New_York")
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := when.ParseTime(s, ny)
		if err != nil {
			return
		}
		if ts.At.Nanosecond() != 0 || ts.At.Location() != time.UTC {
			t.Fatalf("%q: instant %v not UTC seconds", s, ts.At)
		}
		if !ts.Legacy {
			want, err := time.Parse(time.RFC3339, strings.ToUpper(s)) // RFC 3339 allows t and z
			if err != nil || !want.Truncate(time.Second).Equal(ts.At) {
				t.Fatalf("%q: got %v, time.Parse %v %v", s, ts.At, want, err)
			}
			return
		}
		w := ts.Requested
		if want := fmt.Sprintf("%04d-", w.Year); s[:5] != want {
			t.Fatalf("%q: wall %v", s, w)
		}
		back, err := when.ParseTime(w.String(), ny)
		if err != nil || !back.At.Equal(ts.At) {
			t.Fatalf("%q: round trip via %q gave %v %v", s, w.String(), back.At, err)
		}
		if ts.Adjust == "" && ts.At.In(ny).Format(time.DateTime) != w.String() {
			t.Fatalf("%q: unadjusted instant shows as %s", s, ts.At.In(ny).Format(time.DateTime))
		}
	})
}
