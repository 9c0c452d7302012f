package bus

import (
	"testing"
	"time"
)

// TestPacerSpacesDeferrals: a burst of one installation deferred at one
// instant comes back spread over its measured service time (10 ms per
// handler, 2 at once: a slot every 5 ms), never later than the cap, and a
// second installation's line starts at once. With the delay of the
// delivery count (1 s doubling) all 300 came back in the same instant.
func TestPacerSpacesDeferrals(t *testing.T) {
	p := newPacer(2, time.Second)
	now := time.Unix(1000, 0)
	p.defer1("a", now) // opens a's line before its handlers are measured
	for range 8 {
		p.observe("a", 10*time.Millisecond)
	}
	p.lines["a"].last = time.Time{}
	var last time.Duration
	for i := range 300 {
		d := p.defer1("a", now)
		want := min(time.Duration(i+1)*5*time.Millisecond, time.Second)
		if d < want-time.Millisecond || d > want+time.Millisecond {
			t.Fatalf("deferral %d: %v, want about %v", i, d, want)
		}
		if d < last {
			t.Fatalf("deferral %d: %v before the previous %v", i, d, last)
		}
		last = d
	}
	if d := p.defer1("b", now); d > 6*time.Millisecond {
		t.Fatalf("another installation's first deferral: %v, want its first slot", d)
	}
	p.forget(now.Add(2 * time.Second))
	if len(p.lines) != 0 {
		t.Fatalf("%d lines kept after their slots passed", len(p.lines))
	}
}
