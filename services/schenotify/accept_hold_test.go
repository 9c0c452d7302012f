package schenotify_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// Issue 22: the replica holding a claimed delivery in its lead window
// crashes before the instant; the other replica sends it once, after the
// claim expired, with the same key.
func TestHeldDeliveryCrashInsideLead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := testConfig()
	cfg.Claim, cfg.AckWait = 4*time.Second, 6*time.Second // lead 2 s, hold window 3 s
	cfg1, cfg2 := cfg, cfg
	cfg1.Replica, cfg2.Replica = "r1", "r2"
	nc1, nc2 := e.srv.Conn(t), e.srv.Conn(t)
	r1 := e.start(t, cfg1, nc1, nil, nil)
	r2 := e.start(t, cfg2, nc2, nil, nil)
	b := bind("installation-a", 1)
	due := nextSecond().Add(3 * time.Second)
	id := e.schedule(t, b, cfgEN, sess("bot", "person", "1"), map[string]any{"message": "held", "time_str": rfc(due)})
	bustest.EventuallyWithin(t, 5*time.Second, "a replica holding the delivery", func() bool { return r1.svc.Held()+r2.svc.Held() == 1 })
	if time.Now().After(due) {
		t.Skip("the machine was too slow to crash inside the lead window")
	}
	rec := e.record(t, scopeOf(b), id)
	if rec == nil || rec.State != schenotify.StateSending || rec.Claim == nil {
		t.Fatalf("held without a claim: %+v", rec)
	}
	victim := nc1
	if rec.Claim.Replica == "r2" {
		victim = nc2
	}
	victim.Close() // the crash: its timer's send and its ack never reach the server
	calls := e.host.wait(t, 1, 20*time.Second)
	if calls[0].At.Before(due) {
		t.Errorf("sent %v before the due second", due.Sub(calls[0].At))
	}
	bustest.EventuallyWithin(t, 5*time.Second, "record gone", func() bool { return e.record(t, scopeOf(b), id) == nil })
	time.Sleep(2 * time.Second)
	if n := len(e.host.sends()); n != 1 {
		t.Fatalf("%d sends, want 1", n)
	}
}

// Issue 22: with room for one held delivery, the others take the server's
// path; every reminder is sent once and none before its due second.
func TestHeldCapFallsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := testConfig()
	cfg.MaxHeld = 1
	e.start(t, cfg, nil, nil, nil)
	b := bind("installation-a", 1)
	due := nextSecond().Add(3 * time.Second)
	for i := range 8 {
		e.schedule(t, b, cfgEN, sess("bot", "group", strconv.Itoa(i)), map[string]any{"message": "m" + strconv.Itoa(i), "time_str": rfc(due)})
	}
	e.host.wait(t, 8, 15*time.Second)
	time.Sleep(time.Second)
	keys := map[string]int{}
	for _, c := range e.host.sends() {
		keys[c.IdempotencyKey]++
		checkOnTime(t, c, due)
	}
	if len(e.host.sends()) != 8 || len(keys) != 8 {
		t.Fatalf("%d sends with %d keys, want 8 and 8", len(e.host.sends()), len(keys))
	}
}

// Issue 22: a lead beyond the bound is refused.
func TestLeadBound(t *testing.T) {
	e := newEnv(t)
	if _, err := schenotify.New(schenotify.Config{Lead: schenotify.MaxLead + time.Second}, bus.Deps{Conn: e.nc}); err == nil {
		t.Fatal("a lead over MaxLead was accepted")
	}
}
