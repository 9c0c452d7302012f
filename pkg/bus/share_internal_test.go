package bus

import (
	"strings"
	"testing"
)

// TestFairQueueBusyScopeIsNotNew: a scope whose jobs are all running when
// it sends another is not "new": a scope that held nothing, sending after
// it, is served first. Before, each request of a flood that the workers
// kept up with put its scope back on the new list, in front of the others
// (the CI failure of TestFloodingInstallationDoesNotDelayAnother).
func TestFairQueueBusyScopeIsNotNew(t *testing.T) {
	f := newFairQueue(16, 16, 1<<20, 1<<20)
	pushed := func(key, id string) {
		t.Helper()
		if r := f.push(key, job{subject: id}); r != accepted {
			t.Fatalf("push %s refused: %v", id, r)
		}
	}
	var running []job
	take := func(want string) {
		t.Helper()
		j, ok := f.pop()
		if !ok || j.subject != want {
			t.Fatalf("pop = %q (%v), want %q", j.subject, ok, want)
		}
		running = append(running, j)
	}
	// A's first two are taken as they arrive: nothing of A waits, both run
	pushed("a", "a1")
	take("a1")
	pushed("a", "a2")
	take("a2")
	pushed("a", "a3")
	pushed("b", "b1")
	pushed("a", "a4")
	take("b1")
	take("a3")
	take("a4")
	if _, ok := f.pop(); ok {
		t.Fatal("a job was popped from an empty queue")
	}
	for _, j := range running {
		f.done(j)
	}
	if jobs, scopes := f.queued(); jobs != 0 || scopes != 0 {
		t.Fatalf("after all done: %d jobs of %d scopes held", jobs, scopes)
	}
	// a scope that holds nothing again is new again
	pushed("a", "a5")
	j, _ := f.pop()
	pushed("b", "b2")
	pushed("c", "c1")
	take("b2")
	take("c1")
	f.done(j)
}

// TestFairQueueScopeRunCap: with a running cap per scope (the fired-message
// pools), a scope at its cap hands out nothing more until one of its jobs
// is done, and another scope's job is popped in front of its backlog.
func TestFairQueueScopeRunCap(t *testing.T) {
	f := newFairQueue(16, 16, 1<<20, 1<<20)
	f.scopeRun = 1
	for _, id := range []string{"a1", "a2", "a3"} {
		if r := f.push("a", job{subject: id}); r != accepted {
			t.Fatalf("push %s refused: %v", id, r)
		}
	}
	a1, _ := f.pop()
	if _, ok := f.pop(); ok {
		t.Fatal("a second job of a scope at its cap was popped")
	}
	f.push("b", job{subject: "b1"})
	if j, ok := f.pop(); !ok || j.subject != "b1" {
		t.Fatalf("pop = %q (%v), want b1 while a is at its cap", j.subject, ok)
	}
	f.done(a1)
	if j, ok := f.pop(); !ok || j.subject != "a2" {
		t.Fatalf("pop = %q (%v), want a2 once a1 is done", j.subject, ok)
	}
	if got := len(f.appendWaiting(nil)); got != 1 {
		t.Fatalf("%d jobs waiting, want 1 (a3)", got)
	}
}

func TestFiredKey(t *testing.T) {
	for subject, want := range map[string]string{
		"langbot.p.due.w.i.n.r1":     "w.i.n",
		"langbot.p.due.w.i.n":        "w.i.n",
		"langbot.p.due.w.i.n.r1.r2":  "w.i.n",
		"langbot.p.due.w.i":          "",
		"langbot.p":                  "",
		"langbot.p.due." + long(200): "",
	} {
		if got := firedKey(subject); got != want {
			t.Errorf("firedKey(%q) = %q, want %q", subject, got, want)
		}
	}
}

func long(n int) string { return strings.Repeat("x", n) + ".i.n" }
