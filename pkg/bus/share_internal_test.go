package bus

import "testing"

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
