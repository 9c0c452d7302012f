package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// effectHandlers count effects per invocation; "slow" blocks until
// released, "fail" returns 503 the first time.
type effects struct {
	n       atomic.Int64
	release chan struct{}
	failed  atomic.Bool
}

func (e *effects) handlers() bus.Handlers {
	return bus.Handlers{
		Command: func(ctx context.Context, inv *bus.Invocation) (any, error) {
			switch inv.Command.Params[0] {
			case "slow":
				<-e.release
			case "fail":
				if !e.failed.Swap(true) {
					return nil, wire.Errorf(wire.ErrUnavailable, "try again")
				}
			case "bad":
				return nil, wire.Errorf(wire.ErrBadRequest, "bad input")
			case "busy":
				if !e.failed.Swap(true) {
					return nil, wire.WithReason(wire.ErrConflict, "reply_in_progress", "something else is under way")
				}
			case "limited":
				if !e.failed.Swap(true) {
					return nil, wire.Errorf(wire.ErrRateLimited, "too many now")
				}
			case "soft":
				if !e.failed.Swap(true) {
					return bus.NotFinal(wire.CommandReply{Returns: []wire.Return{{Text: "temporarily unavailable"}}}), nil
				}
			}
			n := e.n.Add(1)
			return wire.CommandReply{Returns: []wire.Return{{Text: fmt.Sprintf("effect %d", n)}}}, nil
		},
		Dedupe: func(inv *bus.Invocation) bool { return inv.Command.Params[0] != "read" },
	}
}

func TestRetriedInvocationDoesNotRepeat(t *testing.T) {
	e := &effects{release: make(chan struct{})}
	h := newHarness(t, bus.RunnerConfig{Handlers: e.handlers()}, bus.Deps{})
	b := bindingFor("i", "w", "n", 1, 1)
	h.install(b)
	first, err := h.command(b, "same-id", "add")
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.command(b, "same-id", "add")
	if err != nil || string(again) != string(first) {
		t.Fatalf("retry = %s, %v; want the first reply %s", again, err, first)
	}
	if e.n.Load() != 1 {
		t.Fatalf("effects = %d, want 1", e.n.Load())
	}
	// a 4xx is final and replayed too
	_, err1 := h.command(b, "bad-id", "bad")
	_, err2 := h.command(b, "bad-id", "bad")
	if !errors.Is(err1, wire.ErrBadRequest) || !errors.Is(err2, wire.ErrBadRequest) {
		t.Fatalf("4xx replay: %v / %v", err1, err2)
	}
	// a 5xx is not kept: the retry runs again
	if _, err := h.command(b, "fail-id", "fail"); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("first attempt: %v", err)
	}
	if _, err := h.command(b, "fail-id", "fail"); err != nil {
		t.Fatalf("retry after 503: %v", err)
	}
	if e.n.Load() != 2 {
		t.Fatalf("effects = %d, want 2", e.n.Load())
	}
	// a reply marked NotFinal is sent but not kept: the retry runs again
	e.failed.Store(false)
	soft, err := h.command(b, "soft-id", "soft")
	if err != nil || !strings.Contains(string(soft), "temporarily unavailable") {
		t.Fatalf("first soft attempt = %s, %v", soft, err)
	}
	if again, err := h.command(b, "soft-id", "soft"); err != nil || !strings.Contains(string(again), "effect 3") {
		t.Fatalf("retry after a NotFinal reply = %s, %v; want a fresh run", again, err)
	}
	// a handler's 409 or 429 describes the moment and is not kept either:
	// a kept one would answer every retry until the record expired
	for i, c := range []struct {
		op   string
		want *wire.Error
	}{{"busy", wire.ErrConflict}, {"limited", wire.ErrRateLimited}} {
		e.failed.Store(false)
		id := c.op + "-id"
		if _, err := h.command(b, id, c.op); !errors.Is(err, c.want) {
			t.Fatalf("first %s attempt: %v, want %v", c.op, err, c.want)
		}
		want := fmt.Sprintf("effect %d", 4+i)
		if again, err := h.command(b, id, c.op); err != nil || !strings.Contains(string(again), want) {
			t.Fatalf("retry after %v = %s, %v; want a fresh run (%s)", c.want, again, err, want)
		}
	}
	// reads are not deduplicated
	r1, _ := h.command(b, "read-id", "read")
	r2, _ := h.command(b, "read-id", "read")
	if string(r1) == string(r2) {
		t.Fatalf("read was replayed: %s", r1)
	}
}

func TestRetryRacingFirstAttemptGetsInProgress(t *testing.T) {
	e := &effects{release: make(chan struct{})}
	h := newHarness(t, bus.RunnerConfig{Handlers: e.handlers()}, bus.Deps{})
	b := bindingFor("i", "w", "n", 1, 1)
	h.install(b)
	done := make(chan json.RawMessage)
	go func() {
		out, _ := h.command(b, "race-id", "slow")
		done <- out
	}()
	// wait until the first attempt holds the marker
	deadline := time.Now().Add(5 * time.Second)
	for len(keys(t, h.js, bus.DedupeBucket(plugin))) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("first attempt never claimed the invocation")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, err := h.command(b, "race-id", "slow")
	if !errors.Is(err, wire.ErrInProgress) {
		t.Fatalf("racing retry = %v, want 409 in_progress", err)
	}
	var be *wire.Error
	if !errors.As(err, &be) || be.Reason != "in_progress" || be.Code != 409 {
		t.Fatalf("error = %#v", be)
	}
	close(e.release)
	first := <-done
	after, err := h.command(b, "race-id", "slow")
	if err != nil || string(after) != string(first) {
		t.Fatalf("retry after completion = %s, %v; want %s", after, err, first)
	}
	if e.n.Load() != 1 {
		t.Fatalf("effects = %d, want 1", e.n.Load())
	}
}

// TestRunnerConcurrentSafe drives many concurrent invocations (successes,
// errors, dedupe replays) through the pool; run under -race it proves the
// workers never touch micro's request state.
func TestRunnerConcurrentSafe(t *testing.T) {
	e := &effects{release: make(chan struct{})}
	close(e.release)
	// 16 concurrent callers of one installation: 8 run, 8 wait
	h := newHarness(t, bus.RunnerConfig{Handlers: e.handlers(), Workers: 8}, bus.Deps{})
	b := bindingFor("i", "w", "n", 1, 1)
	h.install(b)
	var wg sync.WaitGroup
	var failures atomic.Int64
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				word := []string{"add", "bad", "read", "slow"}[i%4]
				_, err := h.command(b, fmt.Sprintf("c-%d-%d", g, i%10), word)
				if err != nil && !errors.Is(err, wire.ErrBadRequest) && !errors.Is(err, wire.ErrInProgress) {
					failures.Add(1)
					t.Errorf("unexpected error: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d unexpected failures", failures.Load())
	}
}

func TestFullPoolAnswers503(t *testing.T) {
	e := &effects{release: make(chan struct{})}
	h := newHarness(t, bus.RunnerConfig{Handlers: e.handlers(), Workers: 1, Queue: 1}, bus.Deps{})
	b := bindingFor("i", "w", "n", 1, 1)
	h.install(b)
	results := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := h.command(b, fmt.Sprintf("p%d", i), "slow")
			results <- err
		}()
	}
	// one runs, one waits, the third must be refused at once
	select {
	case err := <-results:
		if !errors.Is(err, wire.ErrUnavailable) {
			t.Fatalf("first answer = %v, want 503 from the full pool", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no immediate 503 from a full pool")
	}
	close(e.release)
	for range 2 {
		if err := <-results; err != nil {
			t.Fatalf("queued request: %v", err)
		}
	}
}

// TestCrashedAttemptIsTakenOver: a running marker older than the
// invocation timeout belongs to a worker that died; the retry takes it over
// and runs.
func TestCrashedAttemptIsTakenOver(t *testing.T) {
	e := &effects{release: make(chan struct{})}
	h := newHarness(t, bus.RunnerConfig{Handlers: e.handlers(), InvocationTimeout: 2 * time.Second}, bus.Deps{})
	b := bindingFor("i", "w", "n", 1, 1)
	h.install(b)
	kv, err := h.js.KeyValue(context.Background(), bus.DedupeBucket(plugin))
	if err != nil {
		t.Fatal(err)
	}
	key := bus.InvocationKey(bus.ScopeOf(b), "crashed-id")
	fresh, _ := json.Marshal(map[string]any{"state": "running", "started_at": time.Now().UTC()})
	if _, err := kv.Create(context.Background(), key, fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := h.command(b, "crashed-id", "add"); !errors.Is(err, wire.ErrInProgress) {
		t.Fatalf("fresh marker: %v, want in_progress", err)
	}
	stale, _ := json.Marshal(map[string]any{"state": "running", "started_at": time.Now().Add(-time.Hour).UTC()})
	if _, err := kv.Put(context.Background(), key, stale); err != nil {
		t.Fatal(err)
	}
	if _, err := h.command(b, "crashed-id", "add"); err != nil {
		t.Fatalf("stale marker not taken over: %v", err)
	}
	if e.n.Load() != 1 {
		t.Fatalf("effects = %d", e.n.Load())
	}
}
