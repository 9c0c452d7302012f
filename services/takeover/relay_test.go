package takeover_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

const relayConfig = `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900","op-bot:person:77"]}`

// privateOp is the private operator chat of relayConfig.
var privateOp = wire.Session{LauncherType: "person", LauncherID: "77", SenderID: "77", BotUUID: "op-bot"}

// sendsTo is what the service sent into chat bot/typ/id, in order.
func sendsTo(h *harness, b binding.Binding, bot, typ, id string) []wire.SendMessage {
	var out []wire.SendMessage
	for _, c := range h.host.Sends() {
		m := c.SendMessage()
		if m.BotUUID == bot && m.TargetType == typ && m.TargetID == id && c.Request.Binding.InstallationUUID == b.InstallationUUID {
			out = append(out, m)
		}
	}
	return out
}

// hasText reports whether a send's chain holds a Plain text containing s.
func hasText(ms []wire.SendMessage, s string) bool {
	for _, m := range ms {
		for _, c := range m.MessageChain {
			if c.Type == "Plain" && strings.Contains(c.Text, s) {
				return true
			}
		}
	}
	return false
}

// hasImage reports whether a send's chain holds an Image of url.
func hasImage(ms []wire.SendMessage, url string) bool {
	for _, m := range ms {
		for _, c := range m.MessageChain {
			if c.Type == "Image" && c.URL == url {
				return true
			}
		}
	}
	return false
}

func imageChain(text, url string) string {
	b, _ := json.Marshal([]map[string]string{{"type": "Plain", "text": text}, {"type": "Image", "url": url}})
	return string(b)
}

// askHuman makes user chat lid of bot-a ask for a human, so `!ho list`
// numbers it.
func askHuman(h *harness, b binding.Binding, lid string) {
	h.t.Helper()
	h.mustEvent(b, relayConfig, takeover.EventPersonMessage, "bot-a", msgData("person", lid, lid, plain("help")))
	sid := sidOf("bot-a", "person", lid)
	bustest.Eventually(h.t, "the chat is unread", func() bool { r := h.record(b, sid); return r != nil && r.Unread })
}

func opMessage(h *harness, b binding.Binding, chain string) wire.EventReply {
	h.t.Helper()
	return h.mustEvent(b, relayConfig, takeover.EventPersonMessage, "op-bot", msgData("person", "77", "77", chain))
}

func TestRelayPrivateBothWays(t *testing.T) {
	h := newHarness(t)
	b := newBinding("relay")
	h.attach(b, relayConfig, true)
	askHuman(h, b, "42")
	h.command(b, relayConfig, 1, privateOp, "!ho list")
	if got := h.command(b, relayConfig, 1, privateOp, "!ho take 1"); !strings.Contains(got, "Relay on") {
		t.Fatalf("take in a private operator chat: %q", got)
	}

	// the operator's plain text and image reach the user; the AI never
	// answers the operator
	if r := opMessage(h, b, plain("Hello, I can help")); !r.PreventDefault || !r.PreventPostorder {
		t.Fatalf("the operator's relayed message was not blocked: %+v", r)
	}
	if r := opMessage(h, b, imageChain("see this", "https://example.com/a.png")); !r.PreventDefault {
		t.Fatalf("the operator's relayed image was not blocked: %+v", r)
	}
	bustest.Eventually(t, "the operator's text and image reach the user", func() bool {
		m := sendsTo(h, b, "bot-a", "person", "42")
		return hasText(m, "Hello, I can help") && hasText(m, "see this") && hasImage(m, "https://example.com/a.png")
	})
	// the relayed messages are the operator's replies in the history
	sid := sidOf("bot-a", "person", "42")
	bustest.Eventually(t, "the relayed replies are recorded", func() bool {
		n := 0
		for _, e := range h.messages(b, relayConfig, sid).Messages {
			if e.Role == "human" && e.Operator == "77" {
				n++
			}
		}
		return n == 2
	})

	// the user's text and image reach the operator chat with the chat's
	// prefix, and the AI stays blocked for the user
	if r := h.mustEvent(b, relayConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", imageChain("thanks", "https://example.com/u.png"))); !r.PreventDefault {
		t.Fatalf("the user's message in a relayed chat was not blocked: %+v", r)
	}
	bustest.Eventually(t, "the user's message reaches the operator chat", func() bool {
		m := sendsTo(h, b, "op-bot", "person", "77")
		return hasText(m, "[#1 Nick] thanks") && hasImage(m, "https://example.com/u.png")
	})
	for _, c := range h.host.Sends() {
		m := c.SendMessage()
		if m.TargetID == "77" && hasText([]wire.SendMessage{m}, "thanks") && !strings.Contains(c.IdempotencyKey, ":relay:") {
			t.Errorf("forward key %q is not a relay key", c.IdempotencyKey)
		}
	}

	// `!ho leave` ends it: the next plain message is the operator's own,
	// and the user's messages stay with the console
	if got := h.command(b, relayConfig, 1, privateOp, "!ho leave"); !strings.Contains(got, "stopped") {
		t.Fatalf("leave: %q", got)
	}
	if r := opMessage(h, b, plain("not for the user")); r.PreventDefault {
		t.Fatalf("a plain message after leave was blocked: %+v", r)
	}
	h.mustEvent(b, relayConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("after leave")))
	if got := h.command(b, relayConfig, 1, privateOp, "!ho leave"); !strings.Contains(got, "relays no chat") {
		t.Fatalf("second leave: %q", got)
	}
	// a barrier: a reply sent after both messages arrives, so they were
	// handled
	h.command(b, relayConfig, 1, privateOp, "!ho reply 1 barrier")
	bustest.Eventually(t, "the barrier reply", func() bool { return hasText(sendsTo(h, b, "bot-a", "person", "42"), "barrier") })
	bustest.Eventually(t, "the user's message after leave is recorded", func() bool {
		for _, e := range h.messages(b, relayConfig, sid).Messages {
			if e.Role == "user" && len(e.Parts) > 0 && e.Parts[0].Text == "after leave" {
				return true
			}
		}
		return false
	})
	if hasText(sendsTo(h, b, "bot-a", "person", "42"), "not for the user") {
		t.Fatal("a message after leave reached the user")
	}
	if hasText(sendsTo(h, b, "op-bot", "person", "77"), "after leave") {
		t.Fatal("a user's message after leave reached the operator chat")
	}
}

func TestRelaySwitchAndRelease(t *testing.T) {
	h := newHarness(t)
	b := newBinding("relay-switch")
	h.attach(b, relayConfig, true)
	askHuman(h, b, "42")
	h.clock.Advance(time.Second)
	askHuman(h, b, "43")
	// the newest first: 43 is chat 1, 42 chat 2
	h.command(b, relayConfig, 1, privateOp, "!ho list")
	h.command(b, relayConfig, 1, privateOp, "!ho take 2")
	if got := h.command(b, relayConfig, 1, privateOp, "!ho switch 1"); !strings.Contains(got, "Relay on") {
		t.Fatalf("switch: %q", got)
	}
	opMessage(h, b, plain("to the second"))
	bustest.Eventually(t, "switch moves the relay", func() bool {
		return hasText(sendsTo(h, b, "bot-a", "person", "43"), "to the second")
	})
	if hasText(sendsTo(h, b, "bot-a", "person", "42"), "to the second") {
		t.Fatal("the first chat got a message after the switch")
	}
	// the first chat, still taken over, no longer forwards to this chat
	h.mustEvent(b, relayConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("from the first")))
	h.mustEvent(b, relayConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "43", "43", plain("from the second")))
	bustest.Eventually(t, "the second chat forwards", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "from the second")
	})
	if hasText(sendsTo(h, b, "op-bot", "person", "77"), "from the first") {
		t.Fatal("a chat switched away from still forwards")
	}

	// release ends the relay: the operator chat is told, and its next
	// plain message is the operator's own again (not sent, left to the AI)
	h.command(b, relayConfig, 1, privateOp, "!ho release 1")
	bustest.Eventually(t, "the operator is told the relay ended", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "relay ended")
	})
	if r := opMessage(h, b, plain("after release")); r.PreventDefault {
		t.Fatalf("a plain message after the relay ended was blocked: %+v", r)
	}
	h.command(b, relayConfig, 1, privateOp, "!ho reply 1 barrier")
	bustest.Eventually(t, "the barrier reply", func() bool { return hasText(sendsTo(h, b, "bot-a", "person", "43"), "barrier") })
	if hasText(sendsTo(h, b, "bot-a", "person", "43"), "after release") {
		t.Fatal("a message after release reached the user")
	}
}

// TestRelayEndsOnTimeout: the takeover's expiry ends the relay too.
func TestRelayEndsOnTimeout(t *testing.T) {
	h := newHarness(t)
	b := newBinding("relay-timeout")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"takeover_timeout":2,"operator_chats":["op-bot:person:77"]}`
	h.attach(b, cfg, true)
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("help")))
	bustest.Eventually(t, "unread", func() bool { r := h.record(b, sidOf("bot-a", "person", "42")); return r != nil && r.Unread })
	h.command(b, cfg, 1, privateOp, "!ho list")
	h.command(b, cfg, 1, privateOp, "!ho take 1")
	bustest.Eventually(t, "the operator is told the relay ended at the timeout", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "relay ended")
	})
	if r := h.mustEvent(b, cfg, takeover.EventPersonMessage, "op-bot", msgData("person", "77", "77", plain("still there?"))); r.PreventDefault {
		t.Fatalf("a plain message after the timeout was blocked: %+v", r)
	}
}

func TestRelayGroupNeedsPrefix(t *testing.T) {
	h := newHarness(t)
	b := newBinding("relay-group")
	h.attach(b, relayConfig, true)
	askHuman(h, b, "42")
	h.command(b, relayConfig, 1, opSession, "!ho list")
	if got := h.command(b, relayConfig, 1, opSession, "!ho take 1"); !strings.Contains(got, "!ho r text") {
		t.Fatalf("take in a group operator chat: %q", got)
	}
	// group chatter is not relayed
	h.mustEvent(b, relayConfig, takeover.EventGroupMessage, "op-bot", msgData("group", "900", "77", plain("between us")))
	if got := h.command(b, relayConfig, 1, opSession, "!ho r Hello from the team"); !strings.Contains(got, "Sent to chat 1") {
		t.Fatalf("!ho r: %q", got)
	}
	m := sendsTo(h, b, "bot-a", "person", "42")
	if !hasText(m, "Hello from the team") {
		t.Fatal("!ho r did not reach the user")
	}
	if hasText(m, "between us") {
		t.Fatal("group chatter reached the user without the prefix")
	}
	// the user's messages come back to the group operator chat
	h.mustEvent(b, relayConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("hi team")))
	bustest.Eventually(t, "the user's message reaches the group operator chat", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "group", "900"), "hi team")
	})
	// outside an operator chat there is no relay
	other := wire.Session{LauncherType: "person", LauncherID: "5", SenderID: "5", BotUUID: "op-bot"}
	if got := h.command(b, relayConfig, 1, other, "!ho r x"); !strings.Contains(got, "operator chat") {
		t.Fatalf("!ho r outside an operator chat: %q", got)
	}
}

// TestRelayFindsTheTakeoverOver: a deadline passed before its expiry
// fired (or a release whose relay note failed) leaves the binding; the
// operator chat's next message finds the takeover over, is not sent, and
// ends the relay.
func TestRelayFindsTheTakeoverOver(t *testing.T) {
	h := newHarness(t)
	b := newBinding("relay-over")
	h.attach(b, relayConfig, true)
	askHuman(h, b, "42")
	h.command(b, relayConfig, 1, privateOp, "!ho list")
	h.command(b, relayConfig, 1, privateOp, "!ho take 1 30m")
	h.clock.Advance(time.Hour) // past the deadline; the schedule fires in 30 real minutes
	if r := opMessage(h, b, plain("too late")); !r.PreventDefault {
		t.Fatalf("the message that finds the relay over was left to the AI: %+v", r)
	}
	bustest.Eventually(t, "the operator is told", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "your message was not sent")
	})
	if hasText(sendsTo(h, b, "bot-a", "person", "42"), "too late") {
		t.Fatal("a message after the deadline reached the user")
	}
	if r := opMessage(h, b, plain("my own")); r.PreventDefault {
		t.Fatalf("the relay did not end: %+v", r)
	}
}

// TestRelayOutlivesTheDedupeTTL: a relay lasts as long as its takeover,
// however long that is renewed: nothing of it lives in the dedupe bucket,
// whose entries expire (24 h; 2 s here).
func TestRelayOutlivesTheDedupeTTL(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) { c.DedupeTTL = 2 * time.Second })
	b := newBinding("relay-ttl")
	h.attach(b, relayConfig, true)
	askHuman(h, b, "42")
	h.command(b, relayConfig, 1, privateOp, "!ho list")
	if got := h.command(b, relayConfig, 1, privateOp, "!ho take 1"); !strings.Contains(got, "Relay on") {
		t.Fatalf("take in a private operator chat: %q", got)
	}
	dedupe := bus.DedupeBucket(takeover.Plugin)
	bustest.Eventually(t, "every dedupe entry expired", func() bool { return len(h.keys(dedupe)) == 0 })
	sid := sidOf("bot-a", "person", "42")
	if r := h.record(b, sid); r == nil || !r.Takeover.TakenOver(h.now().UnixMilli()) {
		t.Fatalf("the takeover ended: %+v", r)
	}
	h.mustEvent(b, relayConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("still waiting")))
	bustest.Eventually(t, "the user's message reaches the operator chat after the TTL", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "still waiting")
	})
	if r := opMessage(h, b, plain("back with you")); !r.PreventDefault {
		t.Fatalf("the operator's message was not relayed after the TTL: %+v", r)
	}
	bustest.Eventually(t, "the operator's message reaches the user after the TTL", func() bool {
		return hasText(sendsTo(h, b, "bot-a", "person", "42"), "back with you")
	})
}

// twoOpConfig has two private operator chats, 77 and 78.
const twoOpConfig = `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:person:77","op-bot:person:78"]}`

// secondOp is the second private operator chat of twoOpConfig.
var secondOp = wire.Session{LauncherType: "person", LauncherID: "78", SenderID: "78", BotUUID: "op-bot"}

// countText counts the sends whose Plain text contains s.
func countText(ms []wire.SendMessage, s string) int {
	n := 0
	for _, m := range ms {
		if hasText([]wire.SendMessage{m}, s) {
			n++
		}
	}
	return n
}

// TestRelayTwoOperatorChats: a second operator chat that takes a chat
// another one relays does not steal the relay: both get the user's
// messages, both reach the user, each is told of the other and sees the
// other's (and the console's) answers, `!ho show N` and the console name
// both, and a release ends the relay in both.
func TestRelayTwoOperatorChats(t *testing.T) {
	h := newHarness(t)
	b := newBinding("relay-two")
	h.attach(b, twoOpConfig, true)
	h.mustEvent(b, twoOpConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("help")))
	sid := sidOf("bot-a", "person", "42")
	bustest.Eventually(t, "the chat is unread", func() bool { r := h.record(b, sid); return r != nil && r.Unread })
	h.command(b, twoOpConfig, 1, privateOp, "!ho list")
	h.command(b, twoOpConfig, 1, secondOp, "!ho list")
	if got := h.command(b, twoOpConfig, 1, privateOp, "!ho take 1"); !strings.Contains(got, "Relay on") || strings.Contains(got, "also relayed") {
		t.Fatalf("the first take: %q", got)
	}
	got := h.command(b, twoOpConfig, 1, secondOp, "!ho take 1")
	if !strings.Contains(got, "Relay on") || !strings.Contains(got, "Chat 1 is also relayed to private chat 77") || !strings.Contains(got, "!ho leave") {
		t.Fatalf("the second take does not name the first operator chat: %q", got)
	}
	bustest.Eventually(t, "the first operator chat is told the second joined", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "Chat 1 is now also relayed to private chat 78 (operator 78)")
	})

	// the user's message reaches both operator chats
	h.mustEvent(b, twoOpConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("hello both")))
	bustest.Eventually(t, "the user's message reaches both operator chats", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "[#1 Nick] hello both") &&
			hasText(sendsTo(h, b, "op-bot", "person", "78"), "[#1 Nick] hello both")
	})
	// both operators reach the user, neither is answered by the AI
	for _, op := range []string{"77", "78"} {
		if r := h.mustEvent(b, twoOpConfig, takeover.EventPersonMessage, "op-bot", msgData("person", op, op, plain("from "+op))); !r.PreventDefault || !r.PreventPostorder {
			t.Fatalf("operator %s's relayed message was left to the AI: %+v", op, r)
		}
	}
	bustest.Eventually(t, "both operators' messages reach the user", func() bool {
		m := sendsTo(h, b, "bot-a", "person", "42")
		return hasText(m, "from 77") && hasText(m, "from 78")
	})
	// each operator chat sees what the other one sent, never its own
	bustest.Eventually(t, "each operator chat sees the other's answer", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "78"), "[#1 Nick] operator 77: from 77") &&
			hasText(sendsTo(h, b, "op-bot", "person", "77"), "[#1 Nick] operator 78: from 78")
	})
	if hasText(sendsTo(h, b, "op-bot", "person", "77"), "operator 77: from 77") || hasText(sendsTo(h, b, "op-bot", "person", "78"), "operator 78: from 78") {
		t.Fatal("an operator chat got its own message back")
	}
	// and a console reply reaches both
	if err := h.pageAs(b, twoOpConfig, "POST", "/reply", map[string]any{"sid": sid, "idempotency_key": "console-reply-1", "text": "from the console"}, "carol", nil); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "a console reply is shown in both operator chats", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "[#1 Nick] operator carol: from the console") &&
			hasText(sendsTo(h, b, "op-bot", "person", "78"), "[#1 Nick] operator carol: from the console")
	})

	// `!ho show 1` and the console name both operator chats
	if got := h.command(b, twoOpConfig, 1, privateOp, "!ho show 1"); !strings.Contains(got, "Relayed to: private chat 77, private chat 78") {
		t.Fatalf("show: %q", got)
	}
	if r := h.messages(b, twoOpConfig, sid).Session.RelayedTo; len(r) != 2 || r[0] != (takeover.RelayPlace{Type: "person", ID: "77"}) || r[1] != (takeover.RelayPlace{Type: "person", ID: "78"}) {
		t.Fatalf("the console's relay status: %+v", r)
	}

	// the second leaves: the first keeps relaying alone
	if got := h.command(b, twoOpConfig, 1, secondOp, "!ho leave"); !strings.Contains(got, "stopped") {
		t.Fatalf("leave: %q", got)
	}
	h.mustEvent(b, twoOpConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("after 78 left")))
	bustest.Eventually(t, "the first operator chat still gets the user's messages", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "after 78 left")
	})
	if got := h.command(b, twoOpConfig, 1, privateOp, "!ho show 1"); !strings.Contains(got, "Relayed to: private chat 77") || strings.Contains(got, "chat 78") {
		t.Fatalf("show after leave: %q", got)
	}
	if hasText(sendsTo(h, b, "op-bot", "person", "78"), "after 78 left") {
		t.Fatal("an operator chat that left still gets the user's messages")
	}

	// a repeated take by a chat already relaying tells nobody again
	h.command(b, twoOpConfig, 1, secondOp, "!ho take 1")
	bustest.Eventually(t, "the rejoin is told", func() bool {
		return countText(sendsTo(h, b, "op-bot", "person", "77"), "is now also relayed to private chat 78") == 2
	})
	if got := h.command(b, twoOpConfig, 1, secondOp, "!ho take 1"); !strings.Contains(got, "also relayed to private chat 77") {
		t.Fatalf("a repeated take: %q", got)
	}

	// release ends the relay in both, and both are told
	h.command(b, twoOpConfig, 1, privateOp, "!ho release 1")
	bustest.Eventually(t, "both operator chats are told the relay ended", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "relay ended") && hasText(sendsTo(h, b, "op-bot", "person", "78"), "relay ended")
	})
	for _, op := range []string{"77", "78"} {
		if r := h.mustEvent(b, twoOpConfig, takeover.EventPersonMessage, "op-bot", msgData("person", op, op, plain("after release"))); r.PreventDefault {
			t.Fatalf("operator chat %s still relays after the release: %+v", op, r)
		}
	}
	if n := countText(sendsTo(h, b, "op-bot", "person", "77"), "is now also relayed to private chat 78"); n != 2 {
		t.Fatalf("the first operator chat was told of a join %d times, want 2 (a repeated take tells nobody)", n)
	}
	if r := h.messages(b, twoOpConfig, sid).Session.RelayedTo; len(r) != 0 {
		t.Fatalf("the console's relay status after release: %+v", r)
	}
}

// TestRelayReadsTheOneTargetForm: a chat's reverse pointer stored by the
// version that kept one operator chat per chat still forwards, and the
// next take adds to it.
func TestRelayReadsTheOneTargetForm(t *testing.T) {
	h := newHarness(t)
	b := newBinding("relay-old")
	h.attach(b, twoOpConfig, true)
	h.mustEvent(b, twoOpConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("help")))
	sid := sidOf("bot-a", "person", "42")
	bustest.Eventually(t, "the chat is unread", func() bool { r := h.record(b, sid); return r != nil && r.Unread })
	h.command(b, twoOpConfig, 1, privateOp, "!ho list")
	h.command(b, twoOpConfig, 1, privateOp, "!ho take 1")
	// rewrite the reverse pointer in the one-target form
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := b.Scope()
	key, _ := bus.Key(sc, "relayto", sid)
	e, err := kv.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var cur struct {
		Targets []json.RawMessage `json:"targets"`
	}
	if err := json.Unmarshal(e.Value(), &cur); err != nil || len(cur.Targets) != 1 {
		t.Fatalf("the stored reverse pointer %s: %v", e.Value(), err)
	}
	if _, err := kv.Put(context.Background(), key, cur.Targets[0]); err != nil {
		t.Fatal(err)
	}
	h.mustEvent(b, twoOpConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("old form")))
	bustest.Eventually(t, "the one-target form forwards", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "old form")
	})
	h.command(b, twoOpConfig, 1, secondOp, "!ho list")
	if got := h.command(b, twoOpConfig, 1, secondOp, "!ho take 1"); !strings.Contains(got, "also relayed to private chat 77") {
		t.Fatalf("a take beside the one-target form: %q", got)
	}
	h.mustEvent(b, twoOpConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("new form")))
	bustest.Eventually(t, "both get the next message", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "new form") && hasText(sendsTo(h, b, "op-bot", "person", "78"), "new form")
	})
}

// TestRelayEndsOnCancelAndIdleReturn: the user's cancel word and the
// operator's idle return end the relay too, in every operator chat
// relaying the chat, and each is told.
func TestRelayEndsOnCancelAndIdleReturn(t *testing.T) {
	h := newHarness(t)
	b := newBinding("relay-cancel")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:person:77","op-bot:person:78"],"operator_idle_return":2}`
	h.attach(b, cfg, true)
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("help")))
	bustest.Eventually(t, "the chat is unread", func() bool { r := h.record(b, sidOf("bot-a", "person", "42")); return r != nil && r.Unread })
	for _, op := range []wire.Session{privateOp, secondOp} {
		h.command(b, cfg, 1, op, "!ho list")
		h.command(b, cfg, 1, op, "!ho take 1")
	}
	if r := h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("cancel human"))); !r.PreventDefault {
		t.Fatalf("the cancel word was left to the AI: %+v", r)
	}
	bustest.Eventually(t, "both operator chats are told the cancel ended the relay", func() bool {
		return hasText(sendsTo(h, b, "op-bot", "person", "77"), "relay ended") && hasText(sendsTo(h, b, "op-bot", "person", "78"), "relay ended")
	})
	for _, op := range []string{"77", "78"} {
		if r := h.mustEvent(b, cfg, takeover.EventPersonMessage, "op-bot", msgData("person", op, op, plain("still relaying?"))); r.PreventDefault {
			t.Fatalf("operator chat %s still relays after the cancel: %+v", op, r)
		}
	}

	h.clock.Advance(time.Second)
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "43", "43", plain("help")))
	sid := sidOf("bot-a", "person", "43")
	bustest.Eventually(t, "the second chat is unread", func() bool { r := h.record(b, sid); return r != nil && r.Unread })
	h.command(b, cfg, 1, privateOp, "!ho list") // the cancelled chat left the list: this one is 1
	if got := h.command(b, cfg, 1, privateOp, "!ho take 1"); !strings.Contains(got, "Relay on") {
		t.Fatalf("take: %q", got)
	}
	if r := h.record(b, sid); !r.Takeover.TakenOver(h.now().UnixMilli()) || r.Takeover.Operator != "77" {
		t.Fatalf("take 1 took another chat: %+v", r.Takeover)
	}
	before := countText(sendsTo(h, b, "op-bot", "person", "77"), "relay ended")
	bustest.Eventually(t, "the idle return ends the relay and tells the operator", func() bool {
		r := h.record(b, sid)
		return r != nil && r.Takeover.ReleaseReason == model.ReasonIdle &&
			countText(sendsTo(h, b, "op-bot", "person", "77"), "relay ended") == before+1
	})
	if r := h.mustEvent(b, cfg, takeover.EventPersonMessage, "op-bot", msgData("person", "77", "77", plain("after idle"))); r.PreventDefault {
		t.Fatalf("the operator chat still relays after the idle return: %+v", r)
	}
}
