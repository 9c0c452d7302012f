package console_test

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
)

// cfgRelay has a private and a group operator chat on the bot the
// harness's events name.
const cfgRelay = `{"takeover_timeout":600,"trigger_words":["human"],"takeover_on_reply":true,"operator_chats":["bot-1:person:77","bot-1:group:900"]}`

var (
	relayPrivate = wire.Session{LauncherType: "person", LauncherID: "77", SenderID: "77", BotUUID: "bot-1"}
	relayGroup   = wire.Session{LauncherType: "group", LauncherID: "900", SenderID: "78", BotUUID: "bot-1"}
)

// command runs `!ho ...` from an operator chat and returns the answer.
func (h *harness) command(b binding.Binding, config string, ses wire.Session, full string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	words := strings.Fields(strings.TrimPrefix(full, "!"))
	raw, err := h.inv.Invoke(ctx, takeover.Plugin, wire.EndpointCommand, bus.NewInvocationID(), &wire.Request{
		Binding: b, Config: json.RawMessage(config),
		Command: &wire.Command{Name: words[0], Params: words[1:], FullText: full, Session: ses, Privilege: 1},
	})
	if err != nil {
		h.t.Fatalf("command %q: %v", full, err)
	}
	var r wire.CommandReply
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Returns) == 0 {
		h.t.Fatalf("command reply %s: %v", raw, err)
	}
	return r.Returns[0].Text
}

// TestConsoleShowsRelay: the displayed chat shows the operator chats
// relaying it, in the words of `!ho show N`, live as operator chats take
// it, join and leave, and no more once it is released; a chat nobody
// relays shows nothing.
func TestConsoleShowsRelay(t *testing.T) {
	w := newWorld(t, cfgRelay)
	b, h := w.b, w.h
	relay := `document.querySelector('[data-testid=relay-status]')`
	b.show(w.sid["A"])
	if !evalBool(b, relay+`.hidden`) {
		t.Fatal("a chat nobody relays shows a relay status")
	}
	b.run(clickTakeover())
	b.until("takeover on", `document.querySelector('[data-testid=takeover-btn]').dataset.state === 'on'`)
	h.command(w.bind, w.cfg, relayPrivate, "!ho list")
	if got := h.command(w.bind, w.cfg, relayPrivate, "!ho take 1"); !strings.Contains(got, "Relay on") {
		t.Fatalf("take: %q", got)
	}
	b.until("the relay shown live", relay+`.textContent === 'Relayed to: private chat 77' && !`+relay+`.hidden`)
	if got := h.command(w.bind, w.cfg, relayPrivate, "!ho show 1"); !strings.Contains(got, "Relayed to: private chat 77") {
		t.Fatalf("show: %q", got)
	}
	h.command(w.bind, w.cfg, relayGroup, "!ho list")
	h.command(w.bind, w.cfg, relayGroup, "!ho take 1")
	b.until("the second operator chat shown", relay+`.textContent === 'Relayed to: private chat 77, group 900'`)
	// another chat shows nothing, and the relay again when reopened
	b.show(w.sid["B"])
	if !evalBool(b, relay+`.hidden`) {
		t.Fatal("a chat nobody relays shows a relay status")
	}
	b.show(w.sid["A"])
	b.until("the relay after reopening", relay+`.textContent === 'Relayed to: private chat 77, group 900' && !`+relay+`.hidden`)
	h.command(w.bind, w.cfg, relayPrivate, "!ho leave")
	b.until("the operator chat that left is gone", relay+`.textContent === 'Relayed to: group 900'`)
	b.run(clickTakeover())
	b.until("the release ends the relay", `document.querySelector('[data-testid=takeover-btn]').dataset.state === 'off' && `+relay+`.hidden`)
}

// evalBool evaluates a boolean expression in the page.
func evalBool(b *browser, js string) bool {
	b.t.Helper()
	var v bool
	b.eval(js, &v)
	return v
}

// TestConsoleSuggestFillsTheBox: with ai_assist on, the composer's
// suggestion button fills the reply box with the AI's draft (POST
// /suggest, the path of `!ho suggest N`) and sends nothing; the operator
// then sends it as any reply. A failed LLM says so and leaves the box;
// without ai_assist there is no button.
func TestConsoleSuggestFillsTheBox(t *testing.T) {
	const cfg = `{"takeover_timeout":600,"trigger_words":["human"],"takeover_on_reply":true,"ai_assist":true,"ai_calls_per_day":5}`
	w := newWorld(t, cfg)
	b, h := w.b, w.h
	h.host.AnswerLLM(func(req wire.InvokeLLM) bustest.HostReply {
		return bustest.HostReply{Data: wire.LLMAnswer{Text: "Hi A, how can I help?", Model: bustest.LLMModel}}
	})
	b.show(w.sid["A"])
	b.until("the suggestion button", `!document.querySelector('[data-testid=suggest-btn]').hidden && !document.querySelector('[data-testid=suggest-btn]').disabled`)
	sends := w.sends()
	b.run(chromedpClick(`[data-testid=suggest-btn]`))
	b.until("the draft in the reply box", `TakeoverConsole.snapshot().settled['POST /suggest'] >= 1 && document.querySelector('[data-testid=msg-input]').value === 'Hi A, how can I help?'`)
	if calls := h.host.LLMCalls(); len(calls) != 1 || !strings.Contains(calls[0].InvokeLLM().Messages[1].Content, "hello from A") {
		t.Fatalf("invoke_llm calls %d, want 1 on A's transcript", len(calls))
	}
	if w.sends() != sends {
		t.Fatal("the suggestion was sent by itself")
	}
	b.send()
	b.until("the reply sent", `TakeoverConsole.snapshot().settled['POST /reply'] >= 1`)
	if got := h.host.Sends(); len(got) == sends || got[len(got)-1].SendMessage().MessageChain[0].Text != "Hi A, how can I help?" {
		t.Fatal("the draft was not sent as the reply")
	}

	h.host.AnswerLLM(bustest.NoLLMModel)
	b.setText("my own words")
	b.run(chromedpClick(`[data-testid=suggest-btn]`))
	b.until("the failure said", `Array.from(document.querySelectorAll('[data-testid=toast]')).some((n) => n.textContent.includes('could not draft'))`)
	if got := b.snap().Text; got != "my own words" {
		t.Fatalf("a failed suggestion changed the box to %q", got)
	}

	off := newWorld(t, cfgReply)
	off.b.show(off.sid["A"])
	if !evalBool(off.b, `document.querySelector('[data-testid=suggest-btn]').hidden`) {
		t.Fatal("the suggestion button shows without ai_assist")
	}
}
