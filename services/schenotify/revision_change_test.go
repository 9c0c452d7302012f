package schenotify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// Issue 32 D2: a reminder whose send meets a change of the installation's
// revision (a config save restarts LangBot's worker with revision + 1) is
// sent with the current binding, once, and a 403 of the superseded
// revision does not park it for good.

// configSave publishes the attach of b, as the restarted worker does, and
// waits (without testing.T: it runs inside a delivery's hook) until the
// service's lifecycle consumer has applied it, transition hook included.
func configSave(js jetstream.JetStream, b binding.Binding) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seq, err := bus.PublishAttach(ctx, js, wire.Subjects{}, schenotify.Plugin,
		wire.Attach{Binding: b, Config: json.RawMessage(cfgEN), Enabled: true}, "")
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		c, err := js.Consumer(ctx, wire.LifecycleStream, bus.LifecycleConsumer(schenotify.Plugin))
		if err == nil {
			if info, err := c.Info(ctx); err == nil && info.AckFloor.Stream >= seq {
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("attach of revision %d not applied: %w", b.RuntimeRevision, ctx.Err())
}

// refuseAllBut answers send_message as LangBot's worker of binding cur
// does: 403 binding_refused for any other binding. The first send fails
// with 500 when fail is set, so the reminder is retrying.
func refuseAllBut(cur binding.Binding, fail bool) func(bustest.HostCall) hostAction {
	var n atomic.Int32
	return func(c bustest.HostCall) hostAction {
		if n.Add(1) == 1 && fail {
			return hostAction{Err: &wire.Error{Code: 500, Word: "internal", Message: "host action failed"}}
		}
		if c.Request.Binding != cur {
			return hostAction{Err: &wire.Error{Code: 403, Word: "binding_refused", Message: "binding is not this worker's"}}
		}
		return hostAction{}
	}
}

// TestRetryAfterConfigSaveSendsWithCurrentBinding: the reminder's first
// try fails (500); while its retry is being claimed, a config save
// supersedes revision 1. The retry went out with the binding it had read,
// revision 1, and LangBot's new worker refused it: the send is repeated
// with revision 2 and delivered once, instead of the reminder being parked
// (before: paused for good, since the authority had already moved on and
// nothing would resume it).
func TestRetryAfterConfigSaveSendsWithCurrentBinding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := e.start(t, testConfig(), nil, nil, nil)
	b1, b2 := bind("installation-d2", 1), bind("installation-d2", 2)
	e.host.respond(refuseAllBut(b2, true))
	var claims atomic.Int32
	var hookErr error
	var once sync.Once
	in.svc.SetBeforeClaim(func(ctx context.Context, sc binding.Scope, id string) {
		if claims.Add(1) == 2 { // the retry: its authority (revision 1) is read
			once.Do(func() { hookErr = configSave(e.js, b2) })
		}
	})
	id := e.schedule(t, b1, cfgEN, sess("bot", "person", "7"), map[string]any{"message": "d2", "time_str": rfc(nextSecond())})
	bustest.EventuallyWithin(t, 30*time.Second, "the reminder delivered", func() bool {
		return e.record(t, scopeOf(b1), id) == nil
	})
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	var delivered []bustest.HostCall
	for _, c := range e.host.sends() {
		if c.Request.Binding == b2 {
			delivered = append(delivered, c)
		}
	}
	if len(delivered) != 1 || sentText(delivered[0]) == "" {
		t.Fatalf("sends with revision 2: %+v, want exactly one", delivered)
	}
	for _, c := range e.host.sends() {
		if c.IdempotencyKey != delivered[0].IdempotencyKey {
			t.Fatalf("a try with another idempotency key: %q vs %q", c.IdempotencyKey, delivered[0].IdempotencyKey)
		}
	}
	if a, _ := in.svc.Runner().Authority(context.Background(), scopeOf(b2)); a == nil || a.State != bus.StateActive || a.Binding != b2 {
		t.Fatalf("authority after the save: %+v", a)
	}
}

// TestRefusalRacingConfigSaveDoesNotPark: the send of revision 1 is
// refused while revision 1 is still the installation's binding (so it is
// marked superseded and the reminder is paused), and the new worker's
// attach lands between the refusal and the pause: the resume that attach
// runs finds the reminder still sending. The reminder is resumed anyway
// and delivered with revision 2.
func TestRefusalRacingConfigSaveDoesNotPark(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := e.start(t, testConfig(), nil, nil, nil)
	b1, b2 := bind("installation-race", 1), bind("installation-race", 2)
	e.host.respond(refuseAllBut(b2, false))
	var hookErr error
	var once sync.Once
	in.svc.SetAfterSend(func(ctx context.Context, sc binding.Scope, id string) {
		once.Do(func() { hookErr = configSave(e.js, b2) })
	})
	id := e.schedule(t, b1, cfgEN, sess("bot", "person", "8"), map[string]any{"message": "race", "time_str": rfc(nextSecond())})
	bustest.EventuallyWithin(t, 30*time.Second, "the reminder delivered", func() bool {
		return e.record(t, scopeOf(b1), id) == nil
	})
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	n := 0
	for _, c := range e.host.sends() {
		if c.Request.Binding == b2 {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("sends with revision 2: %d, want 1", n)
	}
}
