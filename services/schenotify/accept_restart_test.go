package schenotify_test

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// N4: service restarts with reminders pending.
func TestN4ServiceRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	first := e.start(t, testConfig(), nil, nil, nil)
	T := nextSecond()
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "on time", "time_str": rfc(T.Add(5 * time.Second))})
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "while down", "time_str": rfc(T.Add(2 * time.Second))})
	time.Sleep(time.Until(T.Add(time.Second)))
	first.stop()
	time.Sleep(time.Until(T.Add(5 * time.Second)))
	start := time.Now()
	second := e.start(t, testConfig(), nil, nil, nil)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(first.logs.String(), second.logs.String())
		}
	})
	calls := e.host.wait(t, 2, 5*time.Second)
	for _, c := range calls {
		switch sentText(c) {
		case "[Notify] while down":
			if c.At.Sub(start) > 2*time.Second {
				t.Errorf("late reminder %v after the start", c.At.Sub(start))
			}
		case "[Notify] on time":
			checkOnTime(t, c, T.Add(5*time.Second))
		default:
			t.Errorf("unexpected send %q", sentText(c))
		}
	}
}

// N4: a restart with the clock 90 s ahead adds the late note.
func TestN4LateNoteAfterRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	first := e.start(t, testConfig(), nil, nil, nil)
	T := nextSecond()
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "late", "time_str": rfc(T.Add(2 * time.Second))})
	first.stop()
	second := e.start(t, testConfig(), nil, bustest.OffsetClock(90*time.Second).Now, nil)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(second.logs.String())
		}
	})
	calls := e.host.wait(t, 1, 6*time.Second)
	text := sentText(calls[0])
	// 90 s minus up to the lead (5 s): the schedule fires the lead ahead
	// of the due second, and this clock already has it past.
	if !strings.HasPrefix(text, "[Notify] late\n") || !regexp.MustCompile(`1 min (2\d|3\d) s`).MatchString(text) {
		t.Fatalf("late text %q", text)
	}
}

// N4: a service clock 5 s behind the server's: the early fire is nak'd and
// the reminder is delivered once when the service's clock reaches it.
func TestN4ClockBehind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, bustest.OffsetClock(-5*time.Second).Now, nil)
	b := bind("installation-a", 1)
	T := nextSecond()
	e.schedule(t, b, cfgEN, sess("bot", "person", "1"), map[string]any{"message": "behind", "time_str": rfc(T.Add(2 * time.Second))})
	calls := e.host.wait(t, 1, 12*time.Second)
	if calls[0].At.Before(T.Add(6 * time.Second)) {
		t.Errorf("sent at %v, before the service's clock reached the due second", calls[0].At.Sub(T))
	}
	time.Sleep(2 * time.Second)
	if n := len(e.host.sends()); n != 1 {
		t.Fatalf("%d sends", n)
	}
	if counter(t, e, "not_due") < 1 {
		t.Errorf("no not_due outcome counted")
	}
}

// N5: NATS restarts with reminders pending.
func TestN5NATSRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	T := nextSecond()
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "after restart", "time_str": rfc(T.Add(5 * time.Second))})
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "while down", "time_str": rfc(T.Add(2 * time.Second))})
	time.Sleep(time.Until(T.Add(time.Second)))
	e.srv.Stop()
	time.Sleep(time.Until(T.Add(3 * time.Second)))
	e.srv.Restart(t)
	back := time.Now()
	calls := e.host.wait(t, 2, 8*time.Second)
	for _, c := range calls {
		switch sentText(c) {
		case "[Notify] while down":
			if c.At.Sub(back) > 2*time.Second {
				t.Errorf("delivered %v after the server's return", c.At.Sub(back))
			}
		case "[Notify] after restart":
			checkOnTime(t, c, T.Add(5*time.Second))
		default:
			t.Errorf("unexpected send %q", sentText(c))
		}
	}
}

// N6: two replicas never both deliver one occurrence.
func TestN6TwoReplicas(t *testing.T) {
	t.Parallel()
	twoReplicas := func() *env {
		e := newEnv(t)
		e.start(t, testConfig(), nil, nil, nil)
		e.start(t, testConfig(), nil, nil, nil)
		return e
	}
	e, T := dueAfterSetup(t, 8*time.Second, twoReplicas, func(e *env, T time.Time) bool {
		for i := range 50 {
			b := bind("installation-"+strconv.Itoa(i%5), 1)
			if _, ok := e.scheduleDue(t, b, cfgEN, sess("bot", "group", strconv.Itoa(i)), "m"+strconv.Itoa(i), T); !ok {
				return false
			}
		}
		return true
	})
	e.host.wait(t, 50, time.Until(T)+8*time.Second)
	time.Sleep(time.Second)
	keys := map[string]int{}
	for _, c := range e.host.sends() {
		keys[c.IdempotencyKey]++
		checkOnTime(t, c, T)
	}
	if len(e.host.sends()) != 50 || len(keys) != 50 {
		t.Fatalf("%d sends with %d keys, want 50 and 50", len(e.host.sends()), len(keys))
	}
}

// N6: killing the replica whose send hangs makes the other one send the
// same occurrence with the same key once the claim expires.
func TestN6ReplicaCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := testConfig()
	cfg.Claim, cfg.AckWait, cfg.HostTimeout = 2*time.Second, 2*time.Second, 20*time.Second
	cfg1, cfg2 := cfg, cfg
	cfg1.Replica, cfg2.Replica = "r1", "r2"
	nc1, nc2 := e.srv.Conn(t), e.srv.Conn(t)
	e.start(t, cfg1, nc1, nil, nil)
	e.start(t, cfg2, nc2, nil, nil)
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	var calls atomic.Int32
	e.host.respond(func(bustest.HostCall) hostAction {
		if calls.Add(1) == 1 {
			return hostAction{Hang: hang}
		}
		return hostAction{}
	})
	b := bind("installation-a", 1)
	T := nextSecond()
	id := e.schedule(t, b, cfgEN, sess("bot", "person", "1"), map[string]any{"message": "survives", "time_str": rfc(T.Add(time.Second))})
	e.host.wait(t, 1, 5*time.Second)
	rec := e.record(t, scopeOf(b), id)
	if rec == nil || rec.Claim == nil {
		t.Fatalf("no claim: %+v", rec)
	}
	victimConn := nc1
	if rec.Claim.Replica == "r2" {
		victimConn = nc2
	}
	victimConn.Close() // the crash: its ack and outcome never happen
	got := e.host.wait(t, 2, 15*time.Second)
	if got[0].IdempotencyKey != got[1].IdempotencyKey {
		t.Fatalf("keys %q and %q", got[0].IdempotencyKey, got[1].IdempotencyKey)
	}
	bustest.EventuallyWithin(t, 5*time.Second, "record gone", func() bool { return e.record(t, scopeOf(b), id) == nil })
}

// N6 on a 3-node cluster with R3 stream and buckets.
func TestN6TwoReplicasR3Cluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	t.Parallel()
	c := bustest.NewCluster(t, 3)
	nc := c.Conn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{nc: nc, js: js, inv: bus.NewInvoker(nc, wire.Subjects{}, nil)}
	e.host = newFakeHost(t, nc)
	cfg := testConfig()
	cfg.Replicas = 3
	e.start(t, cfg, c.Conn(t), nil, nil)
	e.start(t, cfg, c.Conn(t), nil, nil)
	// Adds on an R3 cluster are slow on a loaded machine: time the first
	// ones, then leave room for the rest, added 10 at a time.
	start := time.Now()
	far := rfc(time.Now().Add(time.Hour))
	for i := range 5 {
		e.schedule(t, bind("installation-"+strconv.Itoa(i), 1), cfgEN, sess("bot", "group", "warm"), map[string]any{"message": "warm", "time_str": far})
	}
	T := nextSecond().Add(2*time.Second + 3*time.Since(start)).Truncate(time.Second)
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 50; i += 10 {
				b := bind("installation-"+strconv.Itoa(i%5), 1)
				e.schedule(t, b, cfgEN, sess("bot", "group", strconv.Itoa(i)), map[string]any{"message": "m" + strconv.Itoa(i), "time_str": rfc(T)})
			}
		}()
	}
	wg.Wait()
	e.host.wait(t, 50, 20*time.Second)
	time.Sleep(time.Second)
	keys := map[string]int{}
	for _, s := range e.host.sends() {
		keys[s.IdempotencyKey]++
		if s.At.Before(T) {
			t.Errorf("%q early", s.IdempotencyKey)
		}
	}
	if len(e.host.sends()) != 50 || len(keys) != 50 {
		t.Fatalf("%d sends with %d keys, want 50 and 50", len(e.host.sends()), len(keys))
	}
}
