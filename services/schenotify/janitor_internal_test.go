package schenotify

import "testing"

// TestActivityIdle checks the janitor's wait: idle at once with no handler,
// not idle while one runs, and idle again once the last one ends.
func TestActivityIdle(t *testing.T) {
	var a activity
	isClosed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	if !isClosed(a.idle()) {
		t.Fatal("the zero activity is not idle")
	}
	a.begin()
	a.begin()
	c := a.idle()
	if isClosed(c) {
		t.Fatal("idle with two handlers running")
	}
	a.end()
	if isClosed(c) {
		t.Fatal("idle with one handler still running")
	}
	a.end()
	if !isClosed(c) {
		t.Fatal("not idle after the last handler ended")
	}
	a.begin()
	if isClosed(a.idle()) {
		t.Fatal("idle after a new handler began")
	}
	a.end()
}
