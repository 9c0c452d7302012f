package githubkit

import (
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/i18n"
)

// TestQuietWindowAcrossDST: a window is read in the installation's zone,
// and its end is the next local To, on both DST changes of New York.
func TestQuietWindowAcrossDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	q, err := parseQuiet("22:00-07:00")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		now     time.Time
		in      bool
		wantEnd time.Time
	}{
		{time.Date(2026, 3, 8, 6, 30, 0, 0, time.UTC), true, time.Date(2026, 3, 8, 11, 0, 0, 0, time.UTC)},   // 01:30 EST, ends 07:00 EDT
		{time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), true, time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}, // 01:30 EDT, ends 07:00 EST
		{time.Date(2026, 3, 9, 3, 0, 0, 0, time.UTC), true, time.Date(2026, 3, 9, 11, 0, 0, 0, time.UTC)},    // 23:00 EDT the day before
		{time.Date(2026, 3, 9, 16, 0, 0, 0, time.UTC), false, time.Time{}},                                   // noon
	}
	for _, c := range cases {
		if got := q.in(c.now, ny); got != c.in {
			t.Errorf("%v: in = %v", c.now, got)
		}
		if c.in {
			if got := q.end(c.now, ny); !got.Equal(c.wantEnd) {
				t.Errorf("%v: end %v, want %v", c.now, got.UTC(), c.wantEnd)
			}
		}
	}
	day, _ := parseQuiet("09:00-17:30")
	if !day.in(time.Date(2026, 3, 9, 21, 29, 0, 0, time.UTC), ny) || day.in(time.Date(2026, 3, 9, 21, 30, 0, 0, time.UTC), ny) {
		t.Error("a window within one day: 17:29 in, 17:30 out")
	}
	for _, bad := range []string{"", "22:00", "24:00-07:00", "22:60-07:00", "7:5-8:00", "22:00-22:00", "a:bc-07:00", "-1:00-07:00"} {
		if _, err := parseQuiet(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzParseQuiet: any text either is refused or gives a non-empty window
// of valid minutes that renders back to itself.
func FuzzParseQuiet(f *testing.F) {
	f.Add("22:00-07:00")
	f.Add("9:30-17:00")
	f.Add("23:59-00:00")
	f.Fuzz(func(t *testing.T, s string) {
		q, err := parseQuiet(s)
		if err != nil {
			return
		}
		if q.From == q.To || q.From < 0 || q.To < 0 || q.From >= 1440 || q.To >= 1440 {
			t.Fatalf("%q gave %+v", s, q)
		}
		again, err := parseQuiet(clock(q.From) + "-" + clock(q.To))
		if err != nil || *again != *q {
			t.Fatalf("%q re-parse %+v %v", s, again, err)
		}
	})
}

// TestGoldenNoise: the summaries and the quiet / digest replies, both
// languages.
func TestGoldenNoise(t *testing.T) {
	since := time.Date(2026, 3, 2, 14, 30, 0, 0, time.UTC)
	sh, _ := time.LoadLocation("Asia/Shanghai")
	c := &chatNoise{Quiet: &quietHours{From: 22 * 60, To: 7 * 60}, Since: &since, More: 4, Held: []heldEvent{
		{Repo: "octocat/Hello-World", N: 1, Text: "📤 octocat pushed 2 new commits to master: Make the greeting friendlier\n   https://github.com/octocat/Hello-World/compare/883efe034920...7a8f3ac80e2a"},
		{Repo: "octocat/linguist", N: 1, Text: "⭐ hubot starred the repository\n   https://github.com/octocat/linguist/stargazers"},
		{Repo: "octocat/Hello-World", N: 1, Text: "🍴 monalisa forked it to monalisa/Hello-World\n   https://github.com/monalisa/Hello-World"},
	}}
	for _, lang := range []string{i18n.EnUS, i18n.ZhHans} {
		x := testTexts(t, lang)
		checkGolden(t, lang, "noise_summary_quiet", summaryText(x, c, sh))
		d := *c
		d.DigestS, d.More = 3600, 0
		checkGolden(t, lang, "noise_summary_digest", summaryText(x, &d, time.UTC))
		checkGolden(t, lang, "noise_replies", x.T("noise.quiet_on", "from", "22:00", "to", "07:00", "zone", "Asia/Shanghai", "prefix", "!")+"\n"+
			x.T("noise.quiet_off", "prefix", "!")+"\n"+x.T("noise.digest_on", "every", "1h", "prefix", "!")+"\n"+
			x.T("noise.digest_off", "prefix", "!")+"\n"+x.T("noise.admin_only", "prefix", "!")+"\n"+
			x.Usage("quiet", "!")+"\n"+x.Usage("digest", "!"))
	}
}
