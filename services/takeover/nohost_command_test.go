package takeover_test

import (
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestReplyCommandWithoutHostSaysSo: an operator's "!ho reply" with no host
// connected answers, in the chat's language, that no host answered, not
// that the platform refused the message (it said "The chat platform refused
// the message." / "聊天平台拒绝了这条消息。").
func TestReplyCommandWithoutHostSaysSo(t *testing.T) {
	for _, tc := range []struct{ lang, want, refused string }{
		{"en_US", "No host answered", "refused"},
		{"zh_Hans", "没有主机应答", "拒绝"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			h := newHarness(t)
			b := newBinding("nohost-cmd-" + strings.ToLower(strings.ReplaceAll(tc.lang, "_", "")))
			cfg := `{"language":"` + tc.lang + `","trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900"]}`
			h.attach(b, cfg, true)
			sid := sidOf("bot-a", "person", "60")
			h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "60", "60", plain("help")))
			bustest.Eventually(t, "recorded", func() bool { return h.record(b, sid) != nil })
			h.command(b, cfg, 1, opSession, "!ho list")
			h.command(b, cfg, 1, opSession, "!ho take 1")
			h.hostC.Close()
			got := h.command(b, cfg, 1, opSession, "!ho reply 1 hello there")
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.refused) {
				t.Fatalf("reply without a host: %q, want it to say %q", got, tc.want)
			}
		})
	}
}

// TestCommandNumberNotEchoed: "!ho take <word>" with a word that is not a
// chat number answers without repeating the word (it was put into "No chat
// has number … here").
func TestCommandNumberNotEchoed(t *testing.T) {
	h := newHarness(t)
	b := newBinding("number-echo")
	cfg := `{"trigger_words":["help"],"operator_chats":["op-bot:group:900"]}`
	h.attach(b, cfg, true)
	const secret = "secretword7"
	got := h.command(b, cfg, 1, opSession, "!ho take "+secret)
	bustest.CheckErrorText(t, "!ho take", got, secret)
	if got := h.command(b, cfg, 1, opSession, "!ho take 7"); !strings.Contains(got, "7") {
		t.Errorf("a well-formed number is not named: %q", got)
	}
}
