package bustest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// WaitTimeout is how long Eventually waits: long enough for a loaded CI
// machine running the suite with -race, where a JetStream round trip can
// take hundreds of milliseconds.
const WaitTimeout = 20 * time.Second

// Eventually polls cond every few milliseconds until it holds, and fails
// the test naming what was awaited after WaitTimeout.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, WaitTimeout, what, cond)
}

// EventuallyWithin is Eventually with its own timeout.
func EventuallyWithin(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Clock is a clock tests control, what the services take as
// bus.Deps.Clock: the wall clock plus an offset a test moves forward, or,
// once Set, a fixed time that moves only when the test moves it. The zero
// value is the wall clock.
type Clock struct {
	off   atomic.Int64 // added to the wall clock
	fixed atomic.Int64 // Unix ns of a fixed time; 0: running
}

// FixedClock returns a Clock standing at t.
func FixedClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// OffsetClock returns a Clock running d ahead of the wall clock (behind
// for a negative d).
func OffsetClock(d time.Duration) *Clock {
	c := &Clock{}
	c.Advance(d)
	return c
}

// Now returns the clock's time: the fixed time in UTC, or the wall clock
// plus the offset.
func (c *Clock) Now() time.Time {
	if ns := c.fixed.Load(); ns != 0 {
		return time.Unix(0, ns).UTC()
	}
	return time.Now().Add(time.Duration(c.off.Load()))
}

// Advance moves the clock forward by d (back for a negative d).
func (c *Clock) Advance(d time.Duration) {
	if c.fixed.Load() != 0 {
		c.fixed.Add(int64(d))
		return
	}
	c.off.Add(int64(d))
}

// Set stops the clock at t.
func (c *Clock) Set(t time.Time) { c.fixed.Store(t.UnixNano()) }

// Resume lets a stopped clock run again from where it stands, behind the
// wall clock by as long as it stood still. A test stops a service's clock
// (Set(time.Now())) while it prepares work due at a real instant, so that
// a loaded machine's slow preparation cannot make that instant past.
func (c *Clock) Resume() {
	ns := c.fixed.Load()
	if ns == 0 {
		return
	}
	c.off.Store(ns - time.Now().UnixNano())
	c.fixed.Store(0)
}

// LogBuffer collects log output from concurrent writers: pass it to
// slog.NewJSONHandler and read String after the fact.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Service is what Start runs: a service (or its bus.Runner).
type Service interface {
	Run(ctx context.Context) error
	Ready() bool
}

// Running is a service started by Start.
type Running struct {
	t        testing.TB
	svc      Service
	cancel   context.CancelFunc
	returned chan struct{} // closed when Run returned
	err      error         // Run's result, set before returned is closed
	once     sync.Once
}

// ReadyTimeout bounds how long Start waits for the service to be ready: a
// replica on a loaded three-node cluster may take tens of seconds to
// create its streams and consumers.
const ReadyTimeout = 60 * time.Second

// StopTimeout bounds how long Stop waits for Run to return.
const StopTimeout = 60 * time.Second

// Start runs svc on its own goroutine and waits until it is ready; the
// test's cleanup stops it (Stop). A Run that returns before it is ready
// fails the test with its error.
func Start(t testing.TB, svc Service) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{t: t, svc: svc, cancel: cancel, returned: make(chan struct{})}
	go func() {
		r.err = svc.Run(ctx)
		close(r.returned)
	}()
	t.Cleanup(func() { r.Stop() })
	deadline := time.Now().Add(ReadyTimeout)
	for !svc.Ready() {
		select {
		case <-r.returned:
			t.Fatalf("bustest: Run returned before the service was ready: %v", r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("bustest: service not ready in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return r
}

// Ready reports whether the service is ready.
func (r *Running) Ready() bool { return r.svc.Ready() }

// Done is closed once Run returned (on its own, or after Stop).
func (r *Running) Done() <-chan struct{} { return r.returned }

// Err returns Run's result once Done is closed; nil before.
func (r *Running) Err() error {
	select {
	case <-r.returned:
		return r.err
	default:
		return nil
	}
}

// Stop cancels Run's context and waits for Run to return, failing the
// test when it returns an error or does not return within StopTimeout. It
// is idempotent and returns Run's error.
func (r *Running) Stop() error {
	r.t.Helper()
	r.once.Do(func() {
		r.cancel()
		select {
		case <-r.returned:
			if r.err != nil {
				r.t.Errorf("bustest: Run returned %v", r.err)
			}
		case <-time.After(StopTimeout):
			r.t.Error("bustest: Run did not return")
		}
	})
	return r.Err()
}

// Attach publishes an attach of b for plugin and waits until the plugin's
// lifecycle consumer acknowledged it (WaitLifecycle).
func Attach(t testing.TB, js jetstream.JetStream, plugin string, b binding.Binding, config json.RawMessage, enabled bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := bus.PublishAttach(ctx, js, wire.Subjects{}, plugin, wire.Attach{Binding: b, Config: config, Enabled: enabled}, ""); err != nil {
		t.Fatalf("bustest: attach: %v", err)
	}
	WaitLifecycle(t, js, wire.Subjects{}, plugin, WaitTimeout)
}

// EnsureAttached attaches b (enabled, with config) for plugin unless an
// attach of its scope was already published, and then waits as Attach
// does: the runners serve no invocation on a scope no attach has reached
// (403 not_attached). Test helpers that invoke call it first, so a test
// that attaches on purpose (disabled, another revision) keeps its own.
// With several replicas, wait for each one's view (WaitAuthority).
func EnsureAttached(t testing.TB, js jetstream.JetStream, plugin string, b binding.Binding, config json.RawMessage) {
	t.Helper()
	subject := wire.Subjects{}.Lifecycle(plugin, wire.LifecycleAttach, bus.ScopeOf(b))
	var err error
	// JetStream may be electing a leader (cluster tests): retry a while
	for deadline := time.Now().Add(WaitTimeout); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var st jetstream.Stream
		if st, err = js.Stream(ctx, wire.LifecycleStream); err == nil {
			_, err = st.GetLastMsgForSubject(ctx, subject)
		}
		cancel()
		if err == nil {
			return
		}
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bustest: look up attach: %v", err)
		}
	}
	if len(config) == 0 {
		config = json.RawMessage(`{}`)
	}
	Attach(t, js, plugin, b, config, true)
}

// Revoke publishes a revoke of b for plugin and waits until the plugin's
// lifecycle consumer acknowledged it.
func Revoke(t testing.TB, js jetstream.JetStream, plugin string, b binding.Binding, reason string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := bus.PublishRevoke(ctx, js, wire.Subjects{}, plugin, wire.Revoke{Binding: b, Reason: reason}, ""); err != nil {
		t.Fatalf("bustest: revoke: %v", err)
	}
	WaitLifecycle(t, js, wire.Subjects{}, plugin, WaitTimeout)
}

// WaitAuthority waits until the authority view of r holds an entry for sc
// that satisfies cond (nil: any entry) and returns it. A view is per
// replica: this is the replica that serves r's next invocation.
func WaitAuthority(t testing.TB, r *bus.Runner, sc binding.Scope, cond func(bus.Authority) bool) bus.Authority {
	t.Helper()
	var a bus.Authority
	Eventually(t, "authority of "+sc.String(), func() bool {
		var ok bool
		a, ok = r.View().Lookup(sc)
		return ok && (cond == nil || cond(a))
	})
	return a
}

// WaitStored waits until the stored authority of sc (the record, not a
// view) satisfies cond and returns it; cond sees nil while there is none.
func WaitStored(t testing.TB, r *bus.Runner, sc binding.Scope, cond func(*bus.Authority) bool) *bus.Authority {
	t.Helper()
	var a *bus.Authority
	Eventually(t, "stored authority of "+sc.String(), func() bool {
		var err error
		a, err = r.Authority(context.Background(), sc)
		return err == nil && cond(a)
	})
	return a
}
