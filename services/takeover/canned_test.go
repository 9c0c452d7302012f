package takeover_test

import (
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// textsTo returns the texts the host sent into chat lid.
func textsTo(h *harness, lid string) []string {
	var out []string
	for _, c := range h.host.Sends() {
		if m := c.SendMessage(); m.TargetID == lid && len(m.MessageChain) > 0 {
			out = append(out, m.MessageChain[0].Text)
		}
	}
	return out
}

// cannedNames lists an installation's canned replies through the console.
func cannedNames(h *harness, b binding.Binding, cfg string) []string {
	h.t.Helper()
	var l takeover.CannedList
	h.mustPage(b, cfg, "GET", "/canned", nil, &l)
	var out []string
	for _, r := range l.Replies {
		out = append(out, r.Name+"="+r.Text)
	}
	return out
}

const cannedConfig = `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900"]}`

// TestCannedReplies: `!ho canned add` saves a reply of the installation,
// `!ho reply N /name` sends its text, `//x` sends "/x", and an unknown name
// is refused with nothing sent. Installation B, on the same operator chat,
// sees none of A's canned replies and cannot send them.
func TestCannedReplies(t *testing.T) {
	h := newHarness(t)
	a, b := newBinding("canned-a"), newBinding("canned-b")
	h.attach(a, cannedConfig, true)
	h.attach(b, cannedConfig, true)

	if got := h.command(a, cannedConfig, 1, opSession, "!ho canned list"); !strings.Contains(got, "No canned replies") {
		t.Fatalf("empty list answered %q", got)
	}
	if got := h.command(a, cannedConfig, 1, opSession, "!ho canned add Hi Hello there,\nhow can I help?"); !strings.Contains(got, "/hi saved") {
		t.Fatalf("add answered %q", got)
	}
	if got := cannedNames(h, a, cannedConfig); len(got) != 1 || got[0] != "hi=Hello there,\nhow can I help?" {
		t.Fatalf("A's canned replies %q", got)
	}
	if got := h.command(a, cannedConfig, 1, opSession, "!ho canned list"); !strings.Contains(got, "/hi: Hello there, how can I help?") {
		t.Errorf("list answered %q", got)
	}
	// isolation: B has none, lists none and cannot send A's
	if got := cannedNames(h, b, cannedConfig); len(got) != 0 {
		t.Fatalf("B sees canned replies %q", got)
	}
	if got := h.command(b, cannedConfig, 1, opSession, "!ho canned list"); !strings.Contains(got, "No canned replies") {
		t.Errorf("B's list answered %q", got)
	}

	for _, inst := range []binding.Binding{a, b} {
		h.mustEvent(inst, cannedConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "61", "61", plain("help")))
		sid := sidOf("bot-a", "person", "61")
		bustest.Eventually(t, "recorded", func() bool { return h.record(inst, sid) != nil })
		h.command(inst, cannedConfig, 1, opSession, "!ho list")
	}
	alertsSettled(t, h)
	if got := h.command(b, cannedConfig, 1, opSession, "!ho reply 1 /hi"); !strings.Contains(got, "no canned reply") {
		t.Errorf("B's reply /hi answered %q", got)
	}
	if got := textsTo(h, "61"); len(got) != 0 {
		t.Fatalf("a refused canned reply sent %q", got)
	}
	if got := h.command(a, cannedConfig, 1, opSession, "!ho reply 1 /nope"); !strings.Contains(got, "no canned reply") {
		t.Errorf("reply /nope answered %q", got)
	}
	if got := h.command(a, cannedConfig, 1, opSession, "!ho reply 1 /HI"); !strings.Contains(got, "Sent to chat 1") {
		t.Fatalf("reply /HI answered %q", got)
	}
	if got := h.command(a, cannedConfig, 1, opSession, "!ho reply 1 //hi is a path"); !strings.Contains(got, "Sent") {
		t.Fatalf("reply //hi answered %q", got)
	}
	want := []string{"Hello there,\nhow can I help?", "/hi is a path"}
	if got := textsTo(h, "61"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("sent %q, want %q", got, want)
	}
	// the history holds the text sent, not the name
	p := h.messages(a, cannedConfig, sidOf("bot-a", "person", "61"))
	if p.Messages[1].Role != model.RoleHuman || p.Messages[1].Parts[0].Text != want[0] {
		t.Errorf("history entry %+v", p.Messages[1])
	}

	if got := h.command(a, cannedConfig, 1, opSession, "!ho canned del hi"); !strings.Contains(got, "/hi deleted") {
		t.Errorf("del answered %q", got)
	}
	if got := cannedNames(h, a, cannedConfig); len(got) != 0 {
		t.Errorf("after del: %q", got)
	}
}

// TestCannedRefusals: a bad name, an empty or too long text, a 101st
// reply and deleting an unknown one are refused, over the page endpoint and
// the command, and change nothing.
func TestCannedRefusals(t *testing.T) {
	h := newHarness(t)
	a := newBinding("canned-refusals")
	h.attach(a, cannedConfig, true)
	long := strings.Repeat("x", model.MaxCannedTextRunes+1)
	for _, c := range []struct {
		body         map[string]any
		code         int
		reason, name string
	}{
		{map[string]any{"name": "two words", "text": "x"}, 400, "canned_bad_name", "space"},
		{map[string]any{"name": "", "text": "x"}, 400, "canned_bad_name", "empty name"},
		{map[string]any{"name": strings.Repeat("n", 33), "text": "x"}, 400, "canned_bad_name", "long name"},
		{map[string]any{"name": "ok", "text": "  "}, 400, "canned_empty", "empty text"},
		{map[string]any{"name": "ok", "text": long}, 413, "canned_too_long", "long text"},
	} {
		if err := h.page(a, cannedConfig, "POST", "/canned", c.body, nil); !isCode(err, c.code, c.reason) {
			t.Errorf("%s: %v, want %d %s", c.name, err, c.code, c.reason)
		}
	}
	if got := h.command(a, cannedConfig, 1, opSession, "!ho canned add bad!name text"); !strings.Contains(got, "letters, digits") {
		t.Errorf("bad name by command answered %q", got)
	}
	if got := h.command(a, cannedConfig, 1, opSession, "!ho canned add ok "+long); !strings.Contains(got, "at most 2000") {
		t.Errorf("long text by command answered %q", got)
	}
	if err := h.page(a, cannedConfig, "DELETE", "/canned", map[string]any{"name": "ghost"}, nil); !isCode(err, 404, "canned_not_found") {
		t.Errorf("delete unknown: %v", err)
	}
	if got := cannedNames(h, a, cannedConfig); len(got) != 0 {
		t.Fatalf("refusals stored %q", got)
	}
	for i := range model.MaxCannedReplies {
		h.mustPage(a, cannedConfig, "POST", "/canned", map[string]any{"name": "r" + string(rune('a'+i/26)) + string(rune('a'+i%26)), "text": "t"}, nil)
	}
	if err := h.page(a, cannedConfig, "POST", "/canned", map[string]any{"name": "one-more", "text": "t"}, nil); !isCode(err, 409, "canned_full") {
		t.Errorf("101st: %v", err)
	}
	if got := h.command(a, cannedConfig, 1, opSession, "!ho canned add one-more t"); !strings.Contains(got, "100 canned replies") {
		t.Errorf("101st by command answered %q", got)
	}
	// replacing an existing one is no new reply
	h.mustPage(a, cannedConfig, "POST", "/canned", map[string]any{"name": "raa", "text": "new"}, nil)
	got := cannedNames(h, a, cannedConfig)
	if len(got) != model.MaxCannedReplies || got[0] != "raa=new" {
		t.Errorf("after the refusals: %d replies, first %q", len(got), got[0])
	}
	// a chat that is no operator chat may not touch them
	user := opSession
	user.LauncherType, user.LauncherID = "person", "5"
	if got := h.command(a, cannedConfig, 1, user, "!ho canned del raa"); !strings.Contains(got, "Only admins") {
		t.Errorf("a user's canned del answered %q", got)
	}
}

// TestCannedRepliesInRelay: in relay mode a plain `/name` sends the
// canned reply, `!ho r /name` too; an unknown name sends nothing and the
// operator chat is told.
func TestCannedRepliesInRelay(t *testing.T) {
	h := newHarness(t)
	b := newBinding("canned-relay")
	h.attach(b, relayConfig, true)
	h.mustPage(b, relayConfig, "POST", "/canned", map[string]any{"name": "wait", "text": "One moment please, I am checking."}, nil)
	askHuman(h, b, "43")
	h.command(b, relayConfig, 1, privateOp, "!ho list")
	if got := h.command(b, relayConfig, 1, privateOp, "!ho take 1"); !strings.Contains(got, "Relay on") {
		t.Fatalf("take: %q", got)
	}
	opMessage(h, b, plain("/wait"))
	bustest.Eventually(t, "the canned reply reaches the user", func() bool {
		return hasText(sendsTo(h, b, "bot-a", "person", "43"), "One moment please, I am checking.")
	})
	opMessage(h, b, plain("/nope"))
	bustest.Eventually(t, "the operator chat told", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "no canned reply")
	})
	if got := h.command(b, relayConfig, 1, privateOp, "!ho r /wait"); !strings.Contains(got, "Sent") {
		t.Fatalf("!ho r /wait: %q", got)
	}
	n := 0
	for _, m := range sendsTo(h, b, "bot-a", "person", "43") {
		if hasText([]wire.SendMessage{m}, "/nope") {
			t.Error("an unknown canned name reached the user")
		}
		if hasText([]wire.SendMessage{m}, "One moment please") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d canned sends, want 2", n)
	}
}
