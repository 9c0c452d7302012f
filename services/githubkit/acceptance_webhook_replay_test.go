package githubkit_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// TestWebhookLateReplayChangesNothing: a captured body sent again after
// its body marker expired (10 min) is still refused before anything is
// written: under a new delivery id 409, under its own delivery id (an
// admin's redelivery) 200 duplicate, for as long as the recent set keeps
// the delivery (7 days, by the service clock); later it is a new delivery.
func TestWebhookLateReplayChangesNothing(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	e.clock.Set(t0)
	e.cmd(e.a, "sub "+hw+" push")
	id, secret := e.hook(hw)
	good := delivery{id: id, event: "push", guid: "1d6e6a7c-late-0001", body: pushBody(pushFullHead), secret: secret}
	if code, why := e.post(good); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	e.host.WaitSends(t, 1, bustest.WaitTimeout)
	e.idle()

	for _, c := range []struct {
		name  string
		later time.Duration
		d     delivery
		code  int
		why   string
	}{
		{"replay 20 min later", 20 * time.Minute, delivery{id: id, event: "push", guid: "1d6e6a7c-late-0002", body: good.body, secret: secret}, http.StatusConflict, "replay"},
		{"replay 3 days later", 72 * time.Hour, delivery{id: id, event: "push", guid: "1d6e6a7c-late-0003", body: good.body, secret: secret}, http.StatusConflict, "replay"},
		{"redelivery 3 days later", 72 * time.Hour, good, http.StatusOK, "duplicate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.clock.Set(t0.Add(c.later))
			expireBodyMarkers(e)
			before := e.state()
			code, why := e.post(c.d)
			if code != c.code || why != c.why {
				t.Fatalf("status %d %s, want %d %s", code, why, c.code, c.why)
			}
			e.idle()
			if after := e.state(); !sameState(before, after) {
				t.Fatalf("state changed: %v -> %v", before, after)
			}
		})
	}
	// past the recent set's 7 days the body is no longer known
	e.clock.Set(t0.Add(8 * 24 * time.Hour))
	if code, why := e.post(delivery{id: id, event: "push", guid: "1d6e6a7c-late-0004", body: good.body, secret: secret}); code != http.StatusAccepted {
		t.Fatalf("8 days later: %d %s", code, why)
	}
}

// expireBodyMarkers removes the receiver's body markers, as their TTL
// does after 10 min.
func expireBodyMarkers(e *hookEnv) {
	e.t.Helper()
	b := bus.DedupeBucket(githubkit.Plugin)
	kv, err := e.js.KeyValue(context.Background(), b)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, k := range e.keys(b) {
		if !strings.Contains(k, "."+githubkit.KindHookBody+".") {
			continue
		}
		if _, err := kv.Get(context.Background(), k); err != nil {
			continue // purged already
		}
		if err := kv.Purge(context.Background(), k); err != nil {
			e.t.Fatal(err)
		}
	}
}
