package httpserve_test

import (
	"testing"

	"github.com/langbot-nats/plugins/pkg/httpserve"
)

// TestLimitKeyOf: the key is a function of the parts and of where they
// split, never of their concatenation alone.
func TestLimitKeyOf(t *testing.T) {
	if k1, k2 := httpserve.LimitKeyOf("a", "b"), httpserve.LimitKeyOf("a", "b"); k1 != k2 {
		t.Fatal("same parts, different keys")
	}
	if httpserve.LimitKeyOf("ab", "c") == httpserve.LimitKeyOf("a", "bc") {
		t.Fatal("a different split gave the same key")
	}
	if httpserve.LimitKeyOf("a") == httpserve.LimitKeyOf("a", "") {
		t.Fatal("an empty part is not a part")
	}
}
