package console

import (
	"fmt"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/httpserve"
)

// TestLimiterBounded: three times maxLimitKeys distinct keys at one
// instant leave at most maxLimitKeys keys, the keys past the bound are
// refused (the limiter fails closed), and once the buckets refill a new key
// is admitted again; an idle limiter drops its refilled keys within
// limitSweepEvery even below the bound.
func TestLimiterBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := newLimiter(2, 2, func() time.Time { return now })
	refused := 0
	for i := range 3 * maxLimitKeys {
		if !l.allow(httpserve.LimitKeyOf("scope", fmt.Sprint(i))) {
			refused++
		}
	}
	if n := l.len(); n > maxLimitKeys {
		t.Fatalf("%d keys held, want at most %d", n, maxLimitKeys)
	}
	if refused != 2*maxLimitKeys {
		t.Fatalf("%d new keys refused past the bound, want %d", refused, 2*maxLimitKeys)
	}
	now = now.Add(time.Second) // every bucket has refilled
	if !l.allow(httpserve.LimitKeyOf("scope", "late")) {
		t.Fatal("a new key was refused after the buckets refilled")
	}
	if n := l.len(); n != 1 {
		t.Fatalf("%d keys after the sweep, want 1", n)
	}
	now = now.Add(limitSweepEvery)
	l.allow(httpserve.LimitKeyOf("scope", "other"))
	if n := l.len(); n != 1 {
		t.Fatalf("%d keys after a periodic sweep, want 1 (the idle one dropped)", n)
	}
}
