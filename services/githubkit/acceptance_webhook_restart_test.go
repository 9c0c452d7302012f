package githubkit_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// TestWebhookDeliverySurvivesRestart: a delivery answered 2xx is recorded
// durably before the answer. The instance that answered stops before it
// pushed (the host refuses its send), a new instance on the same NATS
// starts, and the delivery is pushed once.
func TestWebhookDeliverySurvivesRestart(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	e.cmd(e.a, "sub "+hw+" push")
	id, secret := e.hook(hw)
	var mu sync.Mutex
	refuse, accepted := true, 0
	e.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		mu.Lock()
		defer mu.Unlock()
		if refuse {
			return bustest.HostReply{Err: wire.Errorf(wire.ErrInternal, "down")}
		}
		accepted++
		return bustest.HostReply{}
	})
	d := delivery{id: id, event: "push", guid: "5f1c0d2e-restart", body: pushBody(pushFullHead), secret: secret}
	if code, why := e.post(d); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	e.host.WaitSends(t, 1, bustest.WaitTimeout) // refused: nothing pushed yet
	e.stopAll()
	mu.Lock()
	refuse = false
	mu.Unlock()
	tried := len(e.sends())

	e.start(githubkit.Config{WebhookURL: hookBase}, nil)
	sends := e.host.WaitSends(t, tried+1, 30*time.Second)
	e.idle()
	mu.Lock()
	defer mu.Unlock()
	if accepted != 1 {
		t.Fatalf("pushed %d times after the restart, want once", accepted)
	}
	last := sends[len(sends)-1]
	if !strings.Contains(last.IdempotencyKey, d.guid) || !strings.Contains(last.SendMessage().MessageChain[0].Text, "Make the greeting friendlier") {
		t.Fatalf("push after the restart: key %q, text %q", last.IdempotencyKey, last.SendMessage().MessageChain[0].Text)
	}
}
