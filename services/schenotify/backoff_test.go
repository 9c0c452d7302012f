package schenotify_test

import (
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/schenotify"
)

func TestRetryWait(t *testing.T) {
	var p schenotify.RetryPolicy
	want := []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900}
	for i, w := range want {
		if got := p.Wait(i + 1); got != time.Duration(w)*time.Second {
			t.Errorf("Wait(%d) = %v, want %ds", i+1, got, w)
		}
	}
	if got := (schenotify.RetryPolicy{Base: 300 * time.Millisecond}).Wait(1); got != time.Second {
		t.Errorf("sub-second base rounds up: got %v", got)
	}
	if got := p.Wait(1000); got != 900*time.Second {
		t.Errorf("Wait(1000) = %v", got)
	}
}

// TestRetryBound walks an always-failing occurrence with an injected clock:
// retrying ends at the 24 h bound after about 105 attempts.
func TestRetryBound(t *testing.T) {
	var p schenotify.RetryPolicy
	first := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	now := first
	attempts := 1
	for {
		next, ok := p.NextAttempt(attempts, first, now)
		if !ok {
			break
		}
		if !next.After(now) || next.Sub(first) > 24*time.Hour {
			t.Fatalf("attempt %d at %v: next %v", attempts, now, next)
		}
		now = next
		attempts++
	}
	if attempts != 105 {
		t.Errorf("attempts = %d, want 105", attempts)
	}
	if now.Sub(first) > 24*time.Hour || first.Add(24*time.Hour).Sub(now) > 15*time.Minute {
		t.Errorf("last attempt at +%v", now.Sub(first))
	}
}

func TestRetryAttemptCap(t *testing.T) {
	p := schenotify.RetryPolicy{MaxAttempts: 4}
	first := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	now := first
	var gaps []time.Duration
	for n := 1; ; n++ {
		next, ok := p.NextAttempt(n, first, now)
		if !ok {
			if n != 4 {
				t.Fatalf("stopped after attempt %d", n)
			}
			break
		}
		gaps = append(gaps, next.Sub(now))
		now = next
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	for i := range want {
		if gaps[i] != want[i] {
			t.Fatalf("gaps %v want %v", gaps, want)
		}
	}
	if next, _ := p.NextAttempt(1, first, first.Add(300*time.Millisecond)); next != first.Add(time.Second) {
		t.Errorf("fractional now: next %v", next)
	}
}
