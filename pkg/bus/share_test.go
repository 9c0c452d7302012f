package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// holdingHandlers serve commands of the installations in hold only when
// released (one receive on release per command), and record the order in
// which handlers start and end as events ("start a", "end a", "start b").
type holdingHandlers struct {
	release chan struct{}
	names   map[binding.Scope]string
	hold    map[binding.Scope]bool
	mu      sync.Mutex
	events  []string
	held    atomic.Int64
	ran     map[string]int // invocation id -> handler runs
}

func newHolding() *holdingHandlers {
	return &holdingHandlers{release: make(chan struct{}), names: map[binding.Scope]string{}, hold: map[binding.Scope]bool{}, ran: map[string]int{}}
}

func (hh *holdingHandlers) add(b binding.Binding, name string, hold bool) binding.Binding {
	sc, _ := b.Scope()
	hh.names[sc], hh.hold[sc] = name, hold
	return b
}

func (hh *holdingHandlers) record(ev, id string) {
	hh.mu.Lock()
	hh.events = append(hh.events, ev)
	if id != "" {
		hh.ran[id]++
	}
	hh.mu.Unlock()
}

func (hh *holdingHandlers) snapshot() []string {
	hh.mu.Lock()
	defer hh.mu.Unlock()
	return append([]string(nil), hh.events...)
}

func (hh *holdingHandlers) runs(id string) int {
	hh.mu.Lock()
	defer hh.mu.Unlock()
	return hh.ran[id]
}

func (hh *holdingHandlers) handlers() bus.Handlers {
	return bus.Handlers{
		Command: func(ctx context.Context, inv *bus.Invocation) (any, error) {
			name := hh.names[inv.Scope]
			hh.record("start "+name, inv.ID)
			if hh.hold[inv.Scope] {
				hh.held.Add(1)
				select {
				case <-hh.release:
				case <-ctx.Done():
				}
				hh.held.Add(-1)
			}
			hh.record("end "+name, "")
			return wire.CommandReply{Returns: []wire.Return{{Text: "ok"}}}, nil
		},
		// every command would leave a dedupe marker: a refused one must not
		Dedupe: func(*bus.Invocation) bool { return true },
	}
}

func waitQueued(t *testing.T, r *bus.Runner, jobs, scopes int) {
	t.Helper()
	bustest.EventuallyWithin(t, time.Minute, fmt.Sprintf("%d queued of %d installations", jobs, scopes), func() bool {
		j, s := r.Queued()
		return j == jobs && s == scopes
	})
}

// TestFloodingInstallationDoesNotDelayAnother is issue 19's shared-pool
// item at the runner, which every service's invocations go through:
// installation A floods a pool of 2 workers with 8 slow requests (2 run, 6
// wait); installation B's one request, queued behind all of them, is the
// next to start once one of A's completes. Before (one FIFO for all), B
// started only after A's whole backlog had been served.
func TestFloodingInstallationDoesNotDelayAnother(t *testing.T) {
	const workers, flood = 2, 8
	hh := newHolding()
	a := hh.add(bindingFor("i", "w", "a", 1, 1), "a", true)
	b := hh.add(bindingFor("i", "w", "b", 1, 1), "b", false)
	h := newHarness(t, bus.RunnerConfig{Workers: workers, Queue: 16, InvocationTimeout: 2 * time.Minute, Handlers: hh.handlers()}, bus.Deps{})
	h.attach(a, true, `{}`)
	h.attach(b, true, `{}`)
	h.waitLifecycleDrained()
	defer close(hh.release)

	var wg sync.WaitGroup
	var failed atomic.Int64
	call := func(bd binding.Binding, id string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.command(bd, id, "x"); err != nil {
				failed.Add(1)
				t.Errorf("%s: %v", id, err)
			}
		}()
	}
	for i := range flood {
		call(a, fmt.Sprintf("a%d", i))
	}
	bustest.EventuallyWithin(t, time.Minute, "A holds every worker", func() bool { return hh.held.Load() == workers })
	waitQueued(t, h.runner, flood-workers, 1)
	call(b, "b")
	waitQueued(t, h.runner, flood-workers+1, 2)

	hh.release <- struct{}{} // one of A's completes
	bustest.EventuallyWithin(t, time.Minute, "a handler starts after it", func() bool { return len(hh.snapshot()) >= workers+2 })
	ev := hh.snapshot()
	if got := ev[workers+1]; got != "start b" {
		t.Fatalf("after one of A's completed, %q started, want B; events %v", got, ev)
	}
	for range flood - 1 {
		hh.release <- struct{}{}
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d failed", failed.Load())
	}
	t.Logf("FIGURE runner: %d workers, A sent %d slow requests (%d waiting); B started after 1 of A's completed, with %d of A's still waiting (one FIFO: after %d)",
		workers, flood, flood-workers, flood-workers, flood-workers+1)
}

// TestBodyBudgetRefusesAndChangesNothing: the body bytes of one
// installation's requests (ScopeBytes) and of all requests
// held (BodyBudget) are bounded; a request beyond either is answered 503
// at once, its handler never runs and it leaves no dedupe marker (its
// retry runs normally later), while another installation's request within
// the budget is queued and served.
func TestBodyBudgetRefusesAndChangesNothing(t *testing.T) {
	const body = 30 << 10
	hh := newHolding()
	a := hh.add(bindingFor("i", "w", "a", 1, 1), "a", true)
	b := hh.add(bindingFor("i", "w", "b", 1, 1), "b", true)
	c := hh.add(bindingFor("i", "w", "c", 1, 1), "c", true)
	// each request is a little over 30 KiB: A holds one running and one
	// waiting (its 64 KiB hold two), B one waiting, and the fourth body would
	// pass the 100 KiB budget
	h := newHarness(t, bus.RunnerConfig{Workers: 1, MaxBody: 40 << 10, BodyBudget: 100 << 10, ScopeBytes: 64 << 10,
		InvocationTimeout: 2 * time.Minute, Handlers: hh.handlers()}, bus.Deps{})
	for _, bd := range []binding.Binding{a, b, c} {
		h.attach(bd, true, `{}`)
	}
	h.waitLifecycleDrained()
	pad := strings.Repeat("x", body)

	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	call := func(bd binding.Binding, id string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.command(bd, id, pad)
			mu.Lock()
			errs[id] = err
			mu.Unlock()
		}()
	}
	call(a, "a1")
	bustest.EventuallyWithin(t, time.Minute, "a1 runs", func() bool { return hh.held.Load() == 1 })
	call(a, "a2")
	waitQueued(t, h.runner, 1, 1)
	if _, err := h.command(a, "a3", pad); !errors.Is(err, wire.ErrUnavailable) || !strings.Contains(err.Error(), "this installation") {
		t.Fatalf("a3 over A's waiting bytes: %v, want 503 for this installation", err)
	}
	call(b, "b1")
	waitQueued(t, h.runner, 2, 2)
	if _, err := h.command(c, "c1", pad); !errors.Is(err, wire.ErrUnavailable) || !strings.Contains(err.Error(), "at capacity") {
		t.Fatalf("c1 over the body budget: %v, want 503 at capacity", err)
	}
	if j, s := h.runner.Queued(); j != 2 || s != 2 {
		t.Fatalf("refusals changed the queue: %d waiting of %d installations", j, s)
	}
	close(hh.release)
	wg.Wait()
	for id, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	for _, id := range []string{"a3", "c1"} {
		if n := hh.runs(id); n != 0 {
			t.Fatalf("refused %s ran %d times", id, n)
		}
	}
	// no marker was left: the retries run (a marker would answer 409)
	for _, r := range []struct {
		b  binding.Binding
		id string
	}{{a, "a3"}, {c, "c1"}} {
		if _, err := h.command(r.b, r.id, pad); err != nil {
			t.Fatalf("retry of refused %s: %v", r.id, err)
		}
		if n := hh.runs(r.id); n != 1 {
			t.Fatalf("retry of %s ran %d times, want 1", r.id, n)
		}
	}
	waitQueued(t, h.runner, 0, 0) // the scopes left the map with their last job
}

// TestBurstOfOneInstallationAllServed: an installation alone may use every
// worker and its whole share of the queue (ScopeQueue, default Queue/2):
// a burst of Workers+ScopeQueue requests held at once is served in full,
// none refused. Before the fair queue, the per-installation cap's default
// (Workers/2 in flight) refused such bursts (schenotify N7 and N9).
func TestBurstOfOneInstallationAllServed(t *testing.T) {
	const workers = 4
	const burst = workers + 4*workers/2 // default Queue 4*Workers, ScopeQueue half of it
	hh := newHolding()
	a := hh.add(bindingFor("i", "w", "a", 1, 1), "a", true)
	h := newHarness(t, bus.RunnerConfig{Workers: workers, InvocationTimeout: 2 * time.Minute, Handlers: hh.handlers()}, bus.Deps{})
	h.attach(a, true, `{}`)
	h.waitLifecycleDrained()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.command(a, fmt.Sprintf("a%d", i), "x"); err != nil {
				failed.Add(1)
				t.Errorf("a%d: %v", i, err)
			}
		}()
	}
	bustest.EventuallyWithin(t, time.Minute, "every worker held", func() bool { return hh.held.Load() == workers })
	waitQueued(t, h.runner, burst-workers, 1)
	close(hh.release)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of a burst of %d refused", failed.Load(), burst)
	}
}
