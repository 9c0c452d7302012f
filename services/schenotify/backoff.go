package schenotify

import "time"

// RetryPolicy is the retry schedule of spec 7.5. The zero value means the
// defaults.
type RetryPolicy struct {
	Base        time.Duration // first wait; default 1 s
	Cap         time.Duration // longest wait; default 15 min
	Bound       time.Duration // retrying stops this long after the first attempt; default 24 h
	MaxAttempts int           // attempts per occurrence; 0 means no cap
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Base <= 0 {
		p.Base = time.Second
	}
	if p.Cap <= 0 {
		p.Cap = 15 * time.Minute
	}
	if p.Bound <= 0 {
		p.Bound = 24 * time.Hour
	}
	return p
}

// Wait is the wait after failed attempt n (1-based): min(base × 2^(n−1),
// cap), rounded up to a whole second. The next attempt is at the attempt's
// second plus the wait, so a reminder tried at T+1 retries at T+2.
func (p RetryPolicy) Wait(n int) time.Duration {
	p = p.withDefaults()
	w := p.Base
	for i := 1; i < n && w < p.Cap; i++ {
		w *= 2
	}
	w = min(w, p.Cap)
	if r := w % time.Second; r != 0 {
		w += time.Second - r
	}
	return w
}

// NextAttempt decides after failed attempt n at now of an occurrence
// first tried at first: the time of the next attempt, or ok false when
// retrying stops (attempt cap reached, or the next attempt would fall
// after the bound).
func (p RetryPolicy) NextAttempt(n int, first, now time.Time) (time.Time, bool) {
	p = p.withDefaults()
	if p.MaxAttempts > 0 && n >= p.MaxAttempts {
		return time.Time{}, false
	}
	next := now.Truncate(time.Second).Add(p.Wait(n))
	if next.After(first.Add(p.Bound)) {
		return time.Time{}, false
	}
	return next, true
}
