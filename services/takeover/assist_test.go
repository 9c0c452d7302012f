package takeover_test

import (
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
)

const assistConfig = `{"trigger_words":["refund"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900"],"ai_assist":true,"ai_calls_per_day":2}`

// askForHuman has user lid say hello, get an AI answer and then hit the
// trigger word, and waits for the alert in operator chat 900.
func askForHuman(t *testing.T, h *harness, b binding.Binding, cfg, lid string) bustest.HostCall {
	t.Helper()
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", lid, lid, plain("hello there")))
	h.mustEvent(b, cfg, takeover.EventResponded, "bot-a", aiData("person", lid, "Hi! How can I help?"))
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", lid, lid, plain("I want a refund for order 7")))
	var alert bustest.HostCall
	bustest.Eventually(t, "the alert", func() bool {
		got := alertsTo(h, b)["group:900"]
		if len(got) == 0 {
			return false
		}
		alert = got[0]
		return true
	})
	return alert
}

// TestAIAssistSummaryAndSuggest: with ai_assist on, the alert carries the
// first two lines of the LLM's summary of the conversation (the transcript
// it got holds the user's and the AI's messages), `!ho suggest N` answers
// the LLM's draft, which `!ho reply N` sends; the day's budget
// (ai_calls_per_day 2) then refuses a third call without calling the
// host; no chat text, prompt or answer reaches the logs.
func TestAIAssistSummaryAndSuggest(t *testing.T) {
	var logs bustest.LogBuffer
	h := newLoggedHarness(t, &logs)
	b := newBinding("assist")
	h.attach(b, assistConfig, true)
	h.host.AnswerLLM(func(req wire.InvokeLLM) bustest.HostReply {
		answer := "Sorry for the wait, I can refund order 7 today."
		if strings.Contains(req.Messages[0].Content, "two short lines") {
			answer = "Wants a refund for order 7.\n\nThe AI greeted them only.\nA third line."
		}
		return bustest.HostReply{Data: wire.LLMAnswer{Text: answer, Model: bustest.LLMModel}}
	})
	alert := askForHuman(t, h, b, assistConfig, "71")
	text := alert.SendMessage().MessageChain[0].Text
	if !strings.Contains(text, "Summary: Wants a refund for order 7.\nThe AI greeted them only.") || strings.Contains(text, "third line") {
		t.Fatalf("alert %q", text)
	}
	calls := h.host.LLMCalls()
	if len(calls) != 1 {
		t.Fatalf("%d invoke_llm calls", len(calls))
	}
	req := calls[0].InvokeLLM()
	if len(req.Messages) != 2 || req.Messages[0].Role != wire.RoleSystem ||
		req.Messages[1].Content != "User: hello there\nAI: Hi! How can I help?\nUser: I want a refund for order 7" {
		t.Fatalf("invoke_llm messages %+v", req.Messages)
	}
	if calls[0].Scope.String() == "" || calls[0].Request.Binding.InstallationUUID != b.InstallationUUID {
		t.Errorf("invoke_llm for %+v", calls[0].Request.Binding)
	}

	h.command(b, assistConfig, 1, opSession, "!ho list")
	got := h.command(b, assistConfig, 1, opSession, "!ho suggest 1")
	if !strings.Contains(got, "Suggested reply to chat 1") || !strings.HasSuffix(got, "\nSorry for the wait, I can refund order 7 today.") {
		t.Fatalf("suggest answered %q", got)
	}
	h.command(b, assistConfig, 1, opSession, "!ho reply 1 Sorry for the wait, I can refund order 7 today.")
	if s := textsTo(h, "71"); len(s) != 1 || s[0] != "Sorry for the wait, I can refund order 7 today." {
		t.Fatalf("sent %q", s)
	}
	// the budget: two calls today, the third is refused without a call
	if got := h.command(b, assistConfig, 1, opSession, "!ho suggest 1"); !strings.Contains(got, "used up") {
		t.Errorf("over budget answered %q", got)
	}
	if n := len(h.host.LLMCalls()); n != 2 {
		t.Errorf("%d invoke_llm calls, want 2", n)
	}
	// another installation has its own budget
	other := newBinding("assist-other")
	h.attach(other, assistConfig, true)
	askForHuman(t, h, other, assistConfig, "72")
	h.command(other, assistConfig, 1, opSession, "!ho list")
	if got := h.command(other, assistConfig, 1, opSession, "!ho suggest 1"); !strings.Contains(got, "Sorry for the wait") {
		t.Errorf("B's suggest answered %q", got)
	}
	// the next UTC day has a fresh budget
	h.clock.Advance(24 * time.Hour)
	if got := h.command(b, assistConfig, 1, opSession, "!ho suggest 1"); !strings.Contains(got, "Sorry for the wait") {
		t.Errorf("next day's suggest answered %q", got)
	}
	for _, secret := range []string{"refund", "order 7", "hello there", "two short lines", "Sorry for the wait"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the logs hold %q", secret)
		}
	}
}

// TestAIAssistFailures: an LLM that fails (no model) or never answers
// (past Config.LLMTimeout) leaves the alert without a summary but
// delivered, and `!ho suggest` says it could not; with ai_assist off (the
// default) the host's LLM is never called and suggest says it is off.
func TestAIAssistFailures(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) { c.LLMTimeout = 300 * time.Millisecond })
	b := newBinding("assist-fail")
	h.attach(b, assistConfig, true)
	h.host.AnswerLLM(bustest.NoLLMModel)
	alert := askForHuman(t, h, b, assistConfig, "73")
	if text := alert.SendMessage().MessageChain[0].Text; strings.Contains(text, "Summary") || !strings.Contains(text, "needs a human") {
		t.Errorf("alert with a failed LLM %q", text)
	}
	h.command(b, assistConfig, 1, opSession, "!ho list")
	if got := h.command(b, assistConfig, 1, opSession, "!ho suggest 1"); !strings.Contains(got, "could not draft") {
		t.Errorf("suggest with a failed LLM answered %q", got)
	}

	silent := newBinding("assist-silent")
	cfg := strings.Replace(assistConfig, `"ai_calls_per_day":2`, `"ai_calls_per_day":5`, 1)
	h.attach(silent, cfg, true)
	h.host.AnswerLLM(func(wire.InvokeLLM) bustest.HostReply { return bustest.HostReply{Drop: true} })
	alert = askForHuman(t, h, silent, cfg, "74")
	if text := alert.SendMessage().MessageChain[0].Text; strings.Contains(text, "Summary") {
		t.Errorf("alert with a silent LLM %q", text)
	}

	off := newBinding("assist-off")
	offCfg := `{"trigger_words":["refund"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900"]}`
	h.attach(off, offCfg, true)
	h.host.AnswerLLM(nil)
	calls := len(h.host.LLMCalls())
	askForHuman(t, h, off, offCfg, "75")
	h.command(off, offCfg, 1, opSession, "!ho list")
	if got := h.command(off, offCfg, 1, opSession, "!ho suggest 1"); !strings.Contains(got, "AI help is off") {
		t.Errorf("suggest with assist off answered %q", got)
	}
	if n := len(h.host.LLMCalls()); n != calls {
		t.Errorf("assist off made %d invoke_llm calls", n-calls)
	}
}

// TestAIAssistSuggestPage: the console's POST /suggest is `!ho suggest
// N`'s path: the same draft, the same budget (ai_calls_per_day 2, shared
// with the command), nothing sent to the user; refusals carry their
// reasons (off 409, budget 429, a failed LLM 503) and an unknown chat is
// 404; GET /info tells the console whether to offer it.
func TestAIAssistSuggestPage(t *testing.T) {
	h := newHarness(t)
	b := newBinding("assist-page")
	h.attach(b, assistConfig, true)
	h.host.AnswerLLM(func(req wire.InvokeLLM) bustest.HostReply {
		return bustest.HostReply{Data: wire.LLMAnswer{Text: "  Happy to help with order 7.  ", Model: bustest.LLMModel}}
	})
	h.mustEvent(b, assistConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "76", "76", plain("where is order 7")))
	sid := sidOf("bot-a", "person", "76")
	bustest.Eventually(t, "the message is recorded", func() bool { return h.historyCount(b, sid) == 1 })
	var info struct {
		Config struct {
			AIAssist bool `json:"ai_assist"`
		} `json:"config"`
	}
	h.mustPage(b, assistConfig, "GET", "/info", nil, &info)
	if !info.Config.AIAssist {
		t.Fatal("GET /info does not offer the suggestion with ai_assist on")
	}
	sends := len(h.host.Sends())
	var s takeover.Suggestion
	h.mustPage(b, assistConfig, "POST", "/suggest", map[string]string{"sid": sid}, &s)
	if s.Text != "Happy to help with order 7." {
		t.Fatalf("POST /suggest = %q", s.Text)
	}
	if len(h.host.Sends()) != sends {
		t.Fatal("a suggestion was sent to the user")
	}
	if err := h.page(b, assistConfig, "POST", "/suggest", map[string]string{"sid": sidOf("bot-a", "person", "999")}, nil); !isCode(err, 404, "") {
		t.Errorf("an unknown chat: %v, want 404", err)
	}
	h.mustPage(b, assistConfig, "POST", "/takeover", map[string]string{"sid": sid}, nil) // so `!ho list` numbers it
	h.command(b, assistConfig, 1, opSession, "!ho list")
	if got := h.command(b, assistConfig, 1, opSession, "!ho suggest 1"); !strings.Contains(got, "Happy to help with order 7.") {
		t.Fatalf("the command after the page: %q", got)
	}
	// the two calls of the day are spent, by the page and the command alike
	if err := h.page(b, assistConfig, "POST", "/suggest", map[string]string{"sid": sid}, nil); !isCode(err, 429, "ai_budget") {
		t.Errorf("over budget: %v, want 429 ai_budget", err)
	}
	if n := len(h.host.LLMCalls()); n != 2 {
		t.Errorf("%d invoke_llm calls, want 2", n)
	}

	h.clock.Advance(24 * time.Hour)
	h.host.AnswerLLM(bustest.NoLLMModel)
	if err := h.page(b, assistConfig, "POST", "/suggest", map[string]string{"sid": sid}, nil); !isCode(err, 503, "ai_failed") {
		t.Errorf("a failed LLM: %v, want 503 ai_failed", err)
	}

	off := newBinding("assist-page-off")
	offCfg := `{"trigger_words":["refund"]}`
	h.attach(off, offCfg, true)
	h.mustEvent(off, offCfg, takeover.EventPersonMessage, "bot-a", msgData("person", "77", "77", plain("hi")))
	offSID := sidOf("bot-a", "person", "77")
	bustest.Eventually(t, "recorded", func() bool { return h.historyCount(off, offSID) == 1 })
	calls := len(h.host.LLMCalls())
	if err := h.page(off, offCfg, "POST", "/suggest", map[string]string{"sid": offSID}, nil); !isCode(err, 409, "ai_assist_off") {
		t.Errorf("assist off: %v, want 409 ai_assist_off", err)
	}
	h.mustPage(off, offCfg, "GET", "/info", nil, &info)
	if info.Config.AIAssist || len(h.host.LLMCalls()) != calls {
		t.Errorf("assist off: info %+v, %d calls", info.Config, len(h.host.LLMCalls())-calls)
	}
}
