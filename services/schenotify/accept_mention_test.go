package schenotify_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// Mentions in groups (issue 22): a group reminder's chain is an At for its
// creator (setting mention_creator, default on), one for each member it
// names, then the text; a person chat gets the text alone.
func TestMentionsOnDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	a, off := bind("installation-a", 1), bind("installation-off", 1)
	g := sess("bot", "group", "g1") // sender "sender-g1"
	T := nextSecond()
	due := rfc(T.Add(2 * time.Second))
	e.cmd(t, a, cfgEN, g, "!sche add "+strings.Replace(due, "T", " ", 1)[:19]+" @alice stand-up @bob now")
	e.schedule(t, a, cfgEN, sess("bot", "person", "p1"), map[string]any{"message": "solo", "time_str": due})
	e.schedule(t, off, `{"language":"en_US","mention_creator":false}`, g, map[string]any{"message": "quiet", "time_str": due, "mentions": []string{"carol"}})
	calls := e.host.wait(t, 3, 10*time.Second)
	chains := map[string][]wire.Component{}
	for _, c := range calls {
		chains[sentText(c)] = c.SendMessage().MessageChain
	}
	check := func(text string, want ...string) {
		t.Helper()
		ch, ok := chains[text]
		if !ok {
			t.Fatalf("no delivery %q in %q", text, e.host.texts())
		}
		var got []string
		for _, c := range ch {
			if c.Type == "At" {
				got = append(got, "@"+string(c.Target))
			} else {
				got = append(got, c.Type+":"+c.Text)
			}
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("chain of %q: %q, want %q", text, got, want)
		}
	}
	check("[Notify] stand-up now", "@sender-g1", "@alice", "@bob", "Plain: [Notify] stand-up now")
	check("[Notify] solo", "Plain:[Notify] solo")
	check("[Notify] quiet", "@carol", "Plain: [Notify] quiet")
}

// TestMentionCaps: the named members are capped in number and length, in
// the command and the tool, and a refused add stores nothing.
func TestMentionCaps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	a := bind("installation-a", 1)
	g := sess("bot", "group", "g1")
	many := ""
	for i := 0; i < schenotify.MaxMentions+1; i++ {
		many += " @m" + strconv.Itoa(i)
	}
	if got := e.cmd(t, a, cfgEN, g, "!sche add in 1h x"+many); !strings.Contains(got, "at most 10 members") {
		t.Errorf("11 mentions: %q", got)
	}
	if got := e.cmd(t, a, cfgEN, g, "!sche add in 1h x @"+strings.Repeat("z", schenotify.MaxMentionRunes+1)); !strings.Contains(got, "at most 10 members") {
		t.Errorf("long mention: %q", got)
	}
	r := e.tool(t, a, cfgEN, g, schenotify.ToolSchedule, map[string]any{"message": "x", "delay": "1h", "mentions": "alice"})
	if r["code"] != "invalid_param" || r["field"] != "mentions" {
		t.Errorf("mentions as a string: %v", r)
	}
	r = e.tool(t, a, cfgEN, g, schenotify.ToolSchedule, map[string]any{"message": "x", "delay": "1h", "mentions": []string{"a b"}})
	if r["code"] != "mentions" {
		t.Errorf("mention with a space: %v", r)
	}
	if n := len(e.reminderKeys(t, scopeOf(a))); n != 0 {
		t.Fatalf("refused adds stored %d reminders", n)
	}
	id := e.schedule(t, a, cfgEN, g, map[string]any{"message": "x", "delay": "1h", "mentions": []string{"@alice", "alice", "bob"}})
	if r := e.record(t, scopeOf(a), id); r == nil || strings.Join(r.Mentions, ",") != "alice,bob" {
		t.Fatalf("stored mentions: %+v", r)
	}
}
