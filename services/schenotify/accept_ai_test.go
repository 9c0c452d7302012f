package schenotify_test

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// at is the command form of a due second in the UTC installations of
// these tests.
func at(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

// cfgBudget is an English UTC installation with an AI budget of n a day.
func cfgBudget(n int) string {
	return `{"language":"en_US","timezone":"UTC","ai_calls_per_day":` + strconv.Itoa(n) + `}`
}

// llmCalls returns the invoke_llm requests the fake host received.
func (h *fakeHost) llmCalls() []bustest.HostCall { return h.LLMCalls() }

// An AI-written reminder set by command: at the due second the prompt
// goes to the host's LLM (not before), and the answer is delivered once,
// under the occurrence's idempotency key; the list marks its kind.
func TestAIReminderWrittenAtDue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "group", "7")
	T := nextSecond().Add(3 * time.Second)
	reply := e.cmd(t, b, cfgEN, s, "!sche add "+at(T)+" ai: today's weather and a motivational line")
	if !strings.Contains(reply, "the AI writes this reminder") {
		t.Fatalf("add reply %q", reply)
	}
	if got := e.cmd(t, b, cfgEN, s, "!sche"); !strings.Contains(got, "(AI) today's weather") {
		t.Fatalf("list %q", got)
	}
	calls := e.host.wait(t, 1, 10*time.Second)
	llm := e.host.llmCalls()
	if len(llm) != 1 {
		t.Fatalf("%d invoke_llm calls, want 1", len(llm))
	}
	req := llm[0].InvokeLLM()
	if n := len(req.Messages); n != 2 || req.Messages[1].Role != wire.RoleUser || req.Messages[1].Content != "today's weather and a motivational line" {
		t.Fatalf("invoke_llm messages %+v", req.Messages)
	}
	if req.Messages[0].Role != wire.RoleSystem || req.Model != "" || req.TimeoutMS <= 0 {
		t.Fatalf("invoke_llm %+v", req)
	}
	if llm[0].At.Before(T) {
		t.Errorf("the prompt went out at %s, before the due second %s", llm[0].At.Format(time.StampMilli), T.Format(time.StampMilli))
	}
	checkOnTime(t, calls[0], T)
	if got := sentText(calls[0]); got != "[Notify] LLM: today's weather and a motivational line" {
		t.Fatalf("delivered %q", got)
	}
	if calls[0].SendMessage().MessageChain[0].Type != "At" {
		t.Errorf("a group delivery mentions its creator: %+v", calls[0].SendMessage().MessageChain)
	}
	bustest.EventuallyWithin(t, 5*time.Second, "one-shot finished", func() bool { return len(e.reminderKeys(t, scopeOf(b))) == 0 })
	if n := len(e.host.sends()); n != 1 {
		t.Fatalf("%d sends, want 1", n)
	}
	if !strings.HasPrefix(calls[0].IdempotencyKey, scopeOf(b).String()+":") {
		t.Errorf("idempotency key %q", calls[0].IdempotencyKey)
	}
}

// The Chinese keyword with a full-width colon, and the schedule tool's
// ai parameter, both store the prompt as an AI-written reminder; without
// them the text stays fixed.
func TestAIReminderForms(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "group", "8")
	got := e.cmd(t, b, cfgZH, s, "!sche add 每周五 17:00 AI：总结本周群里讨论的问题")
	if !strings.Contains(got, "由 AI 按你的要求撰写") {
		t.Fatalf("zh add reply %q", got)
	}
	for _, line := range []string{"!sche add every day 8:00 ai: today's weather and a motivational line", "!sche add tomorrow 9am AI: plan my day",
		"!sche add in 2 hours ai：stretch ideas"} {
		if got := e.cmd(t, b, cfgEN, s, line); !strings.Contains(got, "the AI writes this reminder") {
			t.Errorf("%q: %q", line, got)
		}
	}
	r := e.tool(t, b, cfgEN, s, schenotify.ToolSchedule, map[string]any{"message": "a haiku about Monday", "delay": "1h", "ai": true})
	if r["status"] != "ok" || r["kind"] != "ai" {
		t.Fatalf("tool result %v", r)
	}
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "ai is a word here", "delay": "2h"})
	list := e.tool(t, b, cfgEN, s, schenotify.ToolList, map[string]any{})
	kinds := map[string]any{}
	for _, it := range list["reminders"].([]any) {
		m := it.(map[string]any)
		kinds[m["message"].(string)] = m["kind"]
	}
	want := map[string]any{"总结本周群里讨论的问题": "ai", "a haiku about Monday": "ai", "ai is a word here": nil,
		"today's weather and a motivational line": "ai", "plan my day": "ai", "stretch ideas": "ai"}
	for msg, k := range want {
		if kinds[msg] != k {
			t.Errorf("kind of %q = %v, want %v (all: %v)", msg, kinds[msg], k, kinds)
		}
	}
	// Refusals change nothing.
	before := len(e.reminderKeys(t, scopeOf(b)))
	if got := e.cmd(t, b, cfgEN, s, "!sche add in 1h ai:"); !strings.Contains(got, "What should the AI write?") {
		t.Errorf("empty prompt: %q", got)
	}
	if got := e.cmd(t, b, cfgBudget(0), s, "!sche add in 1h ai: weather"); !strings.Contains(got, "turned off") {
		t.Errorf("form off: %q", got)
	}
	if r := e.tool(t, b, cfgBudget(0), s, schenotify.ToolSchedule, map[string]any{"message": "weather", "delay": "1h", "ai": true}); r["code"] != "ai_disabled" {
		t.Errorf("tool with the form off: %v", r)
	}
	if r := e.tool(t, b, cfgEN, s, schenotify.ToolSchedule, map[string]any{"message": "weather", "delay": "1h", "ai": "yes"}); r["code"] != "invalid_param" {
		t.Errorf("ai not a boolean: %v", r)
	}
	if after := len(e.reminderKeys(t, scopeOf(b))); after != before {
		t.Errorf("refused adds changed the reminders: %d -> %d", before, after)
	}
}

// When the LLM fails, times out or the host has no model, the fallback
// is delivered instead (once, in the installation's language, naming the
// reminder), and nothing of the prompt reaches the logs.
func TestAIReminderFallback(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, cfg string
		answer    func(wire.InvokeLLM) bustest.HostReply
		want      string
	}{
		{"failure", cfgEN, func(wire.InvokeLLM) bustest.HostReply {
			return bustest.HostReply{Err: wire.Errorf(wire.ErrInternal, "the LLM call failed")}
		}, "the AI did not answer this time"},
		{"no model", cfgEN, bustest.NoLLMModel, "no AI model is set up"},
		{"timeout", cfgEN, func(wire.InvokeLLM) bustest.HostReply { return bustest.HostReply{Drop: true} }, "the AI did not answer this time"},
		{"empty answer", cfgEN, func(wire.InvokeLLM) bustest.HostReply {
			return bustest.HostReply{Data: wire.LLMAnswer{Text: "  ", Model: "m"}}
		}, "the AI did not answer this time"},
		{"chinese", cfgZH, bustest.NoLLMModel, "没有配置 AI 模型"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := testConfig()
			cfg.LLMTimeout = 2 * time.Second
			in := e.start(t, cfg, nil, nil, nil)
			e.host.AnswerLLM(c.answer)
			b := bind("installation-a", 1)
			s := sess("bot", "person", "9")
			T := nextSecond().Add(2 * time.Second)
			id := e.schedule(t, b, c.cfg, s, map[string]any{"message": "marker-prompt-42", "time_str": rfc(T), "ai": true})
			calls := e.host.wait(t, 1, 15*time.Second)
			text := sentText(calls[0])
			if !strings.Contains(text, c.want) || !strings.Contains(text, id) || !strings.Contains(text, "marker-prompt-42") || !strings.HasPrefix(text, "[Notify] ") {
				t.Fatalf("fallback %q, want it to say %q and name %s", text, c.want, id)
			}
			bustest.EventuallyWithin(t, 5*time.Second, "one-shot finished", func() bool { return len(e.reminderKeys(t, scopeOf(b))) == 0 })
			if n := len(e.host.sends()); n != 1 {
				t.Fatalf("%d sends, want 1", n)
			}
			if n := len(e.host.llmCalls()); n != 1 {
				t.Errorf("%d invoke_llm calls, want 1", n)
			}
			if strings.Contains(in.logs.String(), "marker-prompt-42") {
				t.Errorf("the prompt reached the logs:\n%s", in.logs.String())
			}
			if got := in.counter(t, "schenotify_deliveries_total", "outcome", "ai_fallback"); got != 1 {
				t.Errorf("ai_fallback deliveries %v, want 1", got)
			}
		})
	}
}

// The budget: ai_calls_per_day AI-written deliveries a day; beyond it the
// fallback says why and the LLM is not asked; the count survives a
// restart of the service.
func TestAIReminderBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "10")
	cfg := cfgBudget(2)
	T := nextSecond().Add(2 * time.Second)
	for _, p := range []string{"one", "two", "three"} {
		e.schedule(t, b, cfg, s, map[string]any{"message": "prompt " + p, "time_str": rfc(T), "ai": true})
	}
	calls := e.host.wait(t, 3, 15*time.Second)
	answered, over := 0, 0
	for _, c := range calls {
		switch {
		case strings.HasPrefix(sentText(c), "[Notify] LLM: prompt "):
			answered++
		case strings.Contains(sentText(c), "today's 2 AI-written reminders of this bot are used up"):
			over++
		default:
			t.Errorf("unexpected delivery %q", sentText(c))
		}
	}
	if answered != 2 || over != 1 || len(e.host.llmCalls()) != 2 {
		t.Fatalf("answered %d, over budget %d, invoke_llm %d; want 2, 1, 2", answered, over, len(e.host.llmCalls()))
	}
	// A restarted service keeps the day's count.
	first.stop()
	e.start(t, testConfig(), nil, nil, nil)
	T2 := nextSecond().Add(2 * time.Second)
	e.schedule(t, b, cfg, s, map[string]any{"message": "prompt four", "time_str": rfc(T2), "ai": true})
	calls = e.host.wait(t, 4, 15*time.Second)
	if got := sentText(calls[3]); !strings.Contains(got, "used up") {
		t.Fatalf("after the restart: %q", got)
	}
	if n := len(e.host.llmCalls()); n != 2 {
		t.Fatalf("%d invoke_llm calls after the restart, want still 2", n)
	}
	// Another installation has its own budget.
	other := bind("installation-b", 1)
	e.schedule(t, other, cfg, s, map[string]any{"message": "prompt five", "time_str": rfc(nextSecond().Add(2 * time.Second)), "ai": true})
	calls = e.host.wait(t, 5, 15*time.Second)
	if got := sentText(calls[4]); got != "[Notify] LLM: prompt five" {
		t.Fatalf("other installation: %q", got)
	}
}

// A failed send of an AI-written delivery is retried with the same
// idempotency key and charged to the budget once.
func TestAIReminderRetryChargedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "11")
	var mu sync.Mutex
	failed := false
	e.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Action == wire.ActionInvokeLLM {
			return bustest.HostReply{Data: wire.LLMAnswer{Text: bustest.LLMAnswer(c.InvokeLLM()), Model: bustest.LLMModel}}
		}
		mu.Lock()
		defer mu.Unlock()
		if !failed {
			failed = true
			return bustest.HostReply{Err: wire.Errorf(wire.ErrInternal, "boom")}
		}
		return bustest.HostReply{}
	})
	T := nextSecond().Add(2 * time.Second)
	e.schedule(t, b, cfgBudget(1), s, map[string]any{"message": "retry me", "time_str": rfc(T), "ai": true})
	calls := e.host.wait(t, 2, 15*time.Second)
	if calls[0].IdempotencyKey != calls[1].IdempotencyKey {
		t.Fatalf("keys differ: %q %q", calls[0].IdempotencyKey, calls[1].IdempotencyKey)
	}
	if got := sentText(calls[1]); got != "[Notify] LLM: retry me" {
		t.Fatalf("retried delivery %q, want the answer (one charge of a budget of 1)", got)
	}
	bustest.EventuallyWithin(t, 5*time.Second, "one-shot finished", func() bool { return len(e.reminderKeys(t, scopeOf(b))) == 0 })
	if n := len(e.host.sends()); n != 2 {
		t.Fatalf("%d sends, want 2", n)
	}
}

// An AI-written reminder the platform refused waits for the chat's next
// message like fixed text, and is then sent as an answer again (never its
// prompt), under the refused attempt's key.
func TestAIReminderWaitsForNextMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	var refuse atomic.Bool
	refuse.Store(true)
	e.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Action == wire.ActionInvokeLLM {
			return bustest.HostReply{Data: wire.LLMAnswer{Text: bustest.LLMAnswer(c.InvokeLLM()), Model: bustest.LLMModel}}
		}
		if refuse.Load() {
			return bustest.HostReply{Err: &wire.Error{Code: 400, Word: "bad_request", Reason: schenotify.ReasonNotPermitted, Message: "the platform refused"}}
		}
		return bustest.HostReply{}
	})
	b := bind("installation-a", 1)
	s := sess("bot", "person", "12")
	id := e.schedule(t, b, cfgEN, s, map[string]any{"message": "write me a hello", "time_str": rfc(nextSecond().Add(2 * time.Second)), "ai": true})
	first := e.host.wait(t, 1, 10*time.Second)[0]
	bustest.EventuallyWithin(t, 5*time.Second, "waiting state", func() bool {
		r := e.record(t, scopeOf(b), id)
		return r != nil && r.State == schenotify.StateWaiting
	})
	refuse.Store(false)
	e.message(t, b, "person", "12")
	calls := e.host.wait(t, 2, 10*time.Second)
	if calls[1].IdempotencyKey != first.IdempotencyKey || sentText(calls[1]) != "[Notify] LLM: write me a hello" {
		t.Fatalf("next-message send %q key %q (first key %q)", sentText(calls[1]), calls[1].IdempotencyKey, first.IdempotencyKey)
	}
	bustest.EventuallyWithin(t, 5*time.Second, "record gone", func() bool { return e.record(t, scopeOf(b), id) == nil })
}

// A snoozed AI-written reminder stays AI-written: the copy the snooze sets
// after the delivery asks the LLM again at its own due second.
func TestAIReminderSnoozeStaysAI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "13")
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "a fresh joke", "time_str": rfc(nextSecond().Add(2 * time.Second)), "ai": true})
	e.host.wait(t, 1, 10*time.Second)
	bustest.EventuallyWithin(t, 5*time.Second, "one-shot finished", func() bool { return len(e.reminderKeys(t, scopeOf(b))) == 0 })
	if got := e.cmd(t, b, cfgEN, s, "!sche snooze 2s"); !strings.Contains(got, "a fresh joke") {
		t.Fatalf("snooze reply %q", got)
	}
	if got := e.cmd(t, b, cfgEN, s, "!sche"); !strings.Contains(got, "(AI) a fresh joke") {
		t.Fatalf("list after the snooze %q", got)
	}
	calls := e.host.wait(t, 2, 10*time.Second)
	if got := sentText(calls[1]); got != "[Notify] LLM: a fresh joke" {
		t.Fatalf("snoozed delivery %q", got)
	}
	if n := len(e.host.llmCalls()); n != 2 {
		t.Fatalf("%d invoke_llm calls, want 2", n)
	}
}

// A retried AI-written delivery sends the answer of its first attempt:
// the LLM, whose every answer differs, is asked once, and both sends carry
// the same text under the same idempotency key.
func TestAIReminderRetrySendsFirstAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "12")
	var mu sync.Mutex
	asked, failed := 0, false
	e.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		mu.Lock()
		defer mu.Unlock()
		if c.Action == wire.ActionInvokeLLM {
			asked++
			return bustest.HostReply{Data: wire.LLMAnswer{Text: "answer " + strconv.Itoa(asked), Model: bustest.LLMModel}}
		}
		if !failed {
			failed = true
			return bustest.HostReply{Err: wire.Errorf(wire.ErrInternal, "boom")}
		}
		return bustest.HostReply{}
	})
	T := nextSecond().Add(2 * time.Second)
	e.schedule(t, b, cfgBudget(5), s, map[string]any{"message": "a different line each time", "time_str": rfc(T), "ai": true})
	calls := e.host.wait(t, 2, 15*time.Second)
	bustest.EventuallyWithin(t, 5*time.Second, "one-shot finished", func() bool { return len(e.reminderKeys(t, scopeOf(b))) == 0 })
	if n := len(e.host.llmCalls()); n != 1 {
		t.Fatalf("%d invoke_llm calls for one occurrence, want 1", n)
	}
	if calls[0].IdempotencyKey != calls[1].IdempotencyKey {
		t.Fatalf("keys differ: %q %q", calls[0].IdempotencyKey, calls[1].IdempotencyKey)
	}
	if a, b := sentText(calls[0]), sentText(calls[1]); a != "[Notify] answer 1" || b != a {
		t.Fatalf("first send %q, retry %q; want the first answer twice", a, b)
	}
	if n := len(e.host.sends()); n != 2 {
		t.Fatalf("%d sends, want 2", n)
	}
}
