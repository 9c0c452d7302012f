package githubkit_test

import (
	"strings"
	"testing"
)

// TestUnsubOldName: GitHub answers a renamed repository's old name with a
// 301 to its id; unsub with the old name finds the subscription stored
// under the new one, by that id.
func TestUnsubOldName(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.fake.AddRepo("o/old", 4242)
	h.addEvents("o/old", 100, "push_full")
	h.fake.Rename("o/old", "o/new")
	if got := h.cmd(a, "sub o/new"); !strings.Contains(got, "o/new") {
		t.Fatalf("sub: %q", got)
	}
	if h.record(a, "o/new") == nil {
		t.Fatal("no record under the new name")
	}
	// another repository of the same installation stays untouched
	h.fake.AddRepo("o/other", 77)
	h.cmd(a, "sub o/other")
	if got := h.cmd(a, "unsub o/old"); !strings.Contains(got, "Unsubscribed this chat from o/new") {
		t.Fatalf("unsub by the old name: %q", got)
	}
	if h.record(a, "o/new") != nil || h.record(a, "o/other") == nil {
		t.Fatal("wrong record removed")
	}
	// a name GitHub does not know: still "not subscribed", nothing changes
	if got := h.cmd(a, "unsub o/never"); !strings.Contains(got, "not subscribed to o/never") {
		t.Fatalf("unknown repo: %q", got)
	}
	if h.record(a, "o/other") == nil {
		t.Fatal("o/other removed")
	}
}
