package schenotify_test

import (
	"regexp"
	"testing"

	"github.com/langbot-nats/plugins/services/schenotify"
)

var idPattern = regexp.MustCompile(`^[a-hjkmnp-z][a-hjkmnp-z2-9]{5}$`)

func TestIDs(t *testing.T) {
	a := schenotify.DerivedID("i.w.a", "inv-1")
	if a != schenotify.DerivedID("i.w.a", "inv-1") {
		t.Fatal("derived id not stable")
	}
	if a == schenotify.DerivedID("i.w.b", "inv-1") || a == schenotify.DerivedID("i.w.a", "inv-2") {
		t.Fatal("derived id ignores an input")
	}
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ {
		id := schenotify.RandomID()
		if !idPattern.MatchString(id) {
			t.Fatalf("RandomID %q does not match", id)
		}
		seen[id] = true
		d := schenotify.DerivedID("scope", string(rune('a'+i%26))+string(rune(i)))
		if !idPattern.MatchString(d) {
			t.Fatalf("DerivedID %q does not match", d)
		}
	}
	if len(seen) < 1990 {
		t.Fatalf("only %d distinct random ids of 2000", len(seen))
	}
}

func TestNormalizeID(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"k7m2pq", "k7m2pq", true},
		{"K7M2PQ", "k7m2pq", true},
		{"7km2pq", "", false},
		{"k7m2p", "", false},
		{"k7m2pqq", "", false},
		{"k0m2pq", "", false},
		{"k1m2pq", "", false},
		{"klm2pq", "", false},
		{"kim2pq", "", false},
		{"kom2pq", "", false},
		{"all", "", false},
	}
	for _, tt := range tests {
		got, ok := schenotify.NormalizeID(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NormalizeID(%q) = %q %v", tt.in, got, ok)
		}
	}
}
