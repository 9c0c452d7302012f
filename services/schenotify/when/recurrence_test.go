package when_test

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/langbot-nats/plugins/services/schenotify/when"
)

func TestParseRecurrence(t *testing.T) {
	tests := []struct {
		in       string
		min      time.Duration
		kind     string
		every    time.Duration
		wantErr  bool
		tooShort bool
	}{
		{in: "0 9 * * 1-5", kind: "cron"},
		{in: "*/15 8-18 * JAN,FEB MON-FRI", kind: "cron"},
		{in: "0 9 ? * *", kind: "cron"},
		{in: "@daily", kind: "cron"},
		{in: "@midnight", kind: "cron"},
		{in: "@hourly", kind: "cron"},
		{in: "@weekly", kind: "cron"},
		{in: "@monthly", kind: "cron"},
		{in: "@yearly", kind: "cron"},
		{in: "@annually", kind: "cron"},
		{in: "@every 1d12h", kind: "every", every: 36 * time.Hour},
		{in: "@every PT90M", kind: "every", every: 90 * time.Minute},
		{in: "@every 2s", min: time.Second, kind: "every", every: 2 * time.Second},
		{in: "@every 30s", min: time.Minute, wantErr: true, tooShort: true},
		{in: "@every 0s", min: time.Minute, wantErr: true, tooShort: true},
		{in: "@every", wantErr: true},
		{in: "@every5m", wantErr: true},
		{in: "@every 1.5h", wantErr: true},
		{in: "TZ=UTC 0 9 * * *", wantErr: true},
		{in: "CRON_TZ=UTC 0 9 * * *", wantErr: true},
		{in: "0 0 9 * * *", wantErr: true},
		{in: "9 * * *", wantErr: true},
		{in: "@reboot", wantErr: true},
		{in: "", wantErr: true},
		{in: "61 * * * *", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			min := tt.min
			if min == 0 {
				min = time.Minute
			}
			r, err := when.ParseRecurrence(tt.in, min)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if r.Kind != tt.kind || r.Every() != tt.every {
				t.Errorf("got %+v every %v", r.Recurrence, r.Every())
			}
		})
	}
}

// TestCronNextNeverOccurs covers "0 0 30 2 *", which robfig parses but
// which has no occurrence.
func TestCronNextNeverOccurs(t *testing.T) {
	r, err := when.ParseRecurrence("0 0 30 2 *", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.CronNext(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), time.UTC); !got.IsZero() {
		t.Fatalf("got %v, want zero", got)
	}
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestCronPolicyDST is the occurrence part of acceptance test N2.
func TestCronPolicyDST(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	gap, _ := when.ParseRecurrence("30 2 * * *", time.Minute)
	// The 03-09 occurrence arms 03-10 03:30 EDT, which arms 03-11 02:30 EDT.
	steps := []struct{ after, want string }{
		{"2030-03-09T07:30:00Z", "2030-03-10T07:30:00Z"},
		{"2030-03-10T07:30:00Z", "2030-03-11T06:30:00Z"},
	}
	for _, s := range steps {
		if got := gap.CronNext(utc(s.after), ny); got.Format(time.RFC3339) != s.want {
			t.Errorf("30 2: after %s got %s want %s", s.after, got.Format(time.RFC3339), s.want)
		}
	}
	next := gap.Upcoming(utc("2030-03-09T07:30:00Z"), time.Time{}, ny, 3)
	if len(next) != 3 || next[1].In(ny).Format(time.RFC3339) != "2030-03-10T03:30:00-04:00" {
		t.Errorf("next = %v", next)
	}
	over, _ := when.ParseRecurrence("30 1 * * *", time.Minute)
	steps = []struct{ after, want string }{
		{"2030-11-02T12:00:00Z", "2030-11-03T05:30:00Z"},
		{"2030-11-03T05:30:00Z", "2030-11-04T06:30:00Z"},
		{"2030-11-03T06:30:00Z", "2030-11-04T06:30:00Z"},
	}
	for _, s := range steps {
		if got := over.CronNext(utc(s.after), ny); got.Format(time.RFC3339) != s.want {
			t.Errorf("30 1: after %s got %s want %s", s.after, got.Format(time.RFC3339), s.want)
		}
	}
	// Every minute through the overlap hour: each wall time once, the
	// repeated hour only at its first instant.
	every, _ := when.ParseRecurrence("* * * * *", time.Minute)
	prev := utc("2030-11-03T04:00:00Z")
	seen := map[string]bool{}
	for i := 0; i < 180; i++ {
		n := every.CronNext(prev, ny)
		wall := n.In(ny).Format(time.DateTime)
		if !n.After(prev) || seen[wall] {
			t.Fatalf("step %d: %s -> %s (%s)", i, prev, n, wall)
		}
		seen[wall] = true
		if want := time.Minute; n.Sub(prev) != want && n.Format(time.RFC3339) != "2030-11-03T07:00:00Z" {
			t.Fatalf("step %d: %s -> %s", i, prev, n)
		}
		prev = n
	}
}

// TestCronPolicyMatchesRobfigAwayFromTransitions checks that policy
// occurrences equal robfig's Next in the zone where no transition is near.
func TestCronPolicyMatchesRobfigAwayFromTransitions(t *testing.T) {
	exprs := []string{"0 9 * * 1-5", "*/7 * * * *", "30 2 * * *", "15 1 1 * *", "@weekly", "0 0 29 2 *"}
	for _, zone := range []string{"America/New_York", "Europe/Berlin", "Asia/Shanghai", "Australia/Lord_Howe"} {
		loc := mustZone(t, zone)
		for _, e := range exprs {
			r, err := when.ParseRecurrence(e, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			spec, _ := cron.ParseStandard("CRON_TZ=" + zone + " " + e)
			at := utc("2030-01-01T00:00:00Z")
			for i := 0; i < 300; i++ {
				got := r.CronNext(at, loc)
				want := spec.Next(at)
				_, o1 := at.In(loc).Zone()
				_, o2 := want.In(loc).Zone()
				_, o3 := got.In(loc).Zone()
				if o1 == o2 && o2 == o3 && !got.Equal(want) {
					t.Fatalf("%s %q after %s: policy %s robfig %s", zone, e, at, got, want)
				}
				at = got
			}
		}
	}
}

func TestEveryNext(t *testing.T) {
	r, _ := when.ParseRecurrence("@every 2h", time.Minute)
	anchor := utc("2030-01-01T00:00:00Z")
	tests := []struct{ now, want string }{
		{"2029-12-31T23:00:00Z", "2030-01-01T02:00:00Z"},
		{"2030-01-01T00:00:00Z", "2030-01-01T02:00:00Z"},
		{"2030-01-01T00:00:01Z", "2030-01-01T02:00:00Z"},
		{"2030-01-01T05:59:59Z", "2030-01-01T06:00:00Z"},
		{"2030-01-01T06:00:00Z", "2030-01-01T08:00:00Z"},
	}
	for _, tt := range tests {
		if got := r.Next(anchor, utc(tt.now), time.UTC); got.Format(time.RFC3339) != tt.want {
			t.Errorf("now %s: got %s want %s", tt.now, got.Format(time.RFC3339), tt.want)
		}
	}
	if n := r.Skipped(anchor, utc("2030-01-01T06:00:00Z"), time.UTC, 100); n != 3 {
		t.Errorf("skipped = %d, want 3", n)
	}
}

// FuzzParseRecurrence checks that robfig never panics through the parser,
// that accepted rules round-trip through their stored form, and that
// occurrences strictly increase.
func FuzzParseRecurrence(f *testing.F) {
	for _, s := range []string{"0 9 * * 1-5", "@every 2h", "@daily", "TZ=UTC 0 9 * * *", "0 0 30 2 *", "*/0 * * * *", "1-0 * * * *", "@every P1D"} {
		f.Add(s)
	}
	ny := mustZone(f, "America/New_York")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := when.ParseRecurrence(s, time.Minute)
		if err != nil {
			return
		}
		back, err := when.RuleOf(r.Recurrence)
		if err != nil || back.Recurrence != r.Recurrence {
			t.Fatalf("%q: stored form %+v does not parse back: %v", s, r.Recurrence, err)
		}
		if r.Kind == when.KindEvery && r.Every() < time.Minute {
			t.Fatalf("%q: interval %v", s, r.Every())
		}
		prev := utc("2030-03-09T00:00:00Z")
		for i := 0; i < 5; i++ {
			n := r.Next(prev, prev, ny)
			if n.IsZero() {
				return
			}
			if !n.After(prev) {
				t.Fatalf("%q: %s not after %s", s, n, prev)
			}
			prev = n
		}
	})
}
