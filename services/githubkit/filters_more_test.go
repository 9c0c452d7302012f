package githubkit_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// TestParseRicherFilters: workflow:, conclusion:, author:, actor:,
// -actor: and path: parse, fold as documented, turn CI on when they are
// about CI, and refuse what they cannot read.
func TestParseRicherFilters(t *testing.T) {
	tests := []struct {
		name  string
		words []string
		kinds []string
		ref   *events.Refine
		bad   []string
	}{
		{"workflow turns ci on", []string{"workflow:Deploy,ci*"}, []string{"ci"}, &events.Refine{Workflows: []string{"deploy", "ci*"}}, nil},
		{"conclusion keeps ci_all", []string{"ci_all", "conclusion:Failure,cancelled"}, []string{"ci_all"}, &events.Refine{Conclusions: []string{"failure", "cancelled"}}, nil},
		{"conclusion with other kinds", []string{"push", "conclusions:timed_out"}, []string{"push", "ci"}, &events.Refine{Conclusions: []string{"timed_out"}}, nil},
		{"unknown conclusion", []string{"conclusion:failure,broken"}, nil, nil, []string{"conclusion:failure,broken"}},
		{"people", []string{"pr", "author:Alice", "-actor:dependabot[bot]", "actors:hubot,octo*"}, []string{"pull_request"},
			&events.Refine{Authors: []string{"alice"}, NotActors: []string{"dependabot[bot]"}, Actors: []string{"hubot", "octo*"}}, nil},
		{"paths keep case", []string{"push", "path:docs/**,README.md", "paths:Docs/*"}, []string{"push"}, &events.Refine{Paths: []string{"docs/**", "README.md", "Docs/*"}}, nil},
		{"empty path", []string{"path:"}, nil, nil, []string{"path:"}},
		{"workflow is still a kind word", []string{"workflow"}, []string{"ci"}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kinds, ref, bad := events.ParseSubscription(tc.words)
			if !slices.Equal(kinds, tc.kinds) || !reflect.DeepEqual(ref, tc.ref) || !slices.Equal(bad, tc.bad) {
				t.Fatalf("got %q %+v %q, want %q %+v %q", kinds, ref, bad, tc.kinds, tc.ref, tc.bad)
			}
			if ref != nil {
				_, again, _ := events.ParseSubscription(ref.Words())
				if !reflect.DeepEqual(again, ref) {
					t.Fatalf("Words %q re-parse to %+v", ref.Words(), again)
				}
			}
		})
	}
}

func activityOf(t *testing.T, typ, actor string, payload any) events.Activity {
	t.Helper()
	var e ghclient.Event
	if err := json.Unmarshal(fakegithub.RawEvent(typ, 1, actor, payload), &e); err != nil {
		t.Fatal(err)
	}
	return events.FromEvent(e, nil)
}

// TestRicherFiltersAllow: author: reads the item's author, actor: and
// -actor: the actor of any event, path: a webhook push's files; a polled
// push (no files) passes path:, a trimmed PR (no author) fails author:.
func TestRicherFiltersAllow(t *testing.T) {
	ref := &events.Refine{Authors: []string{"alice"}, NotActors: []string{"dependabot[bot]"}, Paths: []string{"docs/**"}}
	issue := func(author string) map[string]any {
		return map[string]any{"action": "opened", "issue": map[string]any{"number": 1, "title": "t", "user": map[string]any{"login": author}}}
	}
	push := func(files ...string) map[string]any {
		return map[string]any{"ref": "refs/heads/main", "before": "6dcb09b5b57875f334f61aebed695e2e4193db5e", "after": "7a8f3ac80e2ad2f6842cb86f576d4bfe2c03e300",
			"commits": []any{map[string]any{"id": "7a8f3ac80e2ad2f6842cb86f576d4bfe2c03e300", "message": "m", "added": []string{}, "removed": []string{}, "modified": files}}}
	}
	cases := []struct {
		name string
		a    events.Activity
		want bool
	}{
		{"issue by alice", activityOf(t, "IssuesEvent", "hubot", issue("Alice")), true},
		{"issue by bob", activityOf(t, "IssuesEvent", "hubot", issue("bob")), false},
		{"issue by alice, done by the bot", activityOf(t, "IssuesEvent", "dependabot[bot]", issue("alice")), false},
		{"trimmed PR names no author", activityOf(t, "PullRequestEvent", "alice", map[string]any{"action": "opened", "number": 3, "pull_request": map[string]any{"number": 3}}), false},
		{"star by someone: author: does not apply", activityOf(t, "WatchEvent", "bob", map[string]any{"action": "started"}), true},
		{"star by the bot", activityOf(t, "WatchEvent", "Dependabot[bot]", map[string]any{"action": "started"}), false},
		{"webhook push touching docs", activityOf(t, "PushEvent", "bob", push("README.md", "docs/guide/intro.md")), true},
		{"webhook push elsewhere", activityOf(t, "PushEvent", "bob", push("src/main.go")), false},
		{"polled push, files unknown", activityOf(t, "PushEvent", "bob", map[string]any{"ref": "refs/heads/main", "head": "7a8f3ac80e2ad2f6842cb86f576d4bfe2c03e300", "before": "6dcb09b5b57875f334f61aebed695e2e4193db5e"}), true},
	}
	for _, c := range cases {
		if got := ref.Allows(c.a); got != c.want {
			t.Errorf("%s: Allows = %v, want %v (%+v)", c.name, got, c.want, c.a)
		}
	}
	// compare's files decide for a polled push
	var e ghclient.Event
	_ = json.Unmarshal(fakegithub.RawEvent("PushEvent", 1, "bob", map[string]any{"ref": "refs/heads/main", "head": "7a8f3ac80e2ad2f6842cb86f576d4bfe2c03e300", "before": "6dcb09b5b57875f334f61aebed695e2e4193db5e"}), &e)
	a := events.FromEvent(e, &events.Enrichment{Files: []string{"src/x.go"}, FilesKnown: true})
	if ref.Allows(a) {
		t.Error("a polled push compare says touched src/ only passed path:docs/**")
	}
}

// TestPathFilterCost: path: on a polled push costs one compare request
// per push in the new range (the Events API lists no files), only for a
// subscription with path:, within the poll's budget of extra calls; the
// files decide. A poll where nothing changed stays one conditional request.
func TestPathFilterCost(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.addEvents(hw, 100, "watch")
	h.cmd(a, "sub "+hw+" push path:docs/**")
	h.fire(a, hw)
	h.fake.SetResponse("/repos/"+hw+"/compare/883efe034920928c47fe18598c01249d1a9fdabd...7a8f3ac80e2ad2f6842cb86f576d4bfe2c03e300", 200,
		`{"status":"ahead","ahead_by":2,"total_commits":2,"commits":[],"files":[{"filename":"src/main.go"}]}`)
	h.fake.SetResponse("/repos/"+hw+"/compare/7a8f3ac80e2ad2f6842cb86f576d4bfe2c03e300...aa218f56b14c9653891f9e74264a383fa43fefbd", 200,
		`{"status":"ahead","ahead_by":1,"total_commits":1,"commits":[],"files":[{"filename":"docs/guide.md","previous_filename":"guide.md"}]}`)
	h.addEvents(hw, 101, "push_full", "push_full_branch")
	h.fake.ResetRequests()
	h.fire(a, hw)
	if n := len(h.requestsTo("/repos/" + hw + "/compare/")); n != 2 {
		t.Fatalf("%d compare requests, want one per push", n)
	}
	if n := len(h.fake.Requests()); n != 3 {
		t.Fatalf("%d requests, want the events read and two compares", n)
	}
	text := nthSendText(t, h, 0)
	if !strings.Contains(text, "feature/x") || strings.Contains(text, "to master") {
		t.Fatalf("push lines %q: want only the push touching docs/", text)
	}
	h.fake.ResetRequests()
	h.fire(a, hw)
	if n := len(h.fake.Requests()); n != 1 {
		t.Fatalf("an unchanged poll made %d requests, want 1", n)
	}
}
