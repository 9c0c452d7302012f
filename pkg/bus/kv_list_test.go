package bus_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

func TestKVListReadsOneScopeAndKind(t *testing.T) {
	ctx := context.Background()
	srv := bustest.NewServer(t)
	nc := srv.Conn(t)
	js := srv.JetStream(t)
	bucket, err := bus.EnsureBucket(ctx, js, "list_test", bus.BucketSpec{})
	if err != nil {
		t.Fatal(err)
	}
	kv := bus.NewKV(nc, bucket)
	a := bus.ScopeOf(bindingFor("i", "w", "a", 1, 1))
	b := bus.ScopeOf(bindingFor("i", "w", "b", 1, 1))

	if got, err := kv.List(ctx, a, "session"); err != nil || len(got) != 0 {
		t.Fatalf("empty scope: %v, %v", got, err)
	}
	want := map[string]uint64{}
	for _, id := range []string{"s1", "s2", "s3", "gone", "purged"} {
		rev, err := kv.Create(ctx, a, "session", []byte("a-"+id), id)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = rev
	}
	// a newer value is the one listed
	rev, err := kv.UpdateAt(ctx, a, "session", []byte("a-s2"), want["s2"], "s2")
	if err != nil {
		t.Fatal(err)
	}
	want["s2"] = rev
	if err := kv.Delete(ctx, a, "session", 0, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, a, "session", "purged"); err != nil {
		t.Fatal(err)
	}
	delete(want, "gone")
	delete(want, "purged")
	// other kinds and other scopes stay out
	if _, err := kv.Create(ctx, a, "other", []byte("x"), "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, b, "session", []byte("b-s1"), "s1"); err != nil {
		t.Fatal(err)
	}

	got, err := kv.List(ctx, a, "session")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("listed %+v, want %v", got, want)
	}
	for _, l := range got {
		if rev, ok := want[l.ID]; !ok || rev != l.Revision || string(l.Value) != "a-"+l.ID {
			t.Fatalf("listed %s rev %d %q, want rev %d", l.ID, l.Revision, l.Value, rev)
		}
	}
}

func TestKVListBeyondOneBatch(t *testing.T) {
	ctx := context.Background()
	srv := bustest.NewServer(t)
	nc := srv.Conn(t)
	bucket, err := bus.EnsureBucket(ctx, srv.JetStream(t), "list_many", bus.BucketSpec{})
	if err != nil {
		t.Fatal(err)
	}
	kv := bus.NewKV(nc, bucket)
	sc := bus.ScopeOf(bindingFor("i", "w", "many", 1, 1))
	const n = 1100 // more than the server returns for one batched read
	var want []string
	for i := range n {
		id := fmt.Sprintf("k%04d", i)
		want = append(want, id)
		if _, err := kv.Create(ctx, sc, "session", []byte(id), id); err != nil {
			t.Fatal(err)
		}
	}
	got, err := kv.List(ctx, sc, "session")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range got {
		if string(l.Value) != l.ID {
			t.Fatalf("%s holds %q", l.ID, l.Value)
		}
		ids = append(ids, l.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, want) {
		t.Fatalf("listed %d keys, want %d", len(ids), n)
	}
}
