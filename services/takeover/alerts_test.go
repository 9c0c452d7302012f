package takeover_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// TestPendingAlertGate is the pending gate alone: the rate limit
// (AlertInterval) has long passed, but the chat's first alert is not
// answered, so a repeated trigger sends no new alert; once the pending
// window (an hour) is over, a trigger alerts again, as alert 2 of the
// chat (no alert was raised in between).
func TestPendingAlertGate(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) { c.AlertInterval = time.Minute })
	b := newBinding("pending-gate")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900"]}`
	h.attach(b, cfg, true)
	sc, _ := b.Scope()
	sid := sidOf("bot-a", "person", "90")
	alerts := func() []bustest.HostCall { return alertsTo(h, b)["group:900"] }
	say := chatSayer(t, h, b, cfg, "90")
	say("help")
	say("thanks")
	alertsSettled(t, h)
	if got := len(alerts()); got != 1 {
		t.Fatalf("%d alerts after the first trigger, want 1", got)
	}

	h.clock.Advance(2 * time.Minute) // past the rate limit, within the pending window
	say("help, anyone?")
	say("hello?")
	alertsSettled(t, h)
	if got := len(alerts()); got != 1 {
		t.Fatalf("%d alerts: a repeated trigger of a pending chat alerted again after the rate limit passed", got)
	}

	h.clock.Advance(time.Hour) // the pending window is over
	say("help!")
	bustest.Eventually(t, "an alert after the pending window", func() bool { return len(alerts()) == 2 })
	say("still there?")
	alertsSettled(t, h)
	got := alerts()
	if len(got) != 2 {
		t.Fatalf("%d alerts after the pending window, want 2", len(got))
	}
	if want := "takeover:" + sc.String() + ":alert:" + sid + ":2:"; !strings.HasPrefix(got[1].IdempotencyKey, want) {
		t.Fatalf("the second alert's key %q, want prefix %q (alert 2 of the chat)", got[1].IdempotencyKey, want)
	}
	if text := got[1].SendMessage().MessageChain[0].Text; !strings.Contains(text, "help!") {
		t.Errorf("the second alert does not quote its trigger: %q", text)
	}
}

// chatSayer returns a function that sends a message into person chat lid
// of bot-a and waits until it is recorded: a chat's recordings are
// written in order, so by then the previous message's alert decision has
// been made and its job (if any) queued.
func chatSayer(t *testing.T, h *harness, b binding.Binding, cfg, lid string) func(text string) {
	sid := sidOf("bot-a", "person", lid)
	n := 0
	return func(text string) {
		t.Helper()
		n++
		h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", lid, lid, plain(text)))
		bustest.Eventually(t, "recorded", func() bool { return len(h.messages(b, cfg, sid).Messages) == n })
	}
}

// TestPendingAlertNotQueuedAgain: a repeated trigger of a pending chat
// queues no alert job at all. Before, the gate's "no change" was read as
// a raised alert and the job was published again under the same message
// id; only the timer stream's duplicate window (2 min) dropped it, so a
// trigger later than that sent the operator chats the same alert again.
// The test shortens the window to show it.
func TestPendingAlertNotQueuedAgain(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) { c.AlertInterval = time.Minute })
	b := newBinding("pending-requeue")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900"]}`
	h.attach(b, cfg, true)
	say := chatSayer(t, h, b, cfg, "91")
	say("help")
	bustest.Eventually(t, "the first alert", func() bool { return len(alertsTo(h, b)["group:900"]) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := h.js.Stream(ctx, store.TimerStream)
	if err != nil {
		t.Fatal(err)
	}
	scfg := st.CachedInfo().Config
	scfg.Duplicates = 100 * time.Millisecond
	if _, err := h.js.UpdateStream(ctx, scfg); err != nil {
		t.Fatal(err)
	}
	// the first job's message id leaves the server's duplicate window
	time.Sleep(300 * time.Millisecond)
	h.clock.Advance(2 * time.Minute) // past the rate limit, within the pending window
	say("help, anyone?")
	say("hello?") // recorded in order: the trigger's alert decision is made
	alertsSettled(t, h)
	if got := len(alertsTo(h, b)["group:900"]); got != 1 {
		t.Fatalf("%d alerts: a repeated trigger of a pending chat queued its alert again", got)
	}
}

// TestAlertDroppedAfterRetries: when the host refuses every send, an
// alert is tried once and once more per NoticeRetry delay in each
// operator chat, then dropped and counted in takeover_alert_failed_total;
// nothing is tried after that.
func TestAlertDroppedAfterRetries(t *testing.T) {
	retry := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
	h := newHarness(t, func(c *takeover.Config) { c.NoticeRetry = retry })
	b := newBinding("alert-dropped")
	h.attach(b, opConfig, true)
	h.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Action == wire.ActionSendMessage {
			return bustest.HostReply{Err: wire.Errorf(wire.ErrUnavailable, "down")}
		}
		return bustest.HostReply{}
	})
	if got := h.metric("takeover_alert_failed_total", nil); got != 0 {
		t.Fatalf("takeover_alert_failed_total = %v before any alert", got)
	}
	h.mustEvent(b, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "91", "91", plain("help")))
	bustest.Eventually(t, "the alert dropped", func() bool { return h.metric("takeover_alert_failed_total", nil) >= 1 })
	alertsSettled(t, h)
	tries := alertsTo(h, b)
	if len(tries) != 2 {
		t.Fatalf("alerts tried in %d operator chats, want 2", len(tries))
	}
	for chat, calls := range tries {
		if len(calls) != len(retry)+1 {
			t.Errorf("%s: %d tries, want %d (the first and one per retry delay)", chat, len(calls), len(retry)+1)
		}
		for _, c := range calls[1:] {
			if c.IdempotencyKey != calls[0].IdempotencyKey {
				t.Errorf("%s: retry key %q differs from %q", chat, c.IdempotencyKey, calls[0].IdempotencyKey)
			}
		}
	}
	if got := h.metric("takeover_alert_failed_total", nil); got != 1 {
		t.Fatalf("takeover_alert_failed_total = %v, want 1 (one alert dropped)", got)
	}
}
