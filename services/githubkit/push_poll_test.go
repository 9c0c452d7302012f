package githubkit_test

import (
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// TestPushEnrichmentThroughPoll: a trimmed push whose compare says
// "diverged" is pushed as a force push; a push of 25 commits listing 20
// (head not among them) gets the head's message from one compare call, and
// a push whose payload has count and head makes none.
func TestPushEnrichmentThroughPoll(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.addEvents(hw, 100, "watch")
	h.cmd(a, "sub "+hw+" push")

	before, head := "6dcb09b5b57875f334f61aebed695e2e4193db5e", "4444444444444444444444444444444444444444"
	h.fake.AddEvents(hw, fakegithub.RawEvent("PushEvent", 101, "octocat", map[string]any{
		"repository_id": 1296269, "push_id": 1, "ref": "refs/heads/main", "before": before, "head": head}))
	h.fake.SetResponse("/repos/"+hw+"/compare/"+before+"..."+head, 200, `{"status":"diverged","ahead_by":1,"behind_by":2,"total_commits":1,`+
		`"base_commit":{"sha":"`+before+`","commit":{"message":"Base"}},"commits":[{"sha":"`+head+`","commit":{"message":"Rewrite the greeting\n\nbody"}}]}`)
	h.fake.ResetRequests()
	h.fire(a, hw)
	text := h.sends()[0].SendMessage().MessageChain[0].Text
	if !strings.Contains(text, "⚠ octocat force-pushed main: Rewrite the greeting\n   "+h.fake.URL+"/"+hw+"/compare/6dcb09b5b578...444444444444") {
		t.Fatalf("force push %q", text)
	}

	h.addEvents(hw, 102, "push_many_full", "push_full")
	h.fake.ResetRequests()
	h.fire(a, hw)
	if n := len(h.requestsTo("/repos/" + hw + "/compare/")); n != 1 {
		t.Fatalf("%d compare calls, want 1 (the 25-commit push only)", n)
	}
	text = h.sends()[1].SendMessage().MessageChain[0].Text
	if !strings.Contains(text, "pushed 25 new commits to main: Fix all the bugs") || strings.Contains(text, "Step 20") ||
		!strings.Contains(text, "pushed 2 new commits to master: Make the greeting friendlier") {
		t.Fatalf("digest %q", text)
	}
}
