package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
)

// TestFloodingScopeLeavesWorkersToOthers is issue 19's shared-pool item at
// the runner, which every service's invocations go through: installation A
// floods with requests whose handler never returns; A holds at most
// PerScope of the workers and queue (the rest of A's requests get 503 at
// once), and B's request is served while every one of A's is still held.
// Before: A's requests took all workers and the whole queue, and B's got
// an immediate 503.
func TestFloodingScopeLeavesWorkersToOthers(t *testing.T) {
	const workers, queue, flood = 4, 8, 30
	release := make(chan struct{})
	var held atomic.Int64
	a, b := bindingFor("i", "w", "a", 1, 1), bindingFor("i", "w", "b", 1, 1)
	scA, _ := a.Scope()
	h := newHarness(t, bus.RunnerConfig{Workers: workers, Queue: queue, PerScope: workers / 2, InvocationTimeout: 2 * time.Minute, Handlers: bus.Handlers{
		Command: func(ctx context.Context, inv *bus.Invocation) (any, error) {
			if inv.Scope == scA {
				held.Add(1)
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return bus.CommandReply{Returns: []bus.Return{{Text: "ok"}}}, nil
		}}}, bus.Deps{})
	h.attach(a, true, `{}`)
	h.attach(b, true, `{}`)
	h.waitLifecycleDrained()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	var refused, answered atomic.Int64
	var wg sync.WaitGroup
	for i := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.command(a, fmt.Sprintf("a%d", i), "x")
			if errors.Is(err, bus.ErrUnavailable) {
				refused.Add(1)
			}
			answered.Add(1)
		}()
	}
	perScope := int64(workers / 2) // the default
	waitFor(t, "A's excess refused", func() bool { return refused.Load() == flood-perScope })
	waitFor(t, "A's share held", func() bool { return held.Load() == perScope })
	if _, err := h.command(b, "b1", "x"); err != nil {
		t.Fatalf("B while A floods: %v", err)
	}
	if n, d := held.Load(), answered.Load(); n != perScope || d != flood-perScope {
		t.Fatalf("after B: %d of A held (want %d), %d of A answered (want %d)", n, perScope, d, flood-perScope)
	}
	close(release)
	wg.Wait()
	t.Logf("FIGURE runner: A sent %d, %d held (PerScope %d of %d workers), %d refused 503; B served while all of A's were held",
		flood, perScope, perScope, workers, refused.Load())
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
