package bustest_test

import (
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

// A stopped clock stands still, and once resumed runs on from where it
// stood, behind the wall clock by as long as it stood.
func TestClockResumeRunsOnFromWhereItStood(t *testing.T) {
	at := time.Now().Add(-time.Hour)
	c := bustest.FixedClock(at)
	time.Sleep(20 * time.Millisecond)
	if got := c.Now(); !got.Equal(at) {
		t.Fatalf("stopped clock moved: %v, want %v", got, at)
	}
	c.Resume()
	got := c.Now()
	if got.Before(at) || got.Sub(at) > time.Minute {
		t.Fatalf("resumed at %v, want just after %v", got, at)
	}
	time.Sleep(20 * time.Millisecond)
	if later := c.Now(); !later.After(got) {
		t.Fatalf("resumed clock does not run: %v then %v", got, later)
	}
	c.Resume() // a running clock is left as it is
	if again := c.Now(); again.Sub(at) > time.Minute {
		t.Fatalf("a second Resume moved the clock to %v", again)
	}
}
