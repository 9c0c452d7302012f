package githubkit_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// flood posts n validly signed distinct push deliveries to hook id (the
// first numbered from) and waits until the consumer handled them all.
func (e *hookEnv) flood(id, secret string, from, n int) {
	e.t.Helper()
	for i := from; i < from+n; i++ {
		d := delivery{id: id, event: "push", guid: fmt.Sprintf("flood-%d", i), body: pushBody(fmt.Sprintf("%040x", i+1)), secret: secret}
		if code, why := e.post(d); code != http.StatusAccepted {
			e.t.Fatalf("delivery %d: %d %s", i, code, why)
		}
	}
	e.idle()
}

// texts returns the texts of the messages sent so far.
func (e *hookEnv) texts() []string {
	var out []string
	for _, s := range e.sends() {
		out = append(out, s.SendMessage().MessageChain[0].Text)
	}
	return out
}

// TestWebhookPushBudgetPerChat: 200 validly signed distinct deliveries
// within a second become the chat's burst of messages (10 by default) and,
// a minute later, one message counting the rest ("…and 190 more events"),
// not 200 messages (issue 33: before, 200 messages in one second).
func TestWebhookPushBudgetPerChat(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{Pushes: githubkit.PushBudget{Tick: 10 * time.Millisecond}})
	e.cmd(e.a, "sub "+hw+" push")
	id, secret := e.hook(hw)
	e.clock.Set(time.Now()) // the budget refills only when the test moves the clock
	start := time.Now()
	e.flood(id, secret, 0, 200)
	took := time.Since(start)
	sent := e.texts()
	t.Logf("200 deliveries in %v: %d messages before the summary", took.Round(time.Millisecond), len(sent))
	if len(sent) != 10 {
		t.Fatalf("200 deliveries sent %d messages at once; want the chat's burst, 10", len(sent))
	}
	e.clock.Advance(time.Minute)
	bustest.Eventually(t, "the held events' summary", func() bool { return len(e.sends()) == 11 })
	sum := e.texts()[10]
	if !strings.Contains(sum, "…and 190 more events") || !strings.Contains(sum, hw) {
		t.Fatalf("summary %q; want the repository and the 190 held events", sum)
	}
	// the budget refilled: the next delivery is pushed at once
	e.flood(id, secret, 200, 1)
	if got := e.texts(); len(got) != 12 || strings.Contains(got[11], "more events") {
		t.Fatalf("after the summary: %q", got[10:])
	}
}

// TestWebhookPushBudgetPerHook: one webhook's deliveries are bounded
// whatever the chats' budgets, and the summary speaks the installation's
// language.
func TestWebhookPushBudgetPerHook(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{Pushes: githubkit.PushBudget{ChatBurst: 1000, HookBurst: 3, Tick: 10 * time.Millisecond}})
	e.cmd(e.a, "sub "+hw+" push")
	id, secret := e.hook(hw)
	zh := *e.a
	zh.b.RuntimeRevision = 2
	zh.cfg = e.baseConfig("zh_Hans", "token-a", 120)
	e.attach(&zh, true)
	bustest.Eventually(t, "the zh_Hans config active", func() bool {
		a := e.authority(zh.sc)
		return a != nil && a.Binding.RuntimeRevision == 2
	})
	e.clock.Set(time.Now())
	e.flood(id, secret, 0, 20)
	if n := len(e.sends()); n != 3 {
		t.Fatalf("20 deliveries of one webhook sent %d messages; want its burst, 3", n)
	}
	e.clock.Advance(time.Minute)
	bustest.Eventually(t, "the held events' summary", func() bool { return len(e.sends()) == 4 })
	if sum := e.texts()[3]; !strings.Contains(sum, "另有 17 条事件") {
		t.Fatalf("zh_Hans summary %q", sum)
	}
}
