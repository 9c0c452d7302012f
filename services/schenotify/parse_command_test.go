package schenotify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// cmd builds a command the way the host does: params split on spaces,
// full_text the whole message.
func cmd(full string) schenotify.CommandIn {
	words := strings.Split(full, " ")
	name := strings.TrimPrefix(words[0], "!")
	return schenotify.CommandIn{Name: name, Params: words[1:], FullText: full}
}

func TestParseDsche(t *testing.T) {
	tests := []struct {
		in    string
		kind  string
		index int
		id    string
		token string
	}{
		{"!dsche", schenotify.CmdDelUsage, 0, "", ""},
		{"!dsche ", schenotify.CmdDelUsage, 0, "", ""},
		{"!dsche i", schenotify.CmdDelUsage, 0, "", ""},
		{"!dsche I", schenotify.CmdDelUsage, 0, "", ""},
		{"!dsche i 1", schenotify.CmdDelIndex, 1, "", ""},
		{"!dsche  i  1", schenotify.CmdDelIndex, 1, "", ""},
		{"!dsche i １", schenotify.CmdDelIndex, 1, "", ""},
		{"!dsche i x", schenotify.CmdDelInvalid, 0, "", "x"},
		{"!dsche i 0", schenotify.CmdDelIndex, 0, "", ""},
		{"!dsche i -1", schenotify.CmdDelIndex, -1, "", ""},
		{"!dsche i k7m2pq", schenotify.CmdDelInvalid, 0, "", "k7m2pq"},
		{"!dsche 1", schenotify.CmdDelIndex, 1, "", ""},
		{"!dsche +2", schenotify.CmdDelIndex, 2, "", ""},
		{"!dsche ２３", schenotify.CmdDelIndex, 23, "", ""},
		{"!dsche 1_0", schenotify.CmdDelInvalid, 0, "", "1_0"},
		{"!dsche ١", schenotify.CmdDelInvalid, 0, "", "١"},
		{"!dsche 99999999999999999999", schenotify.CmdDelIndex, 1 << 31, "", ""},
		{"!dsche all", schenotify.CmdDelAll, 0, "", ""},
		{"!dsche ALL extra", schenotify.CmdDelAll, 0, "", ""},
		{"!dsche K7M2PQ", schenotify.CmdDelID, 0, "k7m2pq", ""},
		{"!dsche k7m2pq 3", schenotify.CmdDelID, 0, "k7m2pq", ""},
		{"!dsche hello", schenotify.CmdDelInvalid, 0, "", "hello"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c := schenotify.ParseDsche(cmd(tt.in))
			if c.Kind != tt.kind || c.Index != tt.index || c.ID != tt.id || c.Token != tt.token {
				t.Errorf("got %+v", c)
			}
		})
	}
}

func TestParseSche(t *testing.T) {
	tests := []struct {
		in   string
		kind string
		page int
		form string
		raw  string
		msg  string
	}{
		{in: "!sche", kind: schenotify.CmdList, page: 1},
		{in: "!sche 2", kind: schenotify.CmdList, page: 2},
		{in: "!sche ２", kind: schenotify.CmdList, page: 2},
		{in: "!sche 0", kind: schenotify.CmdHelp},
		{in: "!sche -1", kind: schenotify.CmdHelp},
		{in: "!sche foo", kind: schenotify.CmdHelp},
		{in: "!sche help", kind: schenotify.CmdHelp},
		{in: "!sche add", kind: schenotify.CmdAddUsage},
		{in: "!sche add in 90m", kind: schenotify.CmdAddUsage},
		{in: "!sche add in 90m    ", kind: schenotify.CmdAddUsage},
		// Beyond the fixed forms, the rest goes to the natural reader
		// (when.ReadNatural), which splits time and message with the clock.
		{in: "!sche add tomorrow hello", kind: schenotify.CmdAdd, form: "natural", raw: "tomorrow hello"},
		{in: "!sche add 明天下午3点 开会", kind: schenotify.CmdAdd, form: "natural", raw: "明天下午3点 开会"},
		{in: "!sche add in 10 minutes tea", kind: schenotify.CmdAdd, form: "natural", raw: "in 10 minutes tea"},
		{in: "!sche add in 1m stretch", kind: schenotify.CmdAdd, form: "in", raw: "1m", msg: "stretch"},
		{in: "!sche ADD IN 90m stand  up\nnow", kind: schenotify.CmdAdd, form: "in", raw: "90m", msg: "stand  up\nnow"},
		{in: "!sche add in ９０m tea", kind: schenotify.CmdAdd, form: "in", raw: "90m", msg: "tea"},
		{in: "!sche add in soon tea", kind: schenotify.CmdAdd, form: "natural", raw: "in soon tea"},
		{in: `!sche add cron "0 9 * * 1-5" stand-up`, kind: schenotify.CmdAdd, form: "cron", raw: "0 9 * * 1-5", msg: "stand-up"},
		{in: "!sche add cron “0 9 * * 1-5” 站会", kind: schenotify.CmdAdd, form: "cron", raw: "0 9 * * 1-5", msg: "站会"},
		{in: `!sche add cron "0 9 * * 1-5"`, kind: schenotify.CmdAddUsage},
		{in: `!sche add cron "0 9 * * 1-5 x`, kind: schenotify.CmdAddUsage},
		{in: `!sche add cron 0 9 * * * x`, kind: schenotify.CmdAddUsage},
		{in: "!sche add 2030-01-02 09:00 dentist", kind: schenotify.CmdAdd, form: "date", raw: "2030-01-02 09:00", msg: "dentist"},
		{in: "!sche add 2030-01-02 09:00:30 dentist", kind: schenotify.CmdAdd, form: "date", raw: "2030-01-02 09:00:30", msg: "dentist"},
		{in: "!sche add ２０３０-01-02 ０９：００ x", kind: schenotify.CmdAdd, form: "date", raw: "2030-01-02 09:00", msg: "x"},
		{in: "!sche add 2030-02-30 09:00 x", kind: schenotify.CmdAdd, form: "date", raw: "2030-02-30 09:00", msg: "x"},
		{in: "!sche add 2030-01-02 dentist", kind: schenotify.CmdAdd, form: "natural", raw: "2030-01-02 dentist"},
		{in: "!sche add 18:30 call home", kind: schenotify.CmdAdd, form: "clock", raw: "18:30", msg: "call home"},
		{in: "!sche add 7:5:9 x", kind: schenotify.CmdAdd, form: "clock", raw: "7:5:9", msg: "x"},
		{in: "!sche add 18：30 x", kind: schenotify.CmdAdd, form: "clock", raw: "18:30", msg: "x"},
		{in: "!sche add 25:00 x", kind: schenotify.CmdAdd, form: "clock", raw: "25:00", msg: "x"},
		{in: "!sche add 18:30", kind: schenotify.CmdAddUsage},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c := schenotify.ParseSche(cmd(tt.in))
			if c.Kind != tt.kind || c.Page != tt.page || c.Add.Form != tt.form || c.Add.Raw != tt.raw || c.Add.Message != tt.msg {
				t.Errorf("got %+v", c)
			}
		})
	}
}

// TestParseScheWithoutFullText falls back to the params.
func TestParseScheWithoutFullText(t *testing.T) {
	c := schenotify.ParseSche(schenotify.CommandIn{Name: "sche", Params: []string{"add", "", "in", "5m", "tea", "time"}})
	if c.Kind != schenotify.CmdAdd || c.Add.Message != "tea time" || c.Add.Raw != "5m" {
		t.Fatalf("got %+v", c)
	}
	// A host that splits the prefix from the command word.
	c = schenotify.ParseSche(schenotify.CommandIn{Name: "sche", Params: []string{"add", "in", "5m", "tea"}, FullText: "! sche add in 5m  tea"})
	if c.Kind != schenotify.CmdAdd || c.Add.Message != "tea" {
		t.Fatalf("got %+v", c)
	}
}

func TestPlanAddClock(t *testing.T) {
	sh := mustZone(t, "Asia/Shanghai")
	now := utc("2030-01-01T10:00:00Z") // 18:00 in Shanghai
	in := when.ScheduleInput{Now: now, Zone: sh}
	tests := []struct{ when, want string }{
		{"18:30", "2030-01-01T10:30:00Z"},
		{"18:00", "2030-01-02T10:00:00Z"},
		{"18:00:01", "2030-01-01T10:00:01Z"},
		{"9:00", "2030-01-02T01:00:00Z"},
	}
	for _, tt := range tests {
		c := schenotify.ParseSche(cmd("!sche add " + tt.when + " x"))
		p, f := when.PlanAdd(c.Add, in)
		if f != nil || p.First.Format(time.RFC3339) != tt.want {
			t.Errorf("%s: got %v %v, want %s", tt.when, p.First, f, tt.want)
		}
	}
	for _, tt := range []struct{ in, code string }{
		{"!sche add 25:00 x", "invalid_time"},
		{"!sche add 2030-02-30 09:00 x", "invalid_time"},
		{"!sche add in soon x", "natural_unreadable"},
		{"!sche add in 0s x", "invalid_delay"},
		{`!sche add cron "bad" x`, "invalid_recurrence"},
		{`!sche add cron "@every 30s" x`, "interval_too_short"},
		{"!sche add 2020-01-01 09:00 x", "time_passed"},
		{"!sche add in 6w x", ""},
		{"!sche add in 300w x", "too_far"},
	} {
		c := schenotify.ParseSche(cmd(tt.in))
		_, f := when.PlanAdd(c.Add, in)
		code := ""
		if f != nil {
			code = f.Code
		}
		if code != tt.code {
			t.Errorf("%s: code %q want %q", tt.in, code, tt.code)
		}
	}
}

// FuzzParseSche checks that parsing never panics, that an add keeps a
// non-blank message found verbatim in the input, and that the parse does
// not depend on how the params were split.
func FuzzParseSche(f *testing.F) {
	for _, s := range []string{"!sche", "!sche 2", "!sche add in 1m stretch", `!sche add cron "0 9 * * *" x`,
		"!sche add 2030-01-02 09:00 x", "!sche add 18:30 x\ny", "!sche add  ", "!sche add cron “x” y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := schenotify.ParseSche(cmd(s))
		switch c.Kind {
		case schenotify.CmdAdd:
			// Verbatim from full_text, or rebuilt from the params when
			// full_text lacks the command word.
			kept := c.Add.Message
			if c.Add.Form == when.WhenNatural {
				kept = c.Add.Raw // time and message, split once the clock is known
			}
			mw, sw := strings.Fields(kept), strings.Fields(s)
			if strings.TrimSpace(kept) == "" || len(mw) > len(sw) ||
				strings.Join(mw, " ") != strings.Join(sw[len(sw)-len(mw):], " ") {
				t.Fatalf("%q: message %q", s, c.Add.Message)
			}
		case schenotify.CmdList:
			if c.Page < 1 {
				t.Fatalf("%q: page %d", s, c.Page)
			}
		}
		d := schenotify.ParseDsche(cmd(s))
		if d.Kind == schenotify.CmdDelID {
			if _, ok := schenotify.NormalizeID(d.ID); !ok {
				t.Fatalf("%q: id %q", s, d.ID)
			}
		}
	})
}

// utc parses an RFC 3339 instant of a test table.
func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
