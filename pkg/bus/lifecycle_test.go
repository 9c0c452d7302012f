package bus_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

func TestLifecycleAttachDisableInvocation(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls)}, bus.Deps{})
	b1 := bindingFor("i", "w", "n", 1, 1)
	sc := bus.ScopeOf(b1)
	h.attach(b1, true, `{"language":"en_US"}`)
	a := h.waitAuthority(sc, func(a *bus.Authority) bool { return a != nil })
	if a.State != bus.StateActive || a.LifecycleSeq == 0 || string(a.Config) != `{"language":"en_US"}` {
		t.Fatalf("after attach: %+v", a)
	}
	if _, err := h.command(b1, "a1"); err != nil {
		t.Fatalf("active binding refused: %v", err)
	}

	h.revoke(b1, wire.ReasonDisable)
	h.waitAuthority(sc, func(a *bus.Authority) bool { return a.State == bus.StateDisabled })
	h.waitLifecycleDrained()
	if _, err := h.command(b1, "a2"); !errors.Is(err, wire.ErrBindingRefused) {
		t.Fatalf("equal binding of a disabled authority: %v, want 403", err)
	}
	// an invocation with a newer binding revives it
	b2 := bindingFor("i", "w", "n", 1, 2)
	if _, err := h.command(b2, "a3"); err != nil {
		t.Fatalf("newer binding: %v", err)
	}
	a = h.waitAuthority(sc, func(a *bus.Authority) bool { return a.State == bus.StateActive })
	if a.Binding != b2 {
		t.Fatalf("authority binding %+v, want %+v", a.Binding, b2)
	}
	// an older binding is refused now
	if _, err := h.command(b1, "a4"); !errors.Is(err, wire.ErrBindingRefused) {
		t.Fatalf("older binding: %v, want 403", err)
	}
}

// TestLateRevokeOfOlderRevisionIsNoop is the original plugin's bug: the
// revoke of revision 1 arriving after revision 2 was attached must not stop
// revision 2.
func TestLateRevokeOfOlderRevisionIsNoop(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls)}, bus.Deps{})
	b1, b2 := bindingFor("i", "w", "n", 1, 1), bindingFor("i", "w", "n", 1, 2)
	h.attach(b1, true, `{}`)
	h.attach(b2, true, `{}`)
	h.revoke(b1, wire.ReasonUpgrade)
	h.waitLifecycleDrained()
	a := h.waitAuthority(bus.ScopeOf(b2), func(a *bus.Authority) bool { return a != nil })
	if a.State != bus.StateActive || a.Binding != b2 {
		t.Fatalf("late revoke changed the authority: %+v", a)
	}
	if _, err := h.command(b2, "x"); err != nil {
		t.Fatalf("revision 2 refused after a late revoke: %v", err)
	}
}

// TestLifecycleOutOfOrder applies messages to the store in a shuffled
// order, as two replicas sharing the consumer may: the result is the one
// the highest sequence dictates.
func TestLifecycleOutOfOrder(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls)}, bus.Deps{})
	store := bus.NewAuthorityStore(h.runner.KV().Bucket(), nil, nil, nil)
	inputs := []bus.Input{
		{Kind: bus.InputAttach, Binding: bindingFor("i", "w", "n", 1, 1), Enabled: true, Seq: 1},
		{Kind: bus.InputAttach, Binding: bindingFor("i", "w", "n", 1, 2), Enabled: true, Seq: 2},
		{Kind: bus.InputRevoke, Binding: bindingFor("i", "w", "n", 1, 2), Reason: wire.ReasonDisable, Seq: 3},
		{Kind: bus.InputAttach, Binding: bindingFor("i", "w", "n", 1, 3), Enabled: true, Seq: 4},
	}
	for _, order := range [][]int{{3, 2, 1, 0}, {0, 3, 1, 2}, {2, 0, 3, 1}} {
		// fresh scope per order
		sc2, _ := binding.ParseScope("i.w.n" + string(rune('a'+order[0])) + string(rune('a'+order[1])))
		for _, i := range order {
			in := inputs[i]
			in.Binding.InstallationUUID = sc2.Installation()
			if _, _, err := store.Apply(context.Background(), sc2, in); err != nil {
				t.Fatal(err)
			}
		}
		a, err := store.Get(context.Background(), sc2)
		if err != nil {
			t.Fatal(err)
		}
		if a.LifecycleSeq != 4 || a.State != bus.StateActive || a.Binding.RuntimeRevision != 3 {
			t.Fatalf("order %v: %+v", order, a)
		}
	}
}

// TestLifecycleConcurrentReplicasConverge runs two runners on one consumer
// and many lifecycle messages for several scopes; every scope ends as its
// last message says.
func TestLifecycleConcurrentReplicasConverge(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls)}, bus.Deps{})
	second, err := bus.NewRunner(bus.RunnerConfig{Plugin: plugin, Handlers: countingHandlers(&calls)}, bus.Deps{Conn: h.srv.Conn(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Shutdown(context.Background()) })
	var wg sync.WaitGroup
	for s := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst := "n" + string(rune('a'+s))
			for rev := int64(1); rev <= 8; rev++ {
				h.attach(bindingFor("i", "w", inst, 1, rev), rev%2 == 0, `{}`)
			}
		}()
	}
	wg.Wait()
	h.waitLifecycleDrained()
	for s := range 5 {
		sc := bus.ScopeOf(bindingFor("i", "w", "n"+string(rune('a'+s)), 1, 1))
		a := h.waitAuthority(sc, func(a *bus.Authority) bool { return a != nil })
		if a.Binding.RuntimeRevision != 8 || a.State != bus.StateActive {
			t.Errorf("scope %s ended as %+v, want revision 8 active", sc, a)
		}
	}
}

func TestUninstallPurgesOnlyThatScope(t *testing.T) {
	var calls atomic.Int64
	var purged []string
	var mu sync.Mutex
	cfg := bus.RunnerConfig{Handlers: countingHandlers(&calls), Purge: func(ctx context.Context, sc binding.Scope) error {
		mu.Lock()
		purged = append(purged, sc.String())
		mu.Unlock()
		return nil
	}}
	h := newHarness(t, cfg, bus.Deps{})
	a, b := bindingFor("i", "w", "victim", 1, 1), bindingFor("i", "w", "bystander", 1, 1)
	for _, bd := range []binding.Binding{a, b} {
		h.attach(bd, true, `{}`)
		h.waitAuthority(bus.ScopeOf(bd), func(x *bus.Authority) bool { return x != nil })
		if _, err := h.command(bd, "setup-"+bd.InstallationUUID); err != nil {
			t.Fatal(err)
		}
		if _, err := h.runner.KV().Create(context.Background(), bus.ScopeOf(bd), "thing", []byte(`{}`), "t1"); err != nil {
			t.Fatal(err)
		}
	}
	h.revoke(a, wire.ReasonUninstall)
	h.waitAuthority(bus.ScopeOf(a), func(x *bus.Authority) bool { return x.State == bus.StateRemoved })
	h.waitLifecycleDrained()

	got := keys(t, h.js, bus.Bucket(plugin))
	slices.Sort(got)
	want := []string{"i.w.bystander.authority", "i.w.bystander.thing.t1", "i.w.victim.authority"}
	if !slices.Equal(got, want) {
		t.Fatalf("keys after uninstall = %v, want %v", got, want)
	}
	ded := keys(t, h.js, bus.DedupeBucket(plugin))
	if len(ded) != 1 || ded[0][:len("i.w.bystander.")] != "i.w.bystander." {
		t.Fatalf("dedupe keys after uninstall = %v", ded)
	}
	mu.Lock()
	if !slices.Equal(purged, []string{"i.w.victim"}) {
		t.Fatalf("service purge called for %v", purged)
	}
	mu.Unlock()
	tomb, _ := h.runner.Authority(context.Background(), bus.ScopeOf(a))
	if tomb.Config != nil {
		t.Fatalf("tombstone keeps config %s", tomb.Config)
	}
	before := calls.Load()
	for _, bd := range []binding.Binding{a, bindingFor("i", "w", "victim", 1, 9)} {
		if _, err := h.command(bd, "after-"+bd.ArtifactDigest+string(rune(bd.RuntimeRevision))); !errors.Is(err, wire.ErrBindingRefused) {
			t.Fatalf("tombstoned scope served: %v", err)
		}
	}
	if calls.Load() != before {
		t.Fatal("handler ran for a tombstoned scope")
	}
	// a re-attach never revives a tombstone
	h.attach(bindingFor("i", "w", "victim", 1, 10), true, `{}`)
	h.waitLifecycleDrained()
	if x, _ := h.runner.Authority(context.Background(), bus.ScopeOf(a)); x.State != bus.StateRemoved {
		t.Fatalf("attach revived a tombstone: %+v", x)
	}
	if _, err := h.command(b, "bystander-after"); err != nil {
		t.Fatalf("bystander refused: %v", err)
	}
}

// TestRetentionRemovesStaleInstallations: with a 30-day retention, an
// installation whose attach was refreshed survives, one that was not is
// removed as by a revoke uninstall (tombstone, purge of its keys, the
// service's purge and transition), and the refreshed one goes in its turn
// once it stops refreshing.
func TestRetentionRemovesStaleInstallations(t *testing.T) {
	const day = 24 * time.Hour
	clock := bustest.FixedClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var calls atomic.Int64
	var mu sync.Mutex
	var purged, removed []string
	cfg := bus.RunnerConfig{
		Handlers:  countingHandlers(&calls),
		Retention: 30 * day,
		// only the explicit sweeps below run
		RetentionSweep: 10000 * time.Hour,
		Purge: func(ctx context.Context, sc binding.Scope) error {
			mu.Lock()
			purged = append(purged, sc.String())
			mu.Unlock()
			return nil
		},
		OnTransition: func(ctx context.Context, sc binding.Scope, prev *bus.Authority, next bus.Authority) error {
			if next.State == bus.StateRemoved {
				mu.Lock()
				removed = append(removed, sc.String())
				mu.Unlock()
			}
			return nil
		},
	}
	h := newHarness(t, cfg, bus.Deps{Clock: clock.Now})
	stale, live := bindingFor("i", "w", "stale", 1, 1), bindingFor("i", "w", "live", 1, 1)
	for _, bd := range []binding.Binding{stale, live} {
		h.attach(bd, true, `{}`)
		h.waitAuthority(bus.ScopeOf(bd), func(x *bus.Authority) bool { return x != nil })
		if _, err := h.command(bd, "setup-"+bd.InstallationUUID); err != nil {
			t.Fatal(err)
		}
		if _, err := h.runner.KV().Create(context.Background(), bus.ScopeOf(bd), "thing", []byte(`{}`), "t1"); err != nil {
			t.Fatal(err)
		}
	}
	h.waitLifecycleDrained()

	// day 20: the live installation's package refreshes its attach
	clock.Advance(20 * day)
	refreshed := clock.Now()
	h.attach(live, true, `{}`)
	h.waitAuthority(bus.ScopeOf(live), func(x *bus.Authority) bool { return x.UpdatedAt.Equal(refreshed) })
	h.waitLifecycleDrained()
	sweep := func(want int) {
		t.Helper()
		n, err := h.runner.SweepRetention(context.Background())
		if err != nil || n != want {
			t.Fatalf("sweep at %v: removed %d, %v; want %d", clock.Now(), n, err, want)
		}
	}
	// day 29: nothing is older than 30 days yet
	clock.Advance(9 * day)
	sweep(0)

	// day 31: the stale one goes, the refreshed one stays
	clock.Advance(2 * day)
	sweep(1)
	tomb, err := h.runner.Authority(context.Background(), bus.ScopeOf(stale))
	if err != nil || tomb.State != bus.StateRemoved || tomb.Config != nil {
		t.Fatalf("stale authority after the sweep: %+v, %v", tomb, err)
	}
	if a, _ := h.runner.Authority(context.Background(), bus.ScopeOf(live)); a.State != bus.StateActive {
		t.Fatalf("refreshed authority after the sweep: %+v", a)
	}
	got := keys(t, h.js, bus.Bucket(plugin))
	slices.Sort(got)
	if want := []string{"i.w.live.authority", "i.w.live.thing.t1", "i.w.stale.authority"}; !slices.Equal(got, want) {
		t.Fatalf("keys after the sweep = %v, want %v", got, want)
	}
	for _, k := range keys(t, h.js, bus.DedupeBucket(plugin)) {
		if strings.HasPrefix(k, "i.w.stale.") {
			t.Fatalf("dedupe key %s of the removed scope survived", k)
		}
	}
	mu.Lock()
	if !slices.Equal(purged, []string{"i.w.stale"}) || !slices.Equal(removed, []string{"i.w.stale"}) {
		t.Fatalf("service purge for %v, removal transitions for %v; want i.w.stale once", purged, removed)
	}
	mu.Unlock()
	if _, err := h.command(stale, "after-stale"); !errors.Is(err, wire.ErrBindingRefused) {
		t.Fatalf("removed installation served: %v", err)
	}
	if _, err := h.command(live, "after-live"); err != nil {
		t.Fatalf("refreshed installation refused: %v", err)
	}
	// an attach after removal does not revive it (a reinstall has a new uuid)
	h.attach(stale, true, `{}`)
	h.waitLifecycleDrained()
	if a, _ := h.runner.Authority(context.Background(), bus.ScopeOf(stale)); a.State != bus.StateRemoved {
		t.Fatalf("attach revived a removed installation: %+v", a)
	}

	// day 51: the live one stopped refreshing on day 20
	clock.Advance(20 * day)
	sweep(1)
	if a, _ := h.runner.Authority(context.Background(), bus.ScopeOf(live)); a.State != bus.StateRemoved {
		t.Fatalf("installation not attached for 31 days: %+v", a)
	}
}

// TestRetentionOffByDefault: without a retention nothing is ever removed,
// however old the records.
func TestRetentionOffByDefault(t *testing.T) {
	clock := bustest.FixedClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls)}, bus.Deps{Clock: clock.Now})
	b := bindingFor("i", "w", "n", 1, 1)
	h.attach(b, true, `{}`)
	h.waitAuthority(bus.ScopeOf(b), func(x *bus.Authority) bool { return x != nil })
	clock.Advance(10 * 365 * 24 * time.Hour)
	if n, err := h.runner.SweepRetention(context.Background()); n != 0 || err != nil {
		t.Fatalf("sweep without retention: removed %d, %v", n, err)
	}
	if a, _ := h.runner.Authority(context.Background(), bus.ScopeOf(b)); a.State != bus.StateActive {
		t.Fatalf("authority after ten years without retention: %+v", a)
	}
	if _, err := h.command(b, "still-there"); err != nil {
		t.Fatal(err)
	}
}

// TestRetentionBackgroundSweep: the runner's own periodic sweep removes a
// stale installation without being called.
func TestRetentionBackgroundSweep(t *testing.T) {
	clock := bustest.FixedClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls), Retention: bus.MinRetention, RetentionSweep: 20 * time.Millisecond},
		bus.Deps{Clock: clock.Now})
	b := bindingFor("i", "w", "n", 1, 1)
	h.attach(b, true, `{}`)
	h.waitAuthority(bus.ScopeOf(b), func(x *bus.Authority) bool { return x != nil })
	clock.Advance(bus.MinRetention + time.Minute)
	h.waitAuthority(bus.ScopeOf(b), func(x *bus.Authority) bool { return x.State == bus.StateRemoved })
}

func TestRetentionBelowMinimumRefused(t *testing.T) {
	srv := bustest.NewServer(t)
	for _, d := range []time.Duration{time.Minute, 23 * time.Hour, -time.Hour} {
		_, err := bus.NewRunner(bus.RunnerConfig{Plugin: plugin, Retention: d}, bus.Deps{Conn: srv.Conn(t)})
		if !errors.Is(err, bus.ErrInvalidConfig) {
			t.Errorf("retention %v: %v, want %v", d, err, bus.ErrInvalidConfig)
		}
	}
}
