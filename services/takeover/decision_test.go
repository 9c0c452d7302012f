package takeover_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// takeOver makes a session exist and takes it over through the console.
func (h *harness) takeOver(b binding.Binding, config, bot string, lid any) string {
	h.t.Helper()
	h.mustEvent(b, config, takeover.EventPersonMessage, bot, msgData("person", lid, lid, plain("hi")))
	sid := sidOf(bot, "person", lid)
	// the reply waits for the recording at most the budget: on a loaded
	// machine (a three-node cluster under the race detector) the new
	// session's record can come later, and a takeover needs it
	bustest.Eventually(h.t, "the session's record", func() bool { return h.record(b, sid) != nil })
	h.mustPage(b, config, "POST", "/takeover", map[string]string{"sid": sid}, nil)
	return sid
}

func TestDecisionBeforeRecording(t *testing.T) {
	h := newHarness(t)
	b := newBinding("dec1")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-a", 1)

	// healthy appends: the entry is readable once the reply arrives
	if r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("one"))); !r.PreventDefault {
		t.Fatal("taken-over session not blocked")
	}
	if n := h.historyCount(b, sid); n != 2 {
		t.Fatalf("%d entries stored when the reply arrived, want 2", n)
	}

	// stalled appends: the reply still comes, blocked; the entry follows
	stall := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(stall) }) }
	defer release()
	takeover.SetFault(h.svc, func(op string, _ binding.Scope) error {
		if op == "history.append" {
			<-stall
		}
		return nil
	})
	r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("two")))
	if !r.PreventDefault || !r.PreventPostorder {
		t.Fatal("stalled recording changed the decision")
	}
	if n := h.historyCount(b, sid); n != 2 {
		t.Fatalf("entry appended during the stall: %d", n)
	}
	release()
	bustest.Eventually(t, "stalled entry", func() bool { return h.historyCount(b, sid) == 3 })
	takeover.SetFault(h.svc, nil)

	// a session that is not taken over passes
	if r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 2, 2, plain("x"))); r.PreventDefault || r.PreventPostorder {
		t.Fatal("free session blocked")
	}
}

// TestRecordQueueOverflowDropsRecordingNotDecision fills the recording
// queue while appends are stalled: every event is still answered with its
// decision, the recordings past the bound are dropped and counted, and the
// ones that were queued are stored once the stall ends. The bound is the
// installation's half of the pool, not a worker's share of it: with two
// workers, one session can have three of the six places.
func TestRecordQueueOverflowDropsRecordingNotDecision(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) { c.RecordWorkers, c.RecordQueue = 2, 6 })
	b := newBinding("dec-overflow")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-a", 1)

	stall, stalled := make(chan struct{}), make(chan struct{}, 16)
	var once sync.Once
	release := func() { once.Do(func() { close(stall) }) }
	defer release()
	takeover.SetFault(h.svc, func(op string, _ binding.Scope) error {
		if op == "history.append" {
			stalled <- struct{}{}
			<-stall
		}
		return nil
	})
	event := func(i int) {
		r, err := h.event(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain(fmt.Sprintf("m%d", i))))
		if err != nil || !r.PreventDefault {
			t.Errorf("event %d: blocked=%v, %v", i, r.PreventDefault, err)
		}
	}
	// the session's worker holds the first recording in its append
	event(0)
	<-stalled
	// three more wait in the queue, four find it full
	var wg sync.WaitGroup
	for i := 1; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); event(i) }()
	}
	wg.Wait()
	if n := h.metric("takeover_record_dropped_total", map[string]string{"reason": "installation_full"}); n != 4 {
		t.Fatalf("%v recordings dropped, want 4", n)
	}
	release()
	takeover.SetFault(h.svc, nil)
	// the hi entry, then the four recordings that were taken
	bustest.Eventually(t, "queued recordings stored", func() bool { return h.historyCount(b, sid) == 5 })
	time.Sleep(100 * time.Millisecond)
	if n := h.historyCount(b, sid); n != 5 {
		t.Fatalf("%d entries stored, want 5", n)
	}
}

func TestLiveViewDecidesWithoutStorage(t *testing.T) {
	h := newHarness(t)
	b := newBinding("dec2")
	h.attach(b, `{}`, true)
	taken := h.takeOver(b, `{}`, "bot-a", 1)
	_ = taken
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 2, 2, plain("free")))
	bustest.Eventually(t, "live view", func() bool { return takeover.ViewLive(h.svc) })

	takeover.SetFault(h.svc, func(string, binding.Scope) error { return errors.New("storage down") })
	defer takeover.SetFault(h.svc, nil)
	before := h.metric("takeover_decisions_total", map[string]string{"path": "view"})
	for i := range 1000 {
		lid := 1 + i%2
		r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", lid, lid, plain("m")))
		if r.PreventDefault != (lid == 1) {
			t.Fatalf("event %d for %d: blocked=%v", i, lid, r.PreventDefault)
		}
	}
	if got := h.metric("takeover_decisions_total", map[string]string{"path": "view"}) - before; got != 1000 {
		t.Fatalf("%v decisions by the view, want 1000", got)
	}
}

func TestStaleViewUsesDirectRead(t *testing.T) {
	h := newHarness(t)
	b := newBinding("dec3")
	h.attach(b, `{}`, true)
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 3, 3, plain("hi")))
	sid := sidOf("bot-a", "person", 3)
	takeover.StopView(h.svc)

	// another replica takes the session over: written straight to the bucket
	rec := h.record(b, sid)
	now := h.now().UnixMilli()
	rec.Takeover = model.TakeoverState{Active: true, StartedAt: now, LastHumanAt: now, ExpiresAt: now + 600_000, Via: "console"}
	h.putRecord(b, sid, rec)

	r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 3, 3, plain("again")))
	if !r.PreventDefault {
		t.Fatal("direct read missed the takeover")
	}
	if h.metric("takeover_decisions_total", map[string]string{"path": "direct", "blocked": "true"}) != 1 {
		t.Fatal("decision not by the direct path")
	}
	bustest.Eventually(t, "the recording's own write in the view", func() bool { return h.metric("takeover_sessions_active", nil) == 1 })
	// the direct read fails: the view's last known entry decides
	takeover.SetFault(h.svc, func(op string, _ binding.Scope) error {
		if op == "kv.get" {
			return errors.New("down")
		}
		return nil
	})
	defer takeover.SetFault(h.svc, nil)
	// this replica applied its own write of the session at once, so its
	// view knows the takeover even while stale
	if r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 3, 3, plain("x"))); !r.PreventDefault {
		t.Fatal("fallback missed the last known takeover")
	}
	if r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 4, 4, plain("x"))); r.PreventDefault {
		t.Fatal("fallback blocked an unknown session")
	}
	if h.metric("takeover_decisions_total", map[string]string{"path": "fallback"}) != 2 {
		t.Fatal("decision not by the fallback path")
	}
}

// The view follows its connection's state from the connection's status
// events (a decision does not ask the connection, whose lock its flusher
// holds while writing): down while the server is, up again after the
// reconnect.
func TestViewFollowsConnection(t *testing.T) {
	h := newHarness(t)
	if !takeover.ViewConnected(h.svc) {
		t.Fatal("the view does not count a connected service as connected")
	}
	h.srv.Stop()
	bustest.Eventually(t, "the view to see the connection down", func() bool { return !takeover.ViewConnected(h.svc) })
	if takeover.ViewLive(h.svc) || h.metric("takeover_view_stale", nil) != 1 {
		t.Fatal("the view is live while its connection is down")
	}
	h.srv.Restart(t)
	bustest.Eventually(t, "the view to see the connection up", func() bool { return takeover.ViewConnected(h.svc) })
}

func TestQuietViewStaysLive(t *testing.T) {
	h := newHarness(t)
	b := newBinding("dec3q")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-a", 1)
	_ = sid
	// three pull heartbeats with no writes: the view must not call itself stale
	quietUntil := time.Now().Add(6 * time.Second)
	bustest.Eventually(t, "a quiet period", func() bool { return time.Now().After(quietUntil) })
	if !takeover.ViewLive(h.svc) {
		t.Fatal("a quiet bucket made the view stale")
	}
	if r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("x"))); !r.PreventDefault {
		t.Fatal("not blocked")
	}
	if h.metric("takeover_decisions_total", map[string]string{"path": "view", "blocked": "true"}) < 1 {
		t.Fatal("decision not by the view")
	}
}

// TestFloodingInstallationLeavesRecordingRoom (issue 19, docs/reliability.md
// "Shared pools"): installation A's appends stall and A sends eight events;
// one is being written, three wait (A's half of the six places) and four
// are dropped as installation_full. Installation B's event, sent while A's
// are still stalled, is recorded. Before, A's recordings took all six
// places and B's was dropped as queue_full.
func TestFloodingInstallationLeavesRecordingRoom(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) { c.RecordWorkers, c.RecordQueue = 2, 6 })
	a, b := newBinding("flood-a"), newBinding("flood-b")
	h.attach(a, `{}`, true)
	h.attach(b, `{}`, true)
	h.takeOver(a, `{}`, "bot-a", 1)
	sidB := h.takeOver(b, `{}`, "bot-a", 1)
	scA, _ := a.Scope()

	stall, stalled := make(chan struct{}), make(chan struct{}, 16)
	var once sync.Once
	release := func() { once.Do(func() { close(stall) }) }
	defer release()
	takeover.SetFault(h.svc, func(op string, sc binding.Scope) error {
		if op == "history.append" && sc == scA {
			stalled <- struct{}{}
			<-stall
		}
		return nil
	})
	event := func(bi binding.Binding, i int) {
		if _, err := h.event(bi, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain(fmt.Sprintf("m%d", i)))); err != nil {
			t.Errorf("event %d: %v", i, err)
		}
	}
	event(a, 0)
	<-stalled
	var wg sync.WaitGroup
	for i := 1; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); event(a, i) }()
	}
	wg.Wait()
	if n := h.metric("takeover_record_dropped_total", map[string]string{"reason": "installation_full"}); n != 4 {
		t.Fatalf("%v of A's recordings dropped as installation_full, want 4", n)
	}
	event(b, 0)
	bustest.Eventually(t, "B's recording stored while A's stall", func() bool { return h.historyCount(b, sidB) == 2 })
	if n := h.metric("takeover_record_dropped_total", map[string]string{"reason": "queue_full"}); n != 0 {
		t.Fatalf("%v recordings dropped as queue_full, want 0", n)
	}
	select {
	case <-stall:
		t.Fatal("A's stall ended before B's recording was checked")
	default:
	}
	release()
	takeover.SetFault(h.svc, nil)
}
