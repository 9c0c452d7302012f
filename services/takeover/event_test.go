package takeover_test

import (
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/takeover"
)

const cfgTrigger = `{"trigger_words":["human"],"user_notice_on_takeover":"on","user_notice_on_release":"off"}`

func TestTriggerBlocksItsOwnMessage(t *testing.T) {
	h := newHarness(t)
	b := newBinding("dec6")
	h.attach(b, cfgTrigger, true)

	// auto on: the triggering message is blocked
	r := h.mustEvent(b, cfgTrigger, takeover.EventPersonMessage, "bot-a", msgData("person", 42, 42, plain("I want a HUMAN now")))
	if !r.PreventDefault || !r.PreventPostorder {
		t.Fatalf("trigger not blocked: %+v", r)
	}
	sid := sidOf("bot-a", "person", 42)
	rec := h.record(b, sid)
	if rec == nil || !rec.Unread || rec.TriggeredWord != "human" || !rec.Takeover.Active || rec.Takeover.Via != "trigger" {
		t.Fatalf("record after trigger: %+v", rec)
	}
	sends := h.host.WaitSends(t, 1, 10*time.Second)
	if sm := sends[0].SendMessage(); sm.MessageChain[0].Text != "on" || sm.TargetID != "42" || sm.BotUUID != "bot-a" {
		t.Fatalf("notice %+v", sm)
	}
	// the next message of the chat is blocked too
	if r := h.mustEvent(b, cfgTrigger, takeover.EventPersonMessage, "bot-a", msgData("person", 42, 42, plain("hello?"))); !r.PreventDefault {
		t.Fatal("taken-over chat not blocked")
	}

	// auto off: passes, unread set, no takeover
	off := `{"trigger_words":["human"],"auto_takeover_on_trigger":"false"}`
	b2 := newBinding("dec6off")
	h.attach(b2, off, true)
	r = h.mustEvent(b2, off, takeover.EventPersonMessage, "bot-a", msgData("person", 7, 7, plain("human please")))
	if r.PreventDefault || r.PreventPostorder {
		t.Fatalf("auto off blocked: %+v", r)
	}
	rec = h.record(b2, sidOf("bot-a", "person", 7))
	if rec == nil || !rec.Unread || rec.Takeover.Active {
		t.Fatalf("auto off record %+v", rec)
	}
}

func TestMalformedAndUnknownEvents(t *testing.T) {
	h := newHarness(t)
	b := newBinding("dec7")
	h.attach(b, `{}`, true)
	for name, data := range map[string]string{
		"bad type":        `{"launcher_type":"channel","launcher_id":1}`,
		"missing id":      `{"launcher_type":"person"}`,
		"object id":       `{"launcher_type":"person","launcher_id":{}}`,
		"control char":    `{"launcher_type":"person","launcher_id":"a\u0001"}`,
		"data not object": `[1]`,
	} {
		_, err := h.event(b, `{}`, takeover.EventPersonMessage, "bot-a", []byte(data))
		if !isCode(err, 400, "") {
			t.Errorf("%s: err = %v, want 400", name, err)
		}
	}
	r := h.mustEvent(b, `{}`, "GroupNormalMessageReceived", "bot-a", msgData("group", 1, 2, plain("x")))
	if r.PreventDefault || r.PreventPostorder {
		t.Fatal("unknown event blocked")
	}
	var list takeover.SessionList
	h.mustPage(b, `{}`, "GET", "/sessions", nil, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("sessions stored: %+v", list.Sessions)
	}
}

func TestEventWithoutBotIsNotKeyed(t *testing.T) {
	h := newHarness(t)
	b := newBinding("id5")
	h.attach(b, cfgTrigger, true)
	for _, bot := range []string{"", "a:b", "bad\x01bot"} {
		for _, name := range []string{takeover.EventPersonMessage, takeover.EventGroupMessage, takeover.EventResponded} {
			data := msgData("person", 1, 1, plain("human"))
			if name == takeover.EventResponded {
				data = aiData("person", 1, "answer")
			}
			r := h.mustEvent(b, cfgTrigger, name, bot, data)
			if r.PreventDefault {
				t.Errorf("%q %s blocked", bot, name)
			}
		}
	}
	var list takeover.SessionList
	h.mustPage(b, `{}`, "GET", "/sessions", nil, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("sessions stored: %+v", list.Sessions)
	}
}

func TestAIReplyBlockedAfterMidFlightTakeover(t *testing.T) {
	h := newHarness(t)
	b := newBinding("dec5")
	h.attach(b, `{}`, true)
	data := msgData("person", 5, 5, plain("question"))
	if r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", data); r.PreventDefault {
		t.Fatal("plain message blocked")
	}
	sid := sidOf("bot-a", "person", 5)
	var tv takeover.TakeoverView
	h.mustPage(b, `{}`, "POST", "/takeover", map[string]string{"sid": sid}, &tv)
	if !tv.Active || tv.Remaining < 599 {
		t.Fatalf("takeover %+v", tv)
	}
	r := h.mustEvent(b, `{}`, takeover.EventResponded, "bot-a", aiData("person", 5, "AI answer"))
	if !r.PreventDefault || !r.PreventPostorder {
		t.Fatal("AI reply after takeover not blocked")
	}
	if got := len(h.messages(b, `{}`, sid).Messages); got != 1 {
		t.Fatalf("%d entries, want only the user's", got)
	}
	h.mustPage(b, `{}`, "DELETE", "/takeover", map[string]string{"sid": sid}, &tv)
	if tv.Active {
		t.Fatal("release kept the takeover")
	}
	if r := h.mustEvent(b, `{}`, takeover.EventResponded, "bot-a", aiData("person", 5, "AI again")); r.PreventDefault {
		t.Fatal("AI reply blocked after release")
	}
	msgs := h.messages(b, `{}`, sid).Messages
	if len(msgs) != 2 || msgs[0].Role != "ai" || msgs[0].Parts[0].Text != "AI again" {
		t.Fatalf("history %+v", msgs)
	}
	// an empty AI reply is not recorded
	h.mustEvent(b, `{}`, takeover.EventResponded, "bot-a", aiData("person", 5, ""))
	if got := len(h.messages(b, `{}`, sid).Messages); got != 2 {
		t.Fatalf("empty AI reply recorded: %d", got)
	}
}
