package schenotify_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

// TestSlowInstallationDoesNotHoldEveryDelivery (issue 19, docs/reliability.md
// "Shared pools"): installation A's host holds every send_message, and A
// has four reminders due before B's one. With two delivery workers A runs
// at most one delivery at a time (the due pool's per-installation cap,
// max(1, DueWorkers/2)), so B's reminder is delivered while A's sends are
// all still held; then A's four arrive once its host answers. On the
// stream-order pool A's first two sends held both workers and B waited for
// them (up to the host timeout).
func TestSlowInstallationDoesNotHoldEveryDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := testConfig()
	cfg.DueWorkers = 2
	cfg.Lead = -1                      // every delivery is sent by the due worker that took its fire
	cfg.HostTimeout = 25 * time.Second // longer than the wait for B below
	e.start(t, cfg, nil, nil, nil)
	a, b := bind("installation-a", 1), bind("installation-b", 1)
	s := sess("bot", "person", "1")
	release := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	e.host.respond(func(c bustest.HostCall) hostAction {
		if c.Scope == scopeOf(a) {
			return hostAction{Hang: release}
		}
		return hostAction{}
	})
	T := nextSecond()
	for i := range 4 {
		e.schedule(t, a, cfgEN, s, map[string]any{"message": "a" + strconv.Itoa(i), "time_str": rfc(T.Add(2 * time.Second))})
	}
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "b", "time_str": rfc(T.Add(3 * time.Second))})

	var atB []bustest.HostCall
	deadline := time.Now().Add(15 * time.Second)
	for atB == nil {
		sends := e.host.sends()
		for _, c := range sends {
			if c.Scope == scopeOf(b) {
				atB = sends
			}
		}
		if atB == nil {
			if time.Now().After(deadline) {
				t.Fatalf("B's reminder not delivered while A's sends are held; sends so far %q", e.host.texts())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	held := 0
	for _, c := range atB {
		if c.Scope == scopeOf(a) {
			held++
		}
	}
	// A's sends are still unanswered (its host holds them, the host
	// timeout is far), and at most one of A's ran at a time
	if held != 1 {
		t.Fatalf("when B was delivered A had %d sends in flight, want 1 (its cap of 2 workers)", held)
	}
	released = true
	close(release)
	e.host.wait(t, 5, 15*time.Second)
	got := map[string]bool{}
	for _, text := range e.host.texts() {
		got[strings.TrimPrefix(text, "[Notify] ")] = true
	}
	for _, want := range []string{"a0", "a1", "a2", "a3", "b"} {
		if !got[want] {
			t.Errorf("%s never delivered; delivered %v", want, got)
		}
	}
}
