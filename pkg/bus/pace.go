package bus

import (
	"sync"
	"time"
)

// maxDeferral is the longest delay of a deferred fired message: a backlog
// longer than that comes back at this bound and is paced again.
const maxDeferral = time.Minute

// minDeferralStep is the shortest spacing of one installation's deferrals
// (before any handler has been measured, and for handlers faster than it).
const minDeferralStep = time.Millisecond

// pacer chooses the delays of a fired-message pool's deferrals.
//
// A deferred message stays pending on the server until its delay is over,
// and then comes back with every other message whose delay ended at the
// same moment. When the delay depended on the delivery count (1 s doubling
// to a minute), a burst of one installation was deferred in one go, came
// back in one go, found room for its share of the pool (3*Workers) only,
// and the rest was deferred again for twice as long: the workers idled
// between waves that came ever further apart, so the time to deliver grew
// with the doubling delays instead of with the count.
//
// The pacer gives each installation a line of slots instead: a deferral
// takes the slot after the installation's previous one, the slots a step
// apart, where the step is the installation's measured service time (a
// moving average of its handlers' durations) divided by the handlers it may
// run at once. So the deferred messages come back about as fast as the pool
// takes that installation's messages; one that comes back early (the pool
// shared with others, a slower handler) is deferred again to the end of the
// line. No slot is more than max ahead, so a line longer than that comes
// back at max and is paced again, and a backlog the installation no longer
// has costs nothing for long.
type pacer struct {
	mu    sync.Mutex
	lines map[string]*paceLine
	svc   time.Duration // the pool's service time, a line's first estimate
	par   int           // handlers of one installation at once
	max   time.Duration
}

// paceLine is one installation's line of deferral slots.
type paceLine struct {
	last time.Time     // the slot of its latest deferral
	svc  time.Duration // its service time
}

func newPacer(par int, limit time.Duration) *pacer {
	return &pacer{lines: map[string]*paceLine{}, par: max(par, 1), max: limit}
}

// defer1 returns the delay of one more deferral of key's message at now.
func (p *pacer) defer1(key string, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lines[key]
	if l == nil {
		l = &paceLine{svc: p.svc}
		p.lines[key] = l
	}
	step := max(l.svc/time.Duration(p.par), minDeferralStep)
	slot := l.last
	if slot.Before(now) {
		slot = now
	}
	slot = slot.Add(step)
	if limit := now.Add(p.max); slot.After(limit) {
		slot = limit
	}
	l.last = slot
	return slot.Sub(now)
}

// observe records that a handler of key's message took d.
func (p *pacer) observe(key string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.svc = movingAverage(p.svc, d)
	if l := p.lines[key]; l != nil {
		l.svc = movingAverage(l.svc, d)
	}
}

// forget drops the lines whose last slot is past: the map holds only the
// installations with deferrals outstanding.
func (p *pacer) forget(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, l := range p.lines {
		if l.last.Before(now) {
			delete(p.lines, k)
		}
	}
}

// movingAverage folds d into avg with a weight of 1/8 (avg 0: no sample yet).
func movingAverage(avg, d time.Duration) time.Duration {
	if avg <= 0 {
		return d
	}
	return avg + (d-avg)/8
}
