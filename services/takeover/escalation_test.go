package takeover_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// The escalation timers are JetStream schedules on the server's clock; the
// tests configure them in seconds (the harness lowers the settings' lower
// clamp to 1 s) and read the service's clock (h.clock) for the decisions.

// firstSend is the first send into a chat whose text contains s.
func firstSend(h *harness, b binding.Binding, bot, typ, id, s string) (bustest.HostCall, bool) {
	for _, c := range h.host.Sends() {
		m := c.SendMessage()
		if m.BotUUID == bot && m.TargetType == typ && m.TargetID == id && c.Request.Binding.InstallationUUID == b.InstallationUUID &&
			hasText([]wire.SendMessage{m}, s) {
			return c, true
		}
	}
	return bustest.HostCall{}, false
}

func TestEscalationReAlertAndQueue(t *testing.T) {
	h := newHarness(t)
	b := newBinding("esc")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:person:77"],
		"escalate_after":2,"escalate_fallback_chats":["op-bot:group:555"],"queue_notice":true}`
	h.attach(b, cfg, true)
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("help")))
	h.clock.Advance(time.Second)
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "43", "43", plain("help please")))

	// each user is told their place, oldest request first
	bustest.Eventually(t, "queue places", func() bool {
		_, one := firstSend(h, b, "bot-a", "person", "42", "number 1 in the queue")
		_, two := firstSend(h, b, "bot-a", "person", "43", "number 2 in the queue")
		return one && two
	})
	first, ok := firstSend(h, b, "op-bot", "person", "77", "needs a human")
	if !ok {
		t.Fatal("no first alert")
	}
	// chat 43 is taken before its re-alert: it is not escalated
	h.command(b, cfg, 1, privateOp, "!ho list")
	h.command(b, cfg, 1, privateOp, "!ho take 1") // the newest: 43

	// 42 is alerted again to the operator chats, then to the fallback chat
	var again, fallback bustest.HostCall
	bustest.Eventually(t, "re-alert, then the fallback chat", func() bool {
		var ok1, ok2 bool
		again, ok1 = firstSend(h, b, "op-bot", "person", "77", "Still waiting")
		fallback, ok2 = firstSend(h, b, "op-bot", "group", "555", "Still waiting")
		return ok1 && ok2
	})
	// schedules fire at whole seconds no earlier than their time
	if d := again.At.Sub(first.At); d < time.Second {
		t.Errorf("re-alert %v after the alert, before the configured 2 s", d)
	}
	if d := fallback.At.Sub(again.At); d < time.Second {
		t.Errorf("fallback %v after the re-alert, before the configured 2 s", d)
	}
	for _, c := range h.host.Sends() {
		m := c.SendMessage()
		if hasText([]wire.SendMessage{m}, "Still waiting") && strings.Contains(m.MessageChain[0].Text, "43") {
			t.Fatalf("a chat taken before its time was escalated: %q", m.MessageChain[0].Text)
		}
		if hasText([]wire.SendMessage{m}, "Still waiting") && !strings.Contains(c.IdempotencyKey, ":escalate") {
			t.Errorf("re-alert key %q", c.IdempotencyKey)
		}
	}
}

func TestEscalationOutOfHours(t *testing.T) {
	h := newHarness(t)
	b := newBinding("esc-ooh")
	// working hours two to three hours from now, in Shanghai: now is outside
	loc, _ := time.LoadLocation("Asia/Shanghai")
	now := h.now().In(loc)
	hours := fmt.Sprintf("%02d:00-%02d:00", (now.Hour()+2)%24, (now.Hour()+3)%24)
	cfg := fmt.Sprintf(`{"trigger_words":["help"],"operator_chats":["op-bot:person:77"],"queue_notice":true,"working_hours":%q,"timezone":"Asia/Shanghai"}`, hours)
	h.attach(b, cfg, true)
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("help")))
	bustest.Eventually(t, "out-of-hours reply", func() bool {
		_, ok := firstSend(h, b, "bot-a", "person", "42", "Our operators work "+hours+" (Asia/Shanghai)")
		return ok
	})
	if _, ok := firstSend(h, b, "bot-a", "person", "42", "in the queue"); ok {
		t.Fatal("the queue notice was sent beside the out-of-hours reply")
	}
	// inside the hours (a configured reply this time), no out-of-hours text
	b2 := newBinding("esc-in-hours")
	in := fmt.Sprintf(`{"trigger_words":["help"],"operator_chats":["op-bot:person:77"],"working_hours":"%02d:00-%02d:00","timezone":"Asia/Shanghai","out_of_hours_reply":"closed"}`,
		now.Hour(), (now.Hour()+1)%24)
	h.attach(b2, in, true)
	h.mustEvent(b2, in, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("help")))
	bustest.Eventually(t, "the alert", func() bool { _, ok := firstSend(h, b2, "op-bot", "person", "77", "needs a human"); return ok })
	out := fmt.Sprintf(`{"trigger_words":["help"],"operator_chats":["op-bot:person:77"],"working_hours":%q,"timezone":"Asia/Shanghai","out_of_hours_reply":"closed"}`, hours)
	h.mustEvent(b2, out, takeover.EventPersonMessage, "bot-a", msgData("person", "43", "43", plain("help")))
	bustest.Eventually(t, "the configured out-of-hours reply", func() bool {
		_, ok := firstSend(h, b2, "bot-a", "person", "43", "closed")
		return ok
	})
	if _, ok := firstSend(h, b2, "bot-a", "person", "42", "closed"); ok {
		t.Fatal("an out-of-hours reply inside the working hours")
	}
}

func TestEscalationCancel(t *testing.T) {
	h := newHarness(t)
	b := newBinding("esc-cancel")
	cfg := `{"trigger_words":["help"],"operator_chats":["op-bot:person:77"]}`
	h.attach(b, cfg, true)
	sid := sidOf("bot-a", "person", "42")

	// a chat taken over by its trigger: the cancel word releases it
	if r := h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("help"))); !r.PreventDefault {
		t.Fatal("the trigger did not take over")
	}
	if r := h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain(" 取消人工 "))); !r.PreventDefault {
		t.Fatal("the cancel word was left to the AI")
	}
	bustest.Eventually(t, "released and handled", func() bool {
		r := h.record(b, sid)
		return r != nil && !r.Takeover.Active && !r.Unread
	})
	bustest.Eventually(t, "the user is told", func() bool {
		_, ok := firstSend(h, b, "bot-a", "person", "42", "withdrawn")
		return ok
	})
	if r := h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("hello again"))); r.PreventDefault {
		t.Fatal("the AI is still blocked after the cancel")
	}
	// in a chat that waits for nobody the cancel word is an ordinary message
	if r := h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("cancel human"))); r.PreventDefault {
		t.Fatal("a cancel word outside a request was blocked")
	}
	// configured words replace the defaults
	words := `{"trigger_words":["help"],"operator_chats":["op-bot:person:77"],"cancel_words":["算了"]}`
	h.mustEvent(b, words, takeover.EventPersonMessage, "bot-a", msgData("person", "43", "43", plain("help")))
	if r := h.mustEvent(b, words, takeover.EventPersonMessage, "bot-a", msgData("person", "43", "43", plain("算了"))); !r.PreventDefault {
		t.Fatal("a configured cancel word was left to the AI")
	}
	bustest.Eventually(t, "the configured word releases", func() bool {
		r := h.record(b, sidOf("bot-a", "person", "43"))
		return r != nil && !r.Takeover.Active && r.Takeover.ReleasedBy == "user"
	})
}

func TestEscalationIdleReturn(t *testing.T) {
	h := newHarness(t)
	b := newBinding("esc-idle")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:person:77"],"operator_idle_return":2,"queue_notice":true}`
	h.attach(b, cfg, true)
	askHumanWith(h, b, cfg, "42")
	h.command(b, cfg, 1, privateOp, "!ho list")
	h.command(b, cfg, 1, privateOp, "!ho take 1")
	sid := sidOf("bot-a", "person", "42")
	// the operator speaks once: the idle time runs from that reply
	h.command(b, cfg, 1, privateOp, "!ho reply 1 one moment")
	replied := h.record(b, sid).Takeover.LastHumanAt
	bustest.Eventually(t, "idle return", func() bool {
		r := h.record(b, sid)
		return r != nil && !r.Takeover.Active && r.Takeover.ReleaseReason == model.ReasonIdle && r.Unread
	})
	if r := h.record(b, sid); r.Takeover.ReleasedAt-replied < 2000 {
		t.Errorf("returned %d ms after the operator's reply, before the configured 2 s", r.Takeover.ReleasedAt-replied)
	}
	bustest.Eventually(t, "the operator chat is told", func() bool {
		_, ok := firstSend(h, b, "op-bot", "person", "77", "went back to the queue")
		return ok
	})
	// back in the queue: the user is told their place again, and the AI
	// answers meanwhile
	bustest.Eventually(t, "the queue notice of the return", func() bool {
		n := 0
		for _, m := range sendsTo(h, b, "bot-a", "person", "42") {
			if hasText([]wire.SendMessage{m}, "in the queue") {
				n++
			}
		}
		return n == 2
	})
	if r := h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("anyone?"))); r.PreventDefault {
		t.Fatal("the AI is blocked in a chat returned to the queue")
	}
}

func askHumanWith(h *harness, b binding.Binding, cfg, lid string) {
	h.t.Helper()
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", lid, lid, plain("help")))
	sid := sidOf("bot-a", "person", lid)
	bustest.Eventually(h.t, "the chat is unread", func() bool { r := h.record(b, sid); return r != nil && r.Unread })
}

// TestEscalationReArmedOnResume: the escalation timers that fire while an
// installation is paused are dropped; the resume gives a chat still
// waiting its re-alert back, and a chat an operator holds its idle return.
func TestEscalationReArmedOnResume(t *testing.T) {
	h := newHarness(t)
	b := newBinding("esc-resume")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:person:77"],
		"escalate_after":2,"operator_idle_return":2}`
	h.attach(b, cfg, true)
	askHumanWith(h, b, cfg, "42")
	h.clock.Advance(time.Second)
	askHumanWith(h, b, cfg, "43")
	h.command(b, cfg, 1, privateOp, "!ho list")
	h.command(b, cfg, 1, privateOp, "!ho take 1") // the newest: 43
	h.command(b, cfg, 1, privateOp, "!ho reply 1 one moment")
	waitingSID, heldSID := sidOf("bot-a", "person", "42"), sidOf("bot-a", "person", "43")
	raised, replied := h.record(b, waitingSID).TriggeredAt, h.record(b, heldSID).Takeover.LastHumanAt

	h.attach(b, cfg, false) // paused
	bustest.Eventually(t, "both timers' times and their fires", func() bool {
		last := max(model.ScheduleAt(raised+2000), model.ScheduleAt(replied+2000))
		return time.Now().UnixMilli() > last+1500
	})
	if _, ok := firstSend(h, b, "op-bot", "person", "77", "Still waiting"); ok {
		t.Fatal("a paused installation re-alerted")
	}
	if r := h.record(b, heldSID); !r.Takeover.Active {
		t.Fatalf("a paused installation returned a chat: %+v", r.Takeover)
	}

	h.attach(b, cfg, true) // resumed
	bustest.Eventually(t, "the waiting chat is re-alerted after the resume", func() bool {
		_, ok := firstSend(h, b, "op-bot", "person", "77", "Still waiting")
		return ok
	})
	bustest.Eventually(t, "the held chat goes back to the queue after the resume", func() bool {
		r := h.record(b, heldSID)
		return r != nil && !r.Takeover.Active && r.Takeover.ReleaseReason == model.ReasonIdle && r.Unread
	})
}

// TestCancelWordIsRecorded: the user's cancel word is in the chat's
// history like any message of theirs (the console shows what the user
// said), in a chat taken over and in one waiting; a trigger word inside
// it raises no new request.
func TestCancelWordIsRecorded(t *testing.T) {
	h := newHarness(t)
	b := newBinding("esc-cancel-rec")
	taken := `{"trigger_words":["人工"],"operator_chats":["op-bot:person:77"]}`
	waitingCfg := `{"trigger_words":["人工"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:person:77"]}`
	h.attach(b, taken, true)
	for _, c := range []struct{ lid, cfg string }{{"42", taken}, {"43", waitingCfg}} {
		sid := sidOf("bot-a", "person", c.lid)
		h.mustEvent(b, c.cfg, takeover.EventPersonMessage, "bot-a", msgData("person", c.lid, c.lid, plain("转人工")))
		bustest.Eventually(t, "the request", func() bool { r := h.record(b, sid); return r != nil && r.Unread })
		if r := h.mustEvent(b, c.cfg, takeover.EventPersonMessage, "bot-a", msgData("person", c.lid, c.lid, plain("取消人工"))); !r.PreventDefault {
			t.Fatalf("chat %s: the cancel word was left to the AI", c.lid)
		}
		bustest.Eventually(t, "the cancel word is recorded", func() bool {
			for _, e := range h.messages(b, c.cfg, sid).Messages {
				if e.Role == model.RoleUser && len(e.Parts) > 0 && e.Parts[0].Text == "取消人工" {
					return true
				}
			}
			return false
		})
		bustest.Eventually(t, "released and handled", func() bool {
			r := h.record(b, sid)
			return r != nil && !r.Takeover.Active && !r.Unread
		})
	}
}
