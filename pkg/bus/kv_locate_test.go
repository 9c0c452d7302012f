package bus_test

import (
	"context"
	"errors"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

func TestKVLocateFindsTheScopeOfAnID(t *testing.T) {
	ctx := context.Background()
	srv := bustest.NewServer(t)
	bucket, err := bus.EnsureBucket(ctx, srv.JetStream(t), "locate_test", bus.BucketSpec{})
	if err != nil {
		t.Fatal(err)
	}
	kv := bus.NewKV(srv.Conn(t), bucket)
	a := bus.ScopeOf(bindingFor("i", "w", "a", 1, 1))
	b := bus.ScopeOf(bindingFor("i", "w", "b", 1, 1))
	rev, err := kv.Create(ctx, b, "hook", []byte("of-b"), "id1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, a, "hook", []byte("of-a"), "id2"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, a, "other", []byte("x"), "id1"); err != nil {
		t.Fatal(err)
	}
	sc, v, r, err := kv.Locate(ctx, "hook", "id1")
	if err != nil || sc != b || string(v) != "of-b" || r != rev {
		t.Fatalf("locate id1: %v %q %d %v", sc, v, r, err)
	}
	if _, _, _, err := kv.Locate(ctx, "hook", "nope"); !errors.Is(err, bus.ErrNoScope) {
		t.Fatalf("unknown id: %v", err)
	}
	if err := kv.Delete(ctx, b, "hook", 0, "id1"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := kv.Locate(ctx, "hook", "id1"); !errors.Is(err, bus.ErrNoScope) {
		t.Fatalf("deleted id: %v", err)
	}
	if _, _, _, err := kv.Locate(ctx, "hook", "a.b"); !errors.Is(err, wire.ErrKey) {
		t.Fatalf("unsafe id: %v", err)
	}
}
