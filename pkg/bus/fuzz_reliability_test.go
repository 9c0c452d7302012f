package bus_test

import (
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// FuzzParseKey fuzzes KV key parsing (added by the reliability work,
// issue 9): a key that parses, with a kind and ids CheckID accepts, is
// rebuilt exactly by Key. (ParseKey itself is lenient: it reads what is
// stored; seeds keep the lenient finds.) Seeds are in
// testdata/fuzz/FuzzParseKey.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"i.w.n.authority", "i.w.n.reminder.abc", "i.w.n.inv.0123456789abcdef", "i.w.n", "i.w.*.x", "i..n.x", "a.b.c.d.e.f.g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		sc, kind, ids, err := bus.ParseKey(key)
		if err != nil {
			return
		}
		// ParseKey is lenient about id length (it reads what is stored);
		// Key refuses ids CheckID refuses, so the round trip needs valid ids
		for _, id := range append([]string{kind}, ids...) {
			if wire.CheckID(id) != nil {
				return
			}
		}
		got, err := bus.Key(sc, kind, ids...)
		if err != nil || got != key {
			t.Fatalf("round trip %q -> %q, %v", key, got, err)
		}
	})
}
