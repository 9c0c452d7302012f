package console_test

import (
	"testing"

	"github.com/langbot-nats/plugins/services/takeover/console"
)

// FuzzParseKey fuzzes LANGBOT_CONSOLE_KEY parsing (added by the reliability
// work, issue 9): an accepted key has at least 32 bytes. Seeds are in
// testdata/fuzz/FuzzParseKey.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"", "c2hvcnQ=", "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=", "!!!!", " MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE= "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := console.ParseKey(s)
		if err == nil && len(k) < 32 {
			t.Fatalf("%q accepted as a %d-byte key", s, len(k))
		}
	})
}
