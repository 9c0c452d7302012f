package bus

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestKeyLocks: one key's holders take turns (a counter updated without
// atomics under the lock stays exact, which the race detector also
// checks), another key is not held up by it, a waiter whose ctx ends holds
// nothing, and no entry outlives its callers.
func TestKeyLocks(t *testing.T) {
	var l KeyLocks[string]
	ctx := context.Background()
	n := 0
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := l.Lock(ctx, "a")
			if err != nil {
				t.Error(err)
				return
			}
			n++
			unlock()
		}()
	}
	wg.Wait()
	if n != 50 {
		t.Fatalf("counter %d, want 50", n)
	}

	unlockA, err := l.Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := l.Lock(ctx, "b") // another key: not held up by a
	if err != nil {
		t.Fatal(err)
	}
	unlockB()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Lock(cctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting on a held key with a done ctx: %v, want context.Canceled", err)
	}
	if got := l.held(); got != 1 {
		t.Fatalf("%d keys held, want 1 (a)", got)
	}
	unlockA()
	if got := l.held(); got != 0 {
		t.Fatalf("%d keys held after every unlock, want 0", got)
	}
}
