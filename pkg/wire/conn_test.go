package wire_test

import (
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// FuzzPackageConnName: a name parses only into a valid scope, the one
// written after its last "@" (an independent split), and a scope survives
// the round trip.
func FuzzPackageConnName(f *testing.F) {
	f.Add("langbot-schenotify@inst-1.default.ins-9")
	f.Add("langbot-x@a.b")
	f.Add("langbot-a@b@c.d.e")
	f.Add("langbot-a@c.d.e.f")
	f.Add("nats-py@a.b.c")
	f.Add("langbot-a@*.>.c")
	f.Fuzz(func(t *testing.T, name string) {
		sc, err := wire.ParsePackageConnName(name)
		if err != nil {
			return
		}
		at := strings.LastIndex(name, "@")
		if !strings.HasPrefix(name, "langbot-") || at < 0 || name[at+1:] != sc.String() {
			t.Fatalf("%q parsed to %s", name, sc)
		}
		if _, err := binding.ParseScope(sc.String()); err != nil {
			t.Fatalf("%q parsed to an invalid scope: %v", name, err)
		}
		back, err := wire.ParsePackageConnName(wire.PackageConnName("githubkit", sc))
		if err != nil || back != sc {
			t.Fatalf("round trip of %s: %s %v", sc, back, err)
		}
	})
}
