package githubkit_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/events"
)

func ids(sel githubkit.Selection) []string {
	var out []string
	for _, e := range sel.Events {
		out = append(out, e.ID)
	}
	return out
}

func TestParseSubscription(t *testing.T) {
	tests := []struct {
		name  string
		words string
		kinds []string
		ref   *events.Refine
		bad   []string
	}{
		{"none", "", nil, nil, nil},
		{"kinds only", "push pr", []string{"push", "pull_request"}, nil, nil},
		{"branches", "push branch:main,release/* branches:dev", []string{"push"},
			&events.Refine{Branches: []string{"main", "release/*", "dev"}}, nil},
		{"labels folded, deduplicated", "issues label:Bug,bug -label:WontFix",
			[]string{"issues"}, &events.Refine{Labels: []string{"bug"}, NotLabels: []string{"wontfix"}}, nil},
		{"tags", "release tag:v*", []string{"release"}, &events.Refine{Tags: []string{"v*"}}, nil},
		{"refinement without kinds", "TAG:v2.*", nil, &events.Refine{Tags: []string{"v2.*"}}, nil},
		{"ci words", "ci actions ci-all", []string{"ci", "ci_all"}, nil, nil},
		{"empty value", "push branch:", nil, nil, []string{"branch:"}},
		{"empty item", "push branch:main,,dev", nil, nil, []string{"branch:main,,dev"}},
		{"too many", "label:a,b,c,d,e,f,g,h,i,j,k", nil, nil, []string{"label:a,b,c,d,e,f,g,h,i,j,k"}},
		{"too long", "tag:" + strings.Repeat("v", 101), nil, nil, []string{"tag:" + strings.Repeat("v", 101)}},
		{"unknown word and bad refinement", "bogus tag:", nil, nil, []string{"bogus", "tag:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kinds, ref, bad := events.ParseSubscription(strings.Fields(tc.words))
			if !slices.Equal(kinds, tc.kinds) || !slices.Equal(bad, tc.bad) {
				t.Fatalf("kinds %q bad %q; want %q %q", kinds, bad, tc.kinds, tc.bad)
			}
			gotJSON, _ := json.Marshal(ref)
			wantJSON, _ := json.Marshal(tc.ref)
			if string(gotJSON) != string(wantJSON) {
				t.Fatalf("refine %s, want %s", gotJSON, wantJSON)
			}
		})
	}
}

// TestRefineBranches: pushes by branch name and glob, several per
// subscription; other kinds pass unchanged.
func TestRefineBranches(t *testing.T) {
	// 101 master, 102 feature/x, 103 release/1.x, 104 tag push, 105 release, 106 create branch feature/x
	evs := eventsOf(t, "push_full", "push_full_branch", "push_distinct_full", "push_tag_full", "release_full", "create_branch")
	for _, tc := range []struct {
		branches []string
		want     []string
	}{
		{[]string{"master"}, []string{"101", "104", "105"}},
		{[]string{"release/*"}, []string{"103", "104", "105"}},
		{[]string{"feature/?"}, []string{"102", "104", "105", "106"}},
		{[]string{"master", "feature/*"}, []string{"101", "102", "104", "105", "106"}},
		{[]string{"Master"}, []string{"104", "105"}}, // git refs are case-sensitive
		{[]string{"*"}, []string{"101", "102", "103", "104", "105", "106"}},
	} {
		got := ids(githubkit.SelectRefined(evs, "100", nil, &events.Refine{Branches: tc.branches}, 0))
		if !slices.Equal(got, tc.want) {
			t.Errorf("branches %q: %q, want %q", tc.branches, got, tc.want)
		}
	}
}

// TestRefineLabels: issues and PRs by label, include and exclude.
func TestRefineLabels(t *testing.T) {
	// 101 issue [bug, help wanted], 102 issue [documentation], 103 PR [enhancement],
	// 104 trimmed PR (labels unknown), 105 issue without labels listed, 106 push
	evs := eventsOf(t, "issue_opened", "issue_labeled", "pr_labeled_full", "pr_opened_trimmed", "issue_closed", "push_full")
	for _, tc := range []struct {
		name string
		ref  events.Refine
		want []string
	}{
		{"include", events.Refine{Labels: []string{"bug"}}, []string{"101", "106"}},
		{"include glob, any case", events.Refine{Labels: []string{"HELP*"}}, []string{"101", "106"}},
		{"include several", events.Refine{Labels: []string{"bug", "enhancement"}}, []string{"101", "103", "106"}},
		{"exclude", events.Refine{NotLabels: []string{"documentation"}}, []string{"101", "103", "104", "105", "106"}},
		{"include and exclude", events.Refine{Labels: []string{"*"}, NotLabels: []string{"help wanted"}}, []string{"102", "103", "106"}},
	} {
		got := ids(githubkit.SelectRefined(evs, "100", nil, &tc.ref, 0))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRefineTags: releases (and tag pushes and creations) by tag pattern.
func TestRefineTags(t *testing.T) {
	// 101 release v1.1.0, 102 release v2.0.0-rc.1, 103 tag push v1.2, 104 create tag v1.2, 105 branch push
	evs := eventsOf(t, "release_full", "release_prerelease", "push_tag_full", "create_tag", "push_full")
	for _, tc := range []struct {
		tags []string
		want []string
	}{
		{[]string{"v1.*"}, []string{"101", "103", "104", "105"}},
		{[]string{"v2.*"}, []string{"102", "105"}},
		{[]string{"*-rc*", "v1.1.0"}, []string{"101", "102", "105"}},
	} {
		got := ids(githubkit.SelectRefined(evs, "100", nil, &events.Refine{Tags: tc.tags}, 0))
		if !slices.Equal(got, tc.want) {
			t.Errorf("tags %q: %q, want %q", tc.tags, got, tc.want)
		}
	}
}

// TestRefineCombined: kinds first, then every refinement, then the cap.
func TestRefineCombined(t *testing.T) {
	evs := eventsOf(t, "push_full", "push_distinct_full", "release_full", "release_prerelease",
		"issue_opened", "issue_labeled", "pr_labeled_full", "watch")
	kinds, ref, bad := events.ParseSubscription(strings.Fields("push release issues pr branch:release/* tag:v2.* label:bug,enhancement -label:help*"))
	if bad != nil {
		t.Fatal(bad)
	}
	// push release/1.x (102), release v2 (104), PR [enhancement] (107); issue 105 has "help wanted"
	if got, want := ids(githubkit.SelectRefined(evs, "100", kinds, ref, 0)), []string{"102", "104", "107"}; !slices.Equal(got, want) {
		t.Fatalf("combined: %q, want %q", got, want)
	}
	// the cap keeps the newest after filtering
	sel := githubkit.SelectRefined(evs, "100", kinds, ref, 2)
	if got := ids(sel); !slices.Equal(got, []string{"104", "107"}) || sel.More != 1 {
		t.Fatalf("capped: %q more %d", got, sel.More)
	}
	// ci alone selects no events
	if got := ids(githubkit.SelectRefined(evs, "100", []string{"ci"}, nil, 0)); got != nil {
		t.Fatalf("ci only: %q", got)
	}
	// all + ci selects every event
	if got := ids(githubkit.SelectRefined(evs, "100", []string{"all", "ci"}, nil, 0)); len(got) != len(evs) {
		t.Fatalf("all ci: %q", got)
	}
}

// TestRefineRecordCompat: a record written before refinements decodes and
// selects as before; one with refinements round-trips.
func TestRefineRecordCompat(t *testing.T) {
	old := `{"v":1,"full_name":"octocat/Hello-World","repo_id":1296269,"head":"100","poll":{"interval_s":300,"not_before":null,"claim_until":null,"transient_failures":0,"permanent_failures":0,"broken":null},` +
		`"subscribers":[{"bot_uuid":"b","target_type":"group","target_id":"g","kinds":["push"],"prefix":"!","cursor":"100","send_failures":0,"added_at":"2026-01-01T00:00:00Z"}]}`
	var r githubkit.RepoRecord
	if err := json.Unmarshal([]byte(old), &r); err != nil {
		t.Fatal(err)
	}
	s := r.Subscribers[0]
	if s.Refine != nil {
		t.Fatalf("old record has refinements %+v", s.Refine)
	}
	evs := eventsOf(t, "push_full", "push_full_branch", "release_full")
	if got := ids(githubkit.SelectRefined(evs, *s.Cursor, s.Kinds, s.Refine, 5)); !slices.Equal(got, []string{"101", "102"}) {
		t.Fatalf("old record selects %q", got)
	}
	s.Refine = &events.Refine{Branches: []string{"feature/*"}, NotLabels: []string{"wip"}}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"refine":{"branches":["feature/*"],"not_labels":["wip"]}`) {
		t.Fatalf("encoded %s", b)
	}
	var back githubkit.RepoRecord
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := ids(githubkit.SelectRefined(evs, "100", back.Subscribers[0].Kinds, back.Subscribers[0].Refine, 5)); !slices.Equal(got, []string{"102"}) {
		t.Fatalf("round-tripped record selects %q", got)
	}
}

func FuzzGlob(f *testing.F) {
	f.Add("release/*", "release/1.x")
	f.Add("*a*b?", "xxaxxbc")
	f.Add("**", "")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		r := &events.Refine{Tags: []string{pattern}}
		a := events.Activity{Type: "ReleaseEvent", Tag: s}
		got := r.Allows(a)
		if pattern == s && !got {
			t.Fatalf("%q does not match itself", s)
		}
		if pattern == "*" && !got {
			t.Fatalf("* does not match %q", s)
		}
	})
}

// FuzzParseSubscription: any words either fail with nothing stored, or give
// refinements within the limits that render and re-parse to themselves.
func FuzzParseSubscription(f *testing.F) {
	f.Add("push branch:main,release/* -label:wontfix tag:v*")
	f.Add("label:,")
	f.Add("ci branch:\x00")
	f.Add("push path:docs/**,README.md author:alice -actor:dependabot[bot] actor:Hubot")
	f.Add("workflow:deploy,CI conclusion:failure,TIMED_OUT")
	f.Add("conclusion:bogus")
	f.Fuzz(func(t *testing.T, line string) {
		kinds, ref, bad := events.ParseSubscription(strings.Fields(line))
		if bad != nil {
			if kinds != nil || ref != nil {
				t.Fatalf("bad %q with kinds %q ref %+v", bad, kinds, ref)
			}
			return
		}
		if ref == nil {
			return
		}
		for _, l := range [][]string{ref.Branches, ref.Labels, ref.NotLabels, ref.Tags, ref.Workflows, ref.Conclusions,
			ref.Authors, ref.Actors, ref.NotActors, ref.Paths} {
			if len(l) > 10 {
				t.Fatalf("%d patterns", len(l))
			}
		}
		words := ref.Words()
		_, again, bad := events.ParseSubscription(words)
		a, _ := json.Marshal(ref)
		b, _ := json.Marshal(again)
		if bad != nil || string(a) != string(b) {
			t.Fatalf("re-parse of %q: %s vs %s (bad %q)", words, a, b, bad)
		}
	})
}
