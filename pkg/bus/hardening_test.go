package bus_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// TestInvocationCannotLockAuthority is issue 19's authority item: an
// invocation carrying revision 2^63-1 moved the authority there, after
// which no binding was newer and the installation stayed refused until a
// reinstall. An invocation may now lead the newest attach by at most
// bus.MaxInvocationLead; the attaches that follow are still applied.
func TestInvocationCannotLockAuthority(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls)}, bus.Deps{})
	h.manualAttach = true // probes scopes never attached

	for _, tc := range []struct {
		name     string
		gen, rev int64
	}{
		{"revision", 1, math.MaxInt64},
		{"generation", math.MaxInt64, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := "n-" + tc.name
			b1 := bindingFor("i", "w", inst, 1, 1)
			sc := bus.ScopeOf(b1)
			h.attach(b1, true, `{}`)
			h.waitAuthority(sc, func(a *bus.Authority) bool { return a != nil && a.State == bus.StateActive })

			far := bindingFor("i", "w", inst, tc.gen, tc.rev)
			before := calls.Load()
			_, err := h.command(far, "far-"+tc.name)
			var be *wire.Error
			if !errors.Is(err, wire.ErrBindingRefused) || !errors.As(err, &be) || be.Reason != "binding_too_far_ahead" {
				t.Fatalf("invocation with (%d, %d): %v, want 403 binding_too_far_ahead", tc.gen, tc.rev, err)
			}
			if calls.Load() != before {
				t.Fatal("the refused invocation reached the handler")
			}
			// the next real revision, by attach and by invocation, is served
			b2 := bindingFor("i", "w", inst, 1, 2)
			if _, err := h.command(b2, "next-"+tc.name); err != nil {
				t.Fatalf("revision 2 after the far invocation: %v", err)
			}
			b3 := bindingFor("i", "w", inst, 1, 3)
			h.attach(b3, true, `{}`)
			a := h.waitAuthority(sc, func(a *bus.Authority) bool { return a.Binding == b3 })
			if a.State != bus.StateActive {
				t.Fatalf("after the attach of revision 3: %+v", a)
			}
			if _, err := h.command(b3, "three-"+tc.name); err != nil {
				t.Fatalf("revision 3: %v", err)
			}
		})
	}

	t.Run("no record", func(t *testing.T) {
		// an invocation never creates an authority, far or near
		for _, rev := range []int64{math.MaxInt64, 1} {
			b := bindingFor("i", "w", "fresh", 1, rev)
			if _, err := h.command(b, fmt.Sprintf("fresh-%d", rev)); !errors.Is(err, wire.ErrNotAttached) {
				t.Fatalf("first invocation with revision %d: %v, want 403 not_attached", rev, err)
			}
		}
		b1 := bindingFor("i", "w", "fresh", 1, 1)
		h.install(b1)
		// within the lead of the attach an invocation still moves the
		// authority ahead
		near := bindingFor("i", "w", "fresh", 1, 1+bus.MaxInvocationLead)
		if _, err := h.command(near, "fresh-near"); err != nil {
			t.Fatalf("invocation %d ahead: %v", bus.MaxInvocationLead, err)
		}
		h.waitAuthority(bus.ScopeOf(b1), func(a *bus.Authority) bool { return a.Binding == near })
	})
}

// TestLifecycleKeepsOnlyTheNewestAttach is issue 19's lifecycle item: the
// stream kept every attach body (with its GitHub token) for 7 days. Now it
// keeps one message per subject, for at most 72 h, and the service still
// applies the newest attach.
func TestLifecycleKeepsOnlyTheNewestAttach(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls)}, bus.Deps{})
	ctx := context.Background()
	var b binding.Binding
	for rev := int64(1); rev <= 5; rev++ {
		b = bindingFor("i", "w", "kept", 1, rev)
		h.attach(b, true, fmt.Sprintf(`{"token":"secret-%d"}`, rev))
	}
	h.waitAuthority(bus.ScopeOf(b), func(a *bus.Authority) bool { return a != nil && a.Binding == b })
	s, err := h.js.Stream(ctx, wire.LifecycleStream)
	if err != nil {
		t.Fatal(err)
	}
	subject := wire.Subjects{}.Lifecycle(plugin, wire.LifecycleAttach, bus.ScopeOf(b))
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects[subject]; n != 1 {
		t.Fatalf("attaches kept for one installation: %d, want 1", n)
	}
	if info.Config.MaxAge > 72*time.Hour || info.Config.MaxMsgsPerSubject != 1 {
		t.Fatalf("lifecycle stream keeps %v and %d per subject, want <= 72h and 1", info.Config.MaxAge, info.Config.MaxMsgsPerSubject)
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil || !strings.Contains(string(m.Data), "secret-5") {
		t.Fatalf("the kept attach is not the newest: %v", err)
	}
}
