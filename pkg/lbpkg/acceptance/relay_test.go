package acceptance_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/services/takeover"
)

// relaySend is one send_message of the runtime, decoded.
type relaySend struct {
	BotUUID    string `json:"bot_uuid"`
	TargetType string `json:"target_type"`
	TargetID   string `json:"target_id"`
	Chain      []struct {
		Type string `json:"type"`
		Text string `json:"text"`
		URL  string `json:"url"`
	} `json:"message_chain"`
}

// sentTo reports whether the runtime sent into chat typ/id a message
// whose Plain text contains text (and, if url is set, an Image of url).
func sentTo(rt *runtimetest.Runtime, typ, id, text, url string) bool {
	for _, c := range rt.Sends() {
		var m relaySend
		if json.Unmarshal(c.Data, &m) != nil || m.TargetType != typ || m.TargetID != id {
			continue
		}
		hasText, hasURL := false, url == ""
		for _, p := range m.Chain {
			hasText = hasText || p.Type == "Plain" && strings.Contains(p.Text, text)
			hasURL = hasURL || p.Type == "Image" && p.URL == url
		}
		if hasText && hasURL {
			return true
		}
	}
	return false
}

// TestRelayThroughPackage is issue 31's relay mode through the
// HumanTakeover package in LangBot's real runtime: after `!ho take 1` in
// a private operator chat, the operator's text and image reach the user
// and the AI never answers the operator; the user's message reaches the
// operator chat and the AI stays blocked for it; a group operator chat
// does not relay without `!ho r`, and its take adds it beside the
// private operator chat (both get the user's messages); release ends the
// relay in both.
func TestRelayThroughPackage(t *testing.T) {
	e := startEnv(t)
	ctx := ctxT(t, 3*time.Minute)
	cfg := e.stack.packageConfig(takeover.Plugin)
	cfg["operator_chats"] = []string{"bot-1:person:9", "bot-1:group:900"}
	cfg["trigger_words"] = []string{"human"}
	cfg["auto_takeover_on_trigger"] = false
	pkg := e.pkgs[takeover.Plugin]
	tk, err := e.rt.Install(ctx, pkg.Data, pkg.Author, pkg.Name, cfg)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	e.waitApplied(takeover.Plugin, tk)
	user := runtimetest.Session{LauncherType: "person", LauncherID: "61", SenderID: "61", BotUUID: "bot-1"}
	op := runtimetest.Session{LauncherType: "person", LauncherID: "9", SenderID: "9", BotUUID: "bot-1"}
	group := runtimetest.Session{LauncherType: "group", LauncherID: "900", SenderID: "9", BotUUID: "bot-1"}
	emit := func(s runtimetest.Session, name, text string, images ...string) *runtimetest.EventResult {
		t.Helper()
		res, err := e.rt.Emit(ctx, tk, runtimetest.Event{Name: name, Session: s, Text: text, Images: images})
		if err != nil {
			t.Fatalf("emit %q: %v", text, err)
		}
		return res
	}
	command := func(s runtimetest.Session, text string) string {
		t.Helper()
		rets, err := e.rt.Command(ctx, tk, text, s, 1)
		if err != nil || len(rets) != 1 {
			t.Fatalf("%s = %q, %v", text, runtimetest.Texts(rets), err)
		}
		return runtimetest.Texts(rets)[0]
	}

	emit(user, "PersonMessageReceived", "I want a human")
	bustest.Eventually(t, "the alert", func() bool { return sentTo(e.rt, "person", "9", "needs a human", "") })
	command(op, "!ho list")
	if got := command(op, "!ho take 1"); !strings.Contains(got, "Relay on") {
		t.Fatalf("!ho take 1 = %q", got)
	}

	if res := emit(op, "PersonMessageReceived", "Hello from a human", "https://example.com/op.png"); !res.PreventDefault || !res.PreventPostorder {
		t.Fatalf("the operator's relayed message was left to the AI: %+v", res)
	}
	bustest.Eventually(t, "the operator's text and image reach the user", func() bool {
		return sentTo(e.rt, "person", "61", "Hello from a human", "https://example.com/op.png")
	})
	if res := emit(user, "PersonMessageReceived", "thanks, here it is", "https://example.com/user.png"); !res.PreventDefault {
		t.Fatalf("the user's message in a relayed chat was left to the AI: %+v", res)
	}
	bustest.Eventually(t, "the user's message reaches the operator chat", func() bool {
		return sentTo(e.rt, "person", "9", "thanks, here it is", "https://example.com/user.png")
	})

	// a group operator chat relays only with the prefix; taking a chat
	// the private operator chat relays adds it beside that chat, never
	// stealing it: both are told, both get the user's messages
	command(group, "!ho list")
	if got := command(group, "!ho take 1"); !strings.Contains(got, "Chat 1 is also relayed to private chat 9") {
		t.Fatalf("the group's take does not name the private operator chat: %q", got)
	}
	bustest.Eventually(t, "the private operator chat is told the group joined", func() bool {
		return sentTo(e.rt, "person", "9", "Chat 1 is now also relayed to group 900", "")
	})
	emit(user, "PersonMessageReceived", "to both of you")
	bustest.Eventually(t, "the user's message reaches both operator chats", func() bool {
		return sentTo(e.rt, "person", "9", "to both of you", "") && sentTo(e.rt, "group", "900", "to both of you", "")
	})
	emit(group, "GroupMessageReceived", "between operators")
	if got := command(group, "!ho r from the team"); !strings.Contains(got, "Sent to chat 1") {
		t.Fatalf("!ho r = %q", got)
	}
	if !sentTo(e.rt, "person", "61", "from the team", "") {
		t.Fatal("!ho r did not reach the user")
	}
	bustest.Eventually(t, "the private operator chat sees the group's answer", func() bool {
		return sentTo(e.rt, "person", "9", "operator 9: from the team", "")
	})
	if sentTo(e.rt, "person", "61", "between operators", "") {
		t.Fatal("a group operator chat relayed without the prefix")
	}

	// release ends the relay in both operator chats: each is told, the
	// user gets nothing
	command(op, "!ho release 1")
	emit(op, "PersonMessageReceived", "are you still there")
	bustest.Eventually(t, "both operator chats are told the relay ended", func() bool {
		return sentTo(e.rt, "person", "9", "relay ended", "") && sentTo(e.rt, "group", "900", "relay ended", "")
	})
	if sentTo(e.rt, "person", "61", "are you still there", "") {
		t.Fatal("a message after release reached the user")
	}
	if res := emit(op, "PersonMessageReceived", "a note to the bot"); res.PreventDefault {
		t.Fatalf("the operator chat is still blocked after the relay ended: %+v", res)
	}
}
