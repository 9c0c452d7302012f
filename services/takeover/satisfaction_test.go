package takeover_test

import (
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
)

const surveyConfig = `{"trigger_words":["help","人工"],"satisfaction_survey":true,"satisfaction_window":120,"user_notice_on_release":"bye"}`

// takenAndReleased has user lid ask for a human (a trigger takes the chat
// over) and releases it from the console, returning the chat's sid.
func takenAndReleased(t *testing.T, h *harness, b binding.Binding, cfg, lid, text string) string {
	t.Helper()
	sid := sidOf("bot-a", "person", lid)
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", lid, lid, plain(text)))
	bustest.Eventually(t, "taken over", func() bool { r := h.record(b, sid); return r != nil && r.Takeover.Active })
	h.mustPage(b, cfg, "DELETE", "/takeover", map[string]any{"sid": sid}, nil)
	return sid
}

// TestSatisfactionAfterRelease: with satisfaction_survey on, a release
// sends the release notice, then the question in the user's language; the
// user's next message "5" is not answered by the AI and is stored on the
// session (console list and export); later numbers are ordinary messages.
func TestSatisfactionAfterRelease(t *testing.T) {
	h := newHarness(t)
	b := newBinding("survey")
	h.attach(b, surveyConfig, true)
	sid := takenAndReleased(t, h, b, surveyConfig, "64", "help please")
	sends := h.host.WaitSends(t, 2, 10*time.Second)
	if got := textsTo(h, "64"); len(got) != 2 || got[0] != "bye" || !strings.Contains(got[1], "How did we do?") {
		t.Fatalf("sent %q (%d sends)", got, len(sends))
	}
	r := h.record(b, sid)
	if r.Satisfaction == nil || r.Satisfaction.Score != 0 || r.Satisfaction.Until-r.Satisfaction.AskedAt != 120_000 {
		t.Fatalf("after the release: %+v", r.Satisfaction)
	}
	bustest.Eventually(t, "the question in the history", func() bool {
		p := h.messages(b, surveyConfig, sid)
		return len(p.Messages) > 0 && strings.Contains(p.Messages[0].Parts[0].Text, "How did we do?")
	})

	if rep := h.mustEvent(b, surveyConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "64", "64", plain(" 5 "))); !rep.PreventDefault {
		t.Fatal("the score went to the AI")
	}
	bustest.Eventually(t, "score stored", func() bool { r := h.record(b, sid); return r.Satisfaction != nil && r.Satisfaction.Score == 5 })
	var list takeover.SessionList
	h.mustPage(b, surveyConfig, "GET", "/sessions", nil, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Satisfaction == nil || list.Sessions[0].Satisfaction.Score != 5 {
		t.Errorf("console list %+v", list.Sessions)
	}
	if d := h.messages(b, surveyConfig, sid).Session; d.Satisfaction == nil || d.Satisfaction.Score != 5 {
		t.Errorf("console conversation %+v", d.Satisfaction)
	}
	var exp takeover.Export
	h.mustPage(b, surveyConfig, "GET", "/export", map[string]any{"sid": sid}, &exp)
	if exp.Session.Satisfaction == nil || exp.Session.Satisfaction.Score != 5 {
		t.Errorf("export %+v", exp.Session.Satisfaction)
	}
	// the score is a recorded user message; the next number is the AI's
	if p := h.messages(b, surveyConfig, sid); p.Messages[0].Role != "user" || p.Messages[0].Parts[0].Text != "5" {
		t.Errorf("newest entry %+v", p.Messages[0])
	}
	if rep := h.mustEvent(b, surveyConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "64", "64", plain("4"))); rep.PreventDefault {
		t.Error("a number after the answer was blocked")
	}
	if r := h.record(b, sid); r.Satisfaction.Score != 5 {
		t.Errorf("a second number changed the score: %+v", r.Satisfaction)
	}
}

// TestSatisfactionIgnoredAnswers: a message that is no score closes the
// question and the AI answers it, as it answers a number after that; a
// number after the window goes to the AI; a Chinese-speaking user is asked
// in Chinese; with the setting off (the default), or in a group, nothing
// is asked.
func TestSatisfactionIgnoredAnswers(t *testing.T) {
	h := newHarness(t)
	b := newBinding("survey-ignored")
	h.attach(b, surveyConfig, true)

	sid := takenAndReleased(t, h, b, surveyConfig, "65", "help")
	bustest.Eventually(t, "asked", func() bool { return len(textsTo(h, "65")) == 2 })
	if rep := h.mustEvent(b, surveyConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "65", "65", plain("thanks, 5 stars!"))); rep.PreventDefault {
		t.Error("a text answer was blocked")
	}
	bustest.Eventually(t, "closed", func() bool { r := h.record(b, sid); return r.Satisfaction.Until == 0 })
	if rep := h.mustEvent(b, surveyConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "65", "65", plain("5"))); rep.PreventDefault {
		t.Error("a number after a text answer was blocked")
	}
	if r := h.record(b, sid); r.Satisfaction.Score != 0 {
		t.Errorf("score %+v", r.Satisfaction)
	}

	sid = takenAndReleased(t, h, b, surveyConfig, "66", "help")
	bustest.Eventually(t, "asked", func() bool { return len(textsTo(h, "66")) == 2 })
	h.clock.Advance(121 * time.Second)
	if rep := h.mustEvent(b, surveyConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "66", "66", plain("3"))); rep.PreventDefault {
		t.Error("a number after the window was blocked")
	}
	if r := h.record(b, sid); r.Satisfaction.Score != 0 {
		t.Errorf("a late number was stored: %+v", r.Satisfaction)
	}

	takenAndReleased(t, h, b, surveyConfig, "67", "我要人工")
	bustest.Eventually(t, "asked", func() bool { return len(textsTo(h, "67")) == 2 })
	if got := textsTo(h, "67")[1]; !strings.Contains(got, "满意") {
		t.Errorf("a Chinese user was asked %q", got)
	}

	off := newBinding("survey-off")
	offCfg := `{"trigger_words":["help"],"user_notice_on_release":"bye"}`
	h.attach(off, offCfg, true)
	sid = takenAndReleased(t, h, off, offCfg, "68", "help")
	bustest.Eventually(t, "release notice", func() bool { return len(textsTo(h, "68")) == 1 })
	if rep := h.mustEvent(off, offCfg, takeover.EventPersonMessage, "bot-a", msgData("person", "68", "68", plain("5"))); rep.PreventDefault {
		t.Error("with the survey off a number was blocked")
	}
	if r := h.record(off, sid); r.Satisfaction != nil {
		t.Errorf("with the survey off: %+v", r.Satisfaction)
	}

	gsid := sidOf("bot-a", "group", "69")
	h.mustEvent(b, surveyConfig, takeover.EventGroupMessage, "bot-a", msgData("group", "69", "70", plain("help")))
	bustest.Eventually(t, "group taken over", func() bool { r := h.record(b, gsid); return r != nil && r.Takeover.Active })
	h.mustPage(b, surveyConfig, "DELETE", "/takeover", map[string]any{"sid": gsid}, nil)
	bustest.Eventually(t, "group release notice", func() bool { return len(textsTo(h, "69")) == 1 })
	if r := h.record(b, gsid); r.Satisfaction != nil {
		t.Errorf("a group was asked: %+v", r.Satisfaction)
	}
	// a group's question would have been asked right after the notice's
	// first try, before DELETE /takeover answered
	if got := textsTo(h, "69"); len(got) != 1 {
		t.Errorf("group sends %q", got)
	}
}
