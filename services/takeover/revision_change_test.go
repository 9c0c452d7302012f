package takeover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestNoticeRetryAfterConfigSave (issues 26 and 32 D2, takeover's side):
// a user notice whose first send fails is retried in the background with
// the binding it was created under; a config save meanwhile makes LangBot's
// new worker refuse that binding (403). The retry is resent with the
// current binding and delivered, instead of being given up (before: the
// refusal of the old binding changed nothing, and every retry met it).
func TestNoticeRetryAfterConfigSave(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) {
		c.NoticeRetry = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}
	})
	b1 := newBinding("d2notice")
	b2 := b1
	b2.RuntimeRevision = 2
	cfg := `{"user_notice_on_takeover":"on","user_notice_on_release":"off"}`
	h.attach(b1, cfg, true)
	sc := bus.ScopeOf(b1)
	var first atomic.Bool
	var once sync.Once
	var saveErr error
	h.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Action != wire.ActionSendMessage {
			return bustest.HostReply{Data: map[string]any{"bot": wire.BotInfo{UUID: "bot-a", Name: "Bot"}}}
		}
		if first.CompareAndSwap(false, true) {
			// the first try fails while LangBot restarts the worker with
			// revision 2 (a config save)
			once.Do(func() { saveErr = configSave(h, b2, cfg) })
			return bustest.HostReply{Err: wire.Errorf(wire.ErrInternal, "worker restarting")}
		}
		if c.Request.Binding != b2 {
			return bustest.HostReply{Err: wire.Errorf(wire.ErrBindingRefused, "binding is not this worker's")}
		}
		return bustest.HostReply{}
	})
	h.takeOver(b1, cfg, "bot-a", 1)
	bustest.Eventually(t, "the notice delivered with revision 2", func() bool {
		for _, s := range h.host.Sends() {
			if s.Request.Binding == b2 && s.SendMessage().MessageChain[0].Text == "on" {
				return true
			}
		}
		return false
	})
	if saveErr != nil {
		t.Fatal(saveErr)
	}
	if a, _ := h.svc.Runner().Authority(context.Background(), sc); a == nil || a.State != bus.StateActive || a.Binding != b2 {
		t.Fatalf("authority after the save: %+v", a)
	}
}

// configSave publishes the attach of b and waits until the service stored
// it (without testing.T: it runs in the fake host's responder).
func configSave(h *harness, b binding.Binding, cfg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := bus.PublishAttach(ctx, h.js, wire.Subjects{}, takeover.Plugin, wire.Attach{Binding: b, Config: json.RawMessage(cfg), Enabled: true}, ""); err != nil {
		return err
	}
	for ctx.Err() == nil {
		if a, err := h.svc.Runner().Authority(ctx, bus.ScopeOf(b)); err == nil && a != nil && a.Binding == b && a.Active() {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("attach of revision %d not applied", b.RuntimeRevision)
}
