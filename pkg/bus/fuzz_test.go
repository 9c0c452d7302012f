package bus_test

import (
	"errors"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
)

func FuzzKeyring(f *testing.F) {
	f.Add("k1=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "v1:k1:AAAA")
	f.Add("a=b,c=d", "v1::")
	f.Fuzz(func(t *testing.T, ring, sealed string) {
		kr, err := bus.ParseKeyring(ring)
		if err != nil {
			if !errors.Is(err, bus.ErrKeyring) {
				t.Fatalf("error %v does not wrap ErrKeyring", err)
			}
			return
		}
		sc := bus.ScopeOf(bindingFor("i", "w", "n", 1, 1))
		if _, err := kr.Open(sc, sealed); err == nil && !bus.IsSealed(sealed) {
			t.Fatalf("opened a value that is not sealed: %q", sealed)
		}
		v, err := kr.Seal(sc, []byte(sealed))
		if err != nil {
			t.Fatal(err)
		}
		if pt, err := kr.Open(sc, v); err != nil || string(pt) != sealed {
			t.Fatalf("round trip: %q, %v", pt, err)
		}
	})
}
