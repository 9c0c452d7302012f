package bus_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Issue 26's service-side authority rules, each probed as a tenant with
// its own credential could: no value it sends locks its installation out
// of its own worker's reach, an invented scope gets nothing, and a host
// refusal counts only for the binding it refused.

// TestAttachIsTheAuthorityOfRecord: an attach at revision 2^63-1 with
// enabled=false, and invocations ahead of the attach, leave the
// installation refused only until its real worker's next attach (the
// hourly refresh), which is applied whatever binding it carries.
func TestAttachIsTheAuthorityOfRecord(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls)}, bus.Deps{})
	h.manualAttach = true // probes scopes never attached
	real := bindingFor("i", "w", "victim", 1, 5)
	sc := bus.ScopeOf(real)
	h.install(real)

	t.Run("absurd attach", func(t *testing.T) {
		for _, absurd := range []binding.Binding{
			bindingFor("i", "w", "victim", 1, math.MaxInt64),
			bindingFor("i", "w", "victim", math.MaxInt64, math.MaxInt64),
		} {
			bustest.Attach(t, h.js, plugin, absurd, []byte(`{}`), false)
			h.waitAuthority(sc, func(a *bus.Authority) bool { return a.Binding == absurd && a.State == bus.StateDisabled })
			if _, err := h.command(real, fmt.Sprintf("refused-%d", absurd.PlacementGeneration)); !errors.Is(err, wire.ErrBindingRefused) {
				t.Fatalf("before the real worker's next attach: %v, want 403", err)
			}
			// the real worker refreshes its attach with its own binding
			bustest.Attach(t, h.js, plugin, real, []byte(`{}`), true)
			a := h.waitAuthority(sc, func(a *bus.Authority) bool { return a.Binding == real })
			if a.State != bus.StateActive || a.Attached != real {
				t.Fatalf("after the real attach: %+v", a)
			}
			if _, err := h.command(real, fmt.Sprintf("back-%d", absurd.PlacementGeneration)); err != nil {
				t.Fatalf("the real worker after its attach: %v", err)
			}
		}
	})

	t.Run("invocations ahead", func(t *testing.T) {
		before := calls.Load()
		far := bindingFor("i", "w", "victim", 1, 5+1024)
		if _, err := h.command(far, "far"); !errors.Is(err, wire.ErrBindingRefused) {
			t.Fatalf("1024 ahead: %v, want 403", err)
		}
		if calls.Load() != before {
			t.Fatal("the refused invocation reached the handler")
		}
		if a, err := h.runner.Authority(context.Background(), sc); err != nil || a.Binding != real {
			t.Fatalf("the refused invocation moved the authority: %+v %v", a, err)
		}
		// steps within the lead of the previous binding cannot ratchet:
		// the lead is measured from the attach
		top := bindingFor("i", "w", "victim", 1, 5+bus.MaxInvocationLead)
		if _, err := h.command(top, "top"); err != nil {
			t.Fatalf("at the lead: %v", err)
		}
		h.waitAuthority(sc, func(a *bus.Authority) bool { return a.Binding == top })
		var be *wire.Error
		if _, err := h.command(bindingFor("i", "w", "victim", 1, 6+bus.MaxInvocationLead), "past"); !errors.As(err, &be) || be.Reason != wire.ReasonTooFarAhead {
			t.Fatalf("one past the lead of the attach: %v, want 403 %s", err, wire.ReasonTooFarAhead)
		}
		if _, err := h.command(real, "real-refused"); !errors.Is(err, wire.ErrBindingRefused) {
			t.Fatalf("the real worker behind an invocation's lead: %v, want 403", err)
		}
		bustest.Attach(t, h.js, plugin, real, []byte(`{}`), true)
		h.waitAuthority(sc, func(a *bus.Authority) bool { return a.Binding == real && a.State == bus.StateActive })
		if _, err := h.command(real, "real-back"); err != nil {
			t.Fatalf("the real worker after its attach: %v", err)
		}
	})
}

// TestNotAttachedCreatesNothing: an invocation on a scope no attach has
// reached is answered 403 not_attached at once, from the dispatcher: it
// takes no worker and no place in the queue (an invented scope gets no
// fair share), and writes no authority or dedupe record.
func TestNotAttachedCreatesNothing(t *testing.T) {
	e := &effects{release: make(chan struct{})}
	h := newHarness(t, bus.RunnerConfig{Handlers: e.handlers(), Workers: 1, Queue: 1, ScopeQueue: 1}, bus.Deps{})
	h.manualAttach = true // probes scopes never attached
	own := bindingFor("i", "w", "own", 1, 1)
	h.install(own)
	// the one worker and the one queue place are taken by the tenant's own
	// installation
	results := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := h.command(own, fmt.Sprintf("own-%d", i), "slow")
			results <- err
		}()
	}
	bustest.Eventually(t, "the worker busy and the queue full", func() bool {
		n, _ := h.runner.Queued()
		return n == 1
	})
	for i := range 20 {
		made := bindingFor("i", "w", fmt.Sprintf("made-up-%d", i), 1, 1)
		_, err := h.command(made, fmt.Sprintf("m-%d", i), "add")
		if !errors.Is(err, wire.ErrNotAttached) {
			t.Fatalf("invented scope %d: %v, want 403 not_attached", i, err)
		}
		if a, err := h.runner.Authority(context.Background(), bus.ScopeOf(made)); err != nil || a != nil {
			t.Fatalf("invented scope %d has an authority: %+v %v", i, a, err)
		}
		if _, ok := h.runner.View().Lookup(bus.ScopeOf(made)); ok {
			t.Fatalf("invented scope %d is in the view", i)
		}
	}
	if _, installs := h.runner.Queued(); installs != 1 {
		t.Fatalf("installations holding pool places: %d, want 1 (the attached one)", installs)
	}
	if n := e.n.Load(); n != 0 {
		t.Fatalf("the handler ran %d effects for invented scopes", n)
	}
	ctx := context.Background()
	kv, err := h.js.KeyValue(ctx, bus.DedupeBucket(plugin))
	if err != nil {
		t.Fatal(err)
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range lister.Keys() {
		if sc, _, _, err := bus.ParseKey(k); err == nil && sc.Installation() != "own" {
			t.Errorf("dedupe record of an invented scope: %s", k)
		}
	}
	close(e.release)
	for range 2 {
		if err := <-results; err != nil {
			t.Fatalf("the attached installation's request: %v", err)
		}
	}
}

// TestHostRefusalCountsOnlyForItsBinding: a 403 to a host action sent with
// a binding the authority no longer holds changes nothing and the action
// is sent again with the current binding; a 403 to the current binding
// marks it superseded.
func TestHostRefusalCountsOnlyForItsBinding(t *testing.T) {
	h := newHarness(t, bus.RunnerConfig{Handlers: echoHandlers()}, bus.Deps{})
	host := bustest.NewHost(t, h.srv.Conn(t), wire.Subjects{})
	old := bindingFor("i", "w", "h", 1, 1)
	cur := bindingFor("i", "w", "h", 1, 2)
	sc := bus.ScopeOf(cur)
	h.install(old)
	h.install(cur) // a config save: the worker of revision 2 serves now
	// the tenant's worker refuses every binding but its own
	host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Request.Binding != cur {
			return bustest.HostReply{Err: wire.WithReason(wire.ErrBindingRefused, "", "binding is not this worker's")}
		}
		return bustest.HostReply{}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msg := wire.SendMessage{BotUUID: "bot", TargetType: "person", TargetID: "u1", MessageChain: wire.Plain("hi")}
	// a sender that still holds the old binding (a retry created before
	// the save)
	if err := h.runner.Host().SendMessage(ctx, old, msg, "k-"+sc.String()); err != nil {
		t.Fatalf("send with the superseded binding: %v, want it resent with the current one", err)
	}
	sends := host.Sends()
	if len(sends) != 2 || sends[0].Request.Binding != old || sends[1].Request.Binding != cur ||
		sends[0].IdempotencyKey != sends[1].IdempotencyKey {
		t.Fatalf("host saw %d sends: %+v", len(sends), sends)
	}
	if a, _ := h.runner.Authority(ctx, sc); a.State != bus.StateActive || a.Binding != cur {
		t.Fatalf("a refusal of the old binding touched the current authority: %+v", a)
	}

	// the tenant's worker refuses the current binding: superseded
	host.Respond(func(bustest.HostCall) bustest.HostReply {
		return bustest.HostReply{Err: wire.Errorf(wire.ErrBindingRefused, "stale")}
	})
	if err := h.runner.Host().SendMessage(ctx, cur, msg, "k2-"+sc.String()); !errors.Is(err, wire.ErrBindingRefused) {
		t.Fatalf("refused send: %v", err)
	}
	if a, _ := h.runner.Authority(ctx, sc); a.State != bus.StateSuperseded || a.Binding != cur {
		t.Fatalf("after the refusal of the current binding: %+v", a)
	}
	if n := len(host.Sends()); n != 3 {
		t.Fatalf("a refusal of the current binding was retried: %d sends, want 3", n)
	}
}
