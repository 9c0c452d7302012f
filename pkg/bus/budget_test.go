package bus_test

import (
	"context"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// TestDailyBudget: a key is charged once, the limit refuses the next new
// key, another day starts from zero, an earlier day never resets a later
// one, and one installation's count is not another's.
func TestDailyBudget(t *testing.T) {
	ctx := context.Background()
	b := bus.NewDailyBudget(recordsKV(t, "daily_budget"), "aibudget", nil)
	a := bus.ScopeOf(bindingFor("i", "w", "a", 1, 1))
	other := bus.ScopeOf(bindingFor("i", "w", "b", 1, 1))
	charge := func(sc binding.Scope, day, key string) bool {
		t.Helper()
		ok, err := b.Charge(ctx, sc, 2, day, key)
		if err != nil {
			t.Fatalf("charge %s %s: %v", day, key, err)
		}
		return ok
	}
	steps := []struct {
		sc       binding.Scope
		day, key string
		want     bool
	}{
		{a, "2026-12-06", "k1", true},
		{a, "2026-12-06", "k1", true}, // a retry: charged once
		{a, "2026-12-06", "k2", true},
		{a, "2026-12-06", "k3", false}, // the day's two are used
		{a, "2026-12-06", "k1", true},  // still a retry of a charged key
		{other, "2026-12-06", "k3", true},
		{a, "2026-12-05", "k4", false}, // an earlier clock does not reset the later day
		{a, "2026-12-07", "k3", true},  // a new day
	}
	for i, s := range steps {
		if got := charge(s.sc, s.day, s.key); got != s.want {
			t.Fatalf("step %d (%s %s %s): allowed %v, want %v", i, s.sc, s.day, s.key, got, s.want)
		}
	}
}
