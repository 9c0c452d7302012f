package console

import (
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/httpserve"
)

// limitKey is a limiter's key (httpserve.LimitKeyOf of what it limits).
type limitKey = httpserve.LimitKey

// Bounds of a limiter's map.
const (
	// maxLimitKeys is the most keys a limiter holds (about 100 bytes
	// each); a new key beyond it is refused until buckets refill.
	maxLimitKeys = 10000
	// limitSweepEvery is how often allow drops refilled buckets even when
	// the map is not full, so an idle key does not stay for good.
	limitSweepEvery = time.Minute
)

// limiter is a set of token buckets by key: rate per second, up to burst.
// It holds at most maxLimitKeys keys of fixed size.
type limiter struct {
	rate, burst float64
	refill      time.Duration // how long an empty bucket takes to fill
	now         func() time.Time

	mu      sync.Mutex
	buckets map[limitKey]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate, burst int, now func() time.Time) *limiter {
	return &limiter{rate: float64(rate), burst: float64(burst), refill: time.Duration(float64(burst) / float64(rate) * float64(time.Second)),
		now: now, buckets: make(map[limitKey]*bucket), swept: now()}
}

// allow takes one token from key's bucket and reports whether there was one.
// A new key when the map is full, after dropping the refilled buckets, is
// refused: the limiter fails closed rather than grow.
func (l *limiter) allow(key limitKey) bool { return l.allowAt(key, l.now()) }

// allowAt is allow as of now: a request checked after its body was read is
// counted at the instant it was admitted, as the checks before the read
// were. A bucket already updated past now is not refilled again.
func (l *limiter) allowAt(key limitKey, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) >= limitSweepEvery {
		l.sweep(now)
	}
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxLimitKeys {
			// one sweep per refill time: a full map refuses new keys in
			// O(1) instead of scanning itself for each
			if now.Sub(l.swept) >= l.refill {
				l.sweep(now)
			}
			if len(l.buckets) >= maxLimitKeys {
				return false
			}
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = min(l.burst, b.tokens+el*l.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// sweep drops the buckets that have refilled: they hold no information.
func (l *limiter) sweep(now time.Time) {
	l.swept = now
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// len is how many keys the limiter holds.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// startReply marks a reply of the token key as being read, or reports false
// when one already is. end, idempotent, unmarks it.
func (h *Handler) startReply(key limitKey) (end func(), ok bool) {
	h.readingMu.Lock()
	defer h.readingMu.Unlock()
	if _, busy := h.reading[key]; busy {
		return nil, false
	}
	h.reading[key] = struct{}{}
	var once sync.Once
	return func() {
		once.Do(func() {
			h.readingMu.Lock()
			delete(h.reading, key)
			h.readingMu.Unlock()
		})
	}, true
}
