package githubkit

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// fixFixture reads testdata/fix/<file>.json, payloads written in the
// shapes GitHub documents for the issue-30 defects (older Events API
// items, Enterprise Server archives, webhook deliveries).
func fixFixture(t testing.TB, file, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fix", file+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	raw, ok := all[name]
	if !ok {
		t.Fatalf("no fixture %s in %s", name, file)
	}
	return raw
}

// TestGoldenDefects renders each issue-30 defect's payload in both
// languages (goldens fix_<name>), and checks the words the defect got
// wrong are gone.
func TestGoldenDefects(t *testing.T) {
	evCases := []struct {
		fixture string
		never   []string // must not appear in the en_US line
	}{
		{"push_tag_deleted", []string{"/releases/tag/"}},
		{"push_no_before", []string{"new branch", "compare/..."}},
		{"push_no_before_one", []string{"new branch"}},
		{"issue_legacy_pr_null", []string{"PR", "/pull/"}},
		{"comment_legacy_pr_null", []string{"PR", "/pull/"}},
		{"review_comment_legacy", []string{"#-"}},
		{"review_comment_legacy_bare", []string{"#-"}},
		{"pr_action_merged", []string{"updated"}},
	}
	for _, lang := range []string{i18n.EnUS, i18n.ZhHans} {
		x := testTexts(t, lang)
		for _, c := range evCases {
			t.Run(lang+"/"+c.fixture, func(t *testing.T) {
				var e ghclient.Event
				if err := json.Unmarshal(fixFixture(t, "events", c.fixture), &e); err != nil {
					t.Fatal(err)
				}
				e.ID = "1"
				line, ok := x.EventLine(e, nil, goldenLinks)
				if !ok {
					t.Fatalf("%s has no formatter", c.fixture)
				}
				if lang == i18n.EnUS {
					for _, bad := range c.never {
						if strings.Contains(line, bad) {
							t.Errorf("%s: %q contains %q", c.fixture, line, bad)
						}
					}
				}
				checkGolden(t, lang, "fix_"+c.fixture, line)
			})
		}
		t.Run(lang+"/workflow_run_noname", func(t *testing.T) {
			var d struct {
				Event string          `json:"event"`
				Body  json.RawMessage `json:"body"`
			}
			if err := json.Unmarshal(fixFixture(t, "webhooks", "workflow_run_noname"), &d); err != nil {
				t.Fatal(err)
			}
			run, ok := webhookRun(d.Event, d.Body)
			if !ok {
				t.Fatal("workflow_run not mapped")
			}
			line := x.CILine(run)
			if !strings.Contains(line, "test #163") || !strings.Contains(line, "octocat") {
				t.Errorf("line %q: want the workflow's name and the sender", line)
			}
			checkGolden(t, lang, "fix_workflow_run_noname", line)
		})
		t.Run(lang+"/run_named_by_path", func(t *testing.T) {
			r := ghclient.WorkflowRun{ID: 7, Path: ".github/workflows/deploy.yaml", HeadBranch: "main", HeadSHA: "3484a3fb7e2f",
				Conclusion: "failure", RunNumber: 12, HTMLURL: "https://github.com/octocat/Hello-World/actions/runs/7"}
			r.Actor = &struct {
				Login string `json:"login"`
			}{Login: "hubot"}
			checkGolden(t, lang, "fix_run_named_by_path", x.CILine(r))
		})
	}
}

// TestGoldenDefectLookups: `!gh prs <repo> closed` names the author, never
// as the merger, and an issue whose pull_request links are null is an
// issue in the lookups.
func TestGoldenDefectLookups(t *testing.T) {
	gh := testGitHub()
	legacy := `{"number":1347,"state":"open","title":"Found a bug","user":{"login":"octocat"},"comments":0,"labels":[],"html_url":"https://github.com/octocat/Hello-World/issues/1347","body":"","pull_request":{"html_url":null,"diff_url":null,"patch_url":null}}`
	cases := []struct {
		name, line string
		prep       func(f *fakegithub.Server)
		never      string
	}{
		{"prs_closed", "prs octocat/Hello-World closed", nil, "merged by"},
		{"issue_legacy_pr_null", "issue octocat/Hello-World 1347", func(f *fakegithub.Server) {
			f.SetResponse("/repos/octocat/Hello-World/issues/1347", 200, legacy)
		}, "Pull request"},
		{"issues_legacy_pr_null", "issues octocat/Hello-World", func(f *fakegithub.Server) {
			f.SetResponse("/repos/octocat/Hello-World/issues", 200, "["+legacy+"]")
		}, "no open issues"},
	}
	for _, lang := range []string{i18n.EnUS, i18n.ZhHans} {
		x := testTexts(t, lang)
		for _, c := range cases {
			t.Run(lang+"/"+c.name, func(t *testing.T) {
				fake := fakegithub.New(fakegithub.Options{})
				defer fake.Close()
				if c.prep != nil {
					c.prep(fake)
				}
				got := x.queryCommand(context.Background(), gh, fakeSettings(fake, "tok"), events.ParseCommand(strings.Fields(c.line)), "!")
				if lang == i18n.EnUS && strings.Contains(got, c.never) {
					t.Errorf("%s: %q contains %q", c.name, got, c.never)
				}
				checkGolden(t, lang, "fix_lookup_"+c.name, got)
			})
		}
	}
}

// TestGoldenRicherFilters: the "fixed again" line and a subscription with
// every new refinement, both languages.
func TestGoldenRicherFilters(t *testing.T) {
	for _, lang := range []string{i18n.EnUS, i18n.ZhHans} {
		x := testTexts(t, lang)
		r := ghclient.WorkflowRun{ID: 9003, Name: "CI", HeadBranch: "main", HeadSHA: "aa218f56b14c9653891f9e74264a383fa43fefbd",
			Status: "completed", Conclusion: "success", RunNumber: 43, RunAttempt: 1, DisplayTitle: "Fix the build",
			HTMLURL: "https://github.com/octocat/Hello-World/actions/runs/9003"}
		r.Actor = &struct {
			Login string `json:"login"`
		}{Login: "hubot"}
		checkGolden(t, lang, "ci_fixed", x.PushMessage("octocat/Hello-World", []string{x.CIFixedLine(r)}, 0))
		kinds, ref, bad := events.ParseSubscription(strings.Fields("push pr workflow:deploy conclusion:failure,cancelled author:alice actor:hubot -actor:dependabot[bot] path:docs/**"))
		if bad != nil {
			t.Fatalf("bad %q", bad)
		}
		checkGolden(t, lang, "sub_ok_refined_more", x.T("sub.ok", "repo", "octocat/Hello-World", "events", x.FilterText(kinds, ref, "sub.all_events"), "interval", "300", "prefix", "!"))
	}
}
