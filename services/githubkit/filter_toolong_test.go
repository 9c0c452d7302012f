package githubkit_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// Issue 19 (stored sizes): a subscription whose filter word is over
// MaxFilterWordBytes (a 450 KB branch glob, label list or unknown word) is
// refused whole; the reply echoes none of the word and the bucket does not
// change. Unknown words of normal length are repeated cut, at most 5.
func TestOverlongFilterRefused(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	if got := h.cmd(a, "sub "+hw+" push"); !strings.Contains(got, "Subscribed") {
		t.Fatalf("sub reply %q", got)
	}
	before := h.bucketValues()
	// 450 KB each: the request carries the line twice (params, full text)
	big := strings.Repeat("q", 450_000)
	for _, word := range []string{"branch:" + big, "label:" + big, "tag:v" + big, big} {
		got := h.cmd(a, "sub "+hw+" push "+word)
		if !strings.Contains(got, "too long") || strings.Contains(got, "qqqq") || len(got) > 300 {
			t.Errorf("%.10s…: reply %.100q (%d bytes), want too long without the word", word, got, len(got))
		}
	}
	if got := h.cmd(a, "sub "+hw+" "+strings.Repeat("w", 900)+" a b c d e f"); strings.Contains(got, strings.Repeat("w", 61)) || strings.Contains(got, "d, e") {
		t.Errorf("unknown words: reply %q, want each cut to 60 and at most 5", got)
	}
	if after := h.bucketValues(); !reflect.DeepEqual(before, after) {
		t.Errorf("bucket changed: %d keys before, %d after", len(before), len(after))
	}
}

// bucketValues reads every key and value of the plugin bucket.
func (h *harness) bucketValues() map[string]string {
	h.t.Helper()
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(githubkit.Plugin))
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range h.keys(bus.Bucket(githubkit.Plugin)) {
		e, err := kv.Get(context.Background(), k)
		if err != nil {
			h.t.Fatal(err)
		}
		out[k] = string(e.Value())
	}
	return out
}
