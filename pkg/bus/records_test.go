package bus_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

type counter struct {
	N    int      `json:"n"`
	Tags []string `json:"tags,omitempty"`
}

func recordsKV(t *testing.T, bucket string) *bus.KV {
	t.Helper()
	srv := bustest.NewServer(t)
	b, err := bus.EnsureBucket(context.Background(), srv.JetStream(t), bucket, bus.BucketSpec{})
	if err != nil {
		t.Fatal(err)
	}
	kv := bus.NewKV(srv.Conn(t), b)
	t.Cleanup(func() { _ = kv.Close() })
	return kv
}

func TestRecordsGetCreateList(t *testing.T) {
	ctx := context.Background()
	kv := recordsKV(t, "records_basic")
	recs := bus.NewRecords[counter](kv, "counter", bus.RecordsConfig[counter]{})
	a := bus.ScopeOf(bindingFor("i", "w", "a", 1, 1))
	b := bus.ScopeOf(bindingFor("i", "w", "b", 1, 1))

	if v, rev, err := recs.Get(ctx, a, "c1"); v != nil || rev != 0 || err != nil {
		t.Fatalf("missing record: %v, %d, %v", v, rev, err)
	}
	rev, err := recs.Create(ctx, a, &counter{N: 1}, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recs.Create(ctx, a, &counter{N: 2}, "c1"); !bus.IsCASConflict(err) {
		t.Fatalf("second create: %v, want a CAS conflict", err)
	}
	v, got, err := recs.Get(ctx, a, "c1")
	if err != nil || v.N != 1 || got != rev {
		t.Fatalf("Get: %+v, %d, %v; want n 1 at %d", v, got, err, rev)
	}
	if _, err := recs.UpdateAt(ctx, a, &counter{N: 5}, rev+100, "c1"); !bus.IsCASConflict(err) {
		t.Fatalf("UpdateAt a stale revision: %v", err)
	}
	if _, err := recs.Create(ctx, b, &counter{N: 9}, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := recs.Create(ctx, a, &counter{N: 3}, "c2"); err != nil {
		t.Fatal(err)
	}
	listed, err := recs.List(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, l := range listed {
		if l.Err != nil {
			t.Fatal(l.Err)
		}
		sum += l.Value.N
	}
	if len(listed) != 2 || sum != 4 {
		t.Fatalf("List of a: %+v; want c1 and c2 of a only", listed)
	}
	ids, err := recs.IDs(ctx, a)
	slices.Sort(ids)
	if err != nil || !slices.Equal(ids, []string{"c1", "c2"}) {
		t.Fatalf("IDs of a: %v, %v", ids, err)
	}
	if err := recs.Purge(ctx, a, "c2"); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := recs.Get(ctx, a, "c2"); v != nil {
		t.Fatalf("purged record read back: %+v", v)
	}
	if err := recs.Delete(ctx, a, rev, "c1"); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := recs.Get(ctx, a, "c1"); v != nil {
		t.Fatalf("deleted record read back: %+v", v)
	}
}

// TestRecordsUpdateConcurrentSafe runs increments from many goroutines:
// compare-and-set with retry loses none of them.
func TestRecordsUpdateConcurrentSafe(t *testing.T) {
	ctx := context.Background()
	kv := recordsKV(t, "records_update")
	recs := bus.NewRecords[counter](kv, "counter", bus.RecordsConfig[counter]{})
	sc := bus.ScopeOf(bindingFor("i", "w", "a", 1, 1))
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			_, _, err := recs.Update(ctx, sc, func(cur *counter) (*counter, error) {
				if cur == nil {
					return &counter{N: 1}, nil
				}
				return &counter{N: cur.N + 1}, nil
			}, "c")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	v, _, err := recs.Get(ctx, sc, "c")
	if err != nil || v.N != writers {
		t.Fatalf("after %d increments: %+v, %v", writers, v, err)
	}
}

func TestRecordsUpdateNoChangeAndAbort(t *testing.T) {
	ctx := context.Background()
	kv := recordsKV(t, "records_abort")
	recs := bus.NewRecords[counter](kv, "counter", bus.RecordsConfig[counter]{})
	sc := bus.ScopeOf(bindingFor("i", "w", "a", 1, 1))
	rev, err := recs.Create(ctx, sc, &counter{N: 4}, "c")
	if err != nil {
		t.Fatal(err)
	}
	v, got, err := recs.Update(ctx, sc, func(cur *counter) (*counter, error) { return nil, bus.ErrNoChange }, "c")
	if err != nil || v == nil || v.N != 4 || got != rev {
		t.Fatalf("no change: %+v, %d, %v; want the current record at %d", v, got, err, rev)
	}
	stop := errors.New("stop")
	v, _, err = recs.Update(ctx, sc, func(cur *counter) (*counter, error) { return nil, stop }, "c")
	if !errors.Is(err, stop) || v == nil || v.N != 4 {
		t.Fatalf("abort: %+v, %v; want the record fn saw and its error", v, err)
	}
	if _, now, _ := recs.Get(ctx, sc, "c"); now != rev {
		t.Fatalf("revision %d after no change and an abort, want %d", now, rev)
	}
}

func TestRecordsCorrupt(t *testing.T) {
	ctx := context.Background()
	kv := recordsKV(t, "records_corrupt")
	recs := bus.NewRecords[counter](kv, "counter", bus.RecordsConfig[counter]{})
	sc := bus.ScopeOf(bindingFor("i", "w", "a", 1, 1))
	rev, err := kv.Create(ctx, sc, "counter", []byte("{not json"), "bad")
	if err != nil {
		t.Fatal(err)
	}
	if _, got, err := recs.Get(ctx, sc, "bad"); !errors.Is(err, bus.ErrCorruptRecord) || got != rev {
		t.Fatalf("Get: %d, %v; want ErrCorruptRecord at %d", got, err, rev)
	}
	listed, err := recs.List(ctx, sc)
	if err != nil || len(listed) != 1 || !errors.Is(listed[0].Err, bus.ErrCorruptRecord) || listed[0].Value != nil {
		t.Fatalf("List: %+v, %v", listed, err)
	}
	called := false
	if _, _, err := recs.Update(ctx, sc, func(cur *counter) (*counter, error) { called = true; return cur, nil }, "bad"); !errors.Is(err, bus.ErrCorruptRecord) || called {
		t.Fatalf("Update of a corrupt record: %v (fn called %v)", err, called)
	}
}

func TestRecordsEncodeNormalises(t *testing.T) {
	ctx := context.Background()
	kv := recordsKV(t, "records_encode")
	recs := bus.NewRecords[counter](kv, "counter", bus.RecordsConfig[counter]{
		Encode: func(c *counter) ([]byte, error) {
			c.Tags = append(c.Tags, "v1")
			return []byte(`{"n":` + string(rune('0'+c.N)) + `,"tags":["v1"]}`), nil
		},
	})
	sc := bus.ScopeOf(bindingFor("i", "w", "a", 1, 1))
	v, _, err := recs.Update(ctx, sc, func(*counter) (*counter, error) { return &counter{N: 2}, nil }, "c")
	if err != nil || len(v.Tags) != 1 {
		t.Fatalf("Update returned %+v, %v; want the record as Encode left it", v, err)
	}
	if got, _, _ := recs.Get(ctx, sc, "c"); got.N != 2 || len(got.Tags) != 1 {
		t.Fatalf("stored %+v", got)
	}
}

// TestRecordsAmbiguousWrite loses the acknowledgement of an applied write:
// the re-read finds the value meant and the update counts as done. When
// another writer changed the record in between, the update fails with the
// write's error instead of claiming a value that is not stored.
func TestRecordsAmbiguousWrite(t *testing.T) {
	ctx := context.Background()
	kv := recordsKV(t, "records_ambiguous")
	sc := bus.ScopeOf(bindingFor("i", "w", "a", 1, 1))
	var other func() error
	recs := bus.NewRecords[counter](kv, "counter", bus.RecordsConfig[counter]{
		Fault: func(op string, got binding.Scope) error {
			if op != "update.ack" || got != sc {
				return nil
			}
			if other != nil {
				if err := other(); err != nil {
					return err
				}
			}
			return context.DeadlineExceeded
		},
	})
	inc := func(cur *counter) (*counter, error) {
		if cur == nil {
			return &counter{N: 1}, nil
		}
		return &counter{N: cur.N + 1}, nil
	}
	v, rev, err := recs.Update(ctx, sc, inc, "c")
	if err != nil || v.N != 1 || rev == 0 {
		t.Fatalf("ambiguous but applied: %+v, %d, %v; want success", v, rev, err)
	}
	if _, now, _ := recs.Get(ctx, sc, "c"); now != rev {
		t.Fatalf("revision %d, Update said %d", now, rev)
	}
	other = func() error {
		// the record was written; another replica changes it before the
		// lost acknowledgement would have arrived
		_, _, err := kv.Update(ctx, sc, "counter", func([]byte, bool) ([]byte, error) { return []byte(`{"n":41}`), nil }, "c2")
		return err
	}
	if _, _, err := recs.Update(ctx, sc, func(*counter) (*counter, error) { return &counter{N: 7}, nil }, "c2"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ambiguous and overwritten: %v; want the write's error", err)
	}
}
