package githubkit

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

var update = flag.Bool("update", false, "rewrite golden files")

// checkGolden compares got with testdata/golden/<lang>/<name>.txt.
func checkGolden(t *testing.T, lang, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", lang, name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run with -update)", path, err)
	}
	if got != string(want) {
		t.Errorf("%s mismatch\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func testTexts(t testing.TB, lang string) texts {
	t.Helper()
	cat, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	return texts{events.NewTexts(cat, lang)}
}

// fakeSettings points settings at a fake GitHub.
func fakeSettings(fake *fakegithub.Server, token string) Settings {
	s, _ := NormalizeSettings(json.RawMessage(`{"github_api_url":"`+fake.URL+`","github_token":"`+token+`"}`), true)
	return s
}

func testGitHub() *ghclient.GitHub {
	return ghclient.NewGitHub(ghclient.NewHTTPClient(ghclient.HTTPOptions{AllowPrivateNetworks: true}), 0, nil)
}

// commandCases are the §3.5 outputs, as command lines.
var commandCases = []struct {
	name string
	line string
	prep func(f *fakegithub.Server)
}{
	{"repo", "repo octocat/Hello-World", nil},
	{"repo_nulls", "repo octocat/Hello-World", func(f *fakegithub.Server) {
		f.SetResponse("/repos/octocat/Hello-World", 200, `{"id":1,"full_name":"octocat/Hello-World","description":null,"homepage":"","language":null,"license":null,"stargazers_count":0,"forks_count":0,"subscribers_count":0,"open_issues_count":0,"default_branch":"main","html_url":"https://github.com/octocat/Hello-World"}`)
	}},
	{"repo_usage", "repo", nil},
	{"bad_repo", "repo https://gitlab.com/o/r", nil},
	{"issues", "issues octocat/Hello-World", nil},
	{"issues_closed", "issues octocat/Hello-World closed", nil},
	{"issues_none", "issues octocat/Hello-World", func(f *fakegithub.Server) {
		f.SetResponse("/repos/octocat/Hello-World/issues", 200, `[{"number":9,"title":"only a PR","pull_request":{"url":"https://api.github.com/repos/octocat/Hello-World/pulls/9","html_url":"https://github.com/octocat/Hello-World/pull/9"}}]`)
	}},
	{"issues_usage", "issues", nil},
	{"prs", "prs octocat/Hello-World all", nil},
	{"prs_none", "prs octocat/Hello-World", func(f *fakegithub.Server) { f.SetResponse("/repos/octocat/Hello-World/pulls", 200, `[]`) }},
	{"prs_usage", "prs", nil},
	{"issue", "issue octocat/Hello-World 1347", nil},
	{"issue_pr_open", "issue octocat/Hello-World #1348", nil},
	{"issue_pr_merged", "pr octocat/Hello-World 1290", nil},
	{"issue_no_body", "issue octocat/Hello-World 1349", nil},
	{"issue_long_body", "issue octocat/Hello-World 7", func(f *fakegithub.Server) {
		f.SetResponse("/repos/octocat/Hello-World/issues/7", 200, `{"number":7,"state":"open","title":"Long","user":null,"comments":null,"labels":[],"html_url":"https://github.com/octocat/Hello-World/issues/7","body":"`+strings.Repeat("word ", 100)+`"}`)
	}},
	{"issue_usage", "issue octocat/Hello-World", nil},
	{"issue_bad_number", "issue octocat/Hello-World 0", nil},
	{"releases", "releases octocat/Hello-World", nil},
	{"releases_none", "rel octocat/Hello-World", func(f *fakegithub.Server) { f.SetResponse("/repos/octocat/Hello-World/releases", 200, `[]`) }},
	{"releases_usage", "releases", nil},
	{"user", "user @octocat", nil},
	{"user_bio", "user monalisa", nil},
	{"user_usage", "user", nil},
	{"search", "search hello world", nil},
	{"search_none", "s nothing", func(f *fakegithub.Server) {
		f.SetResponse("/search/repositories", 200, `{"total_count":0,"incomplete_results":false,"items":[]}`)
	}},
	{"search_usage", "search", nil},
	{"search_too_long", "search " + strings.Repeat("x", 257), nil},
	{"help", "", nil},
	{"err_404", "repo octocat/missing", nil},
	{"err_perm", "repo octocat/Hello-World", func(f *fakegithub.Server) {
		f.Inject(fakegithub.Fault{Path: "/repos/", Status: 401, Body: `{"message":"Bad credentials"}`})
	}},
	{"err_rate", "repo octocat/Hello-World", func(f *fakegithub.Server) {
		f.Inject(fakegithub.Fault{Path: "/repos/", Status: 429, Header: mkHeader("Retry-After", "120"), Body: `{"message":"API rate limit exceeded"}`})
	}},
	{"err_generic", "repo octocat/Hello-World", func(f *fakegithub.Server) {
		f.Inject(fakegithub.Fault{Path: "/repos/", Status: 502, Body: `<html><body>Bad gateway</body></html>`})
	}},
	{"err_network", "repo octocat/Hello-World", func(f *fakegithub.Server) { f.Inject(fakegithub.Fault{Reset: true}) }},
	{"repo_noassertion", "repo octocat/Hello-World", func(f *fakegithub.Server) {
		f.SetResponse("/repos/octocat/Hello-World", 200, `{"id":1,"full_name":"octocat/Hello-World","description":"My first repository","language":"Go","license":{"key":"other","name":"Other","spdx_id":"NOASSERTION","url":null},"stargazers_count":80,"forks_count":9,"subscribers_count":3,"open_issues_count":2,"default_branch":"main","html_url":"https://github.com/octocat/Hello-World"}`)
	}},
	{"err_422", "search user:ghost", func(f *fakegithub.Server) {
		f.Inject(fakegithub.Fault{Path: "/search/", Status: 422, Body: `{"message":"Validation Failed","errors":[{"message":"The listed users and repositories cannot be searched either because the resources do not exist or you do not have permission to view them.","resource":"Search","field":"q","code":"invalid"}],"documentation_url":"https://docs.github.com/v3/search/","status":"422"}`})
	}},
	{"err_422_codes", "issues octocat/Hello-World", func(f *fakegithub.Server) {
		f.Inject(fakegithub.Fault{Path: "/repos/", Status: 422, Body: `{"message":"Validation Failed","errors":[{"resource":"Issue","field":"state","code":"invalid"}]}`})
	}},
	{"err_secondary", "repo octocat/Hello-World", func(f *fakegithub.Server) {
		f.Inject(fakegithub.Fault{Path: "/repos/", Status: 403, Header: mkHeader("Retry-After", "60"),
			Body: `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 1234.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"403"}`})
	}},
	{"err_redirect", "repo octocat/Hello-World", func(f *fakegithub.Server) {
		f.Inject(fakegithub.Fault{Path: "/repos/", Status: 301, RedirectTo: "https://elsewhere.example/repos/octocat/Hello-World"})
	}},
	{"issue_control_chars", "issue octocat/Hello-World 8", func(f *fakegithub.Server) {
		f.SetResponse("/repos/octocat/Hello-World/issues/8", 200, `{"number":8,"state":"closed","title":"Crash\ron start\u001b[2J","user":{"login":"octocat"},"comments":1,"labels":[],"html_url":"https://github.com/octocat/Hello-World/issues/8","body":"Steps:\r\n1. start\r\n2. crash\u0007\u202e"}`)
	}},
}

func TestGoldenCommands(t *testing.T) {
	gh := testGitHub()
	for _, lang := range []string{i18n.EnUS, i18n.ZhHans} {
		x := testTexts(t, lang)
		for _, c := range commandCases {
			t.Run(lang+"/"+c.name, func(t *testing.T) {
				fake := fakegithub.New(fakegithub.Options{})
				defer fake.Close()
				if c.prep != nil {
					c.prep(fake)
				}
				s := fakeSettings(fake, "tok")
				p := events.ParseCommand(strings.Fields(c.line))
				got := x.queryCommand(context.Background(), gh, s, p, "!")
				checkGolden(t, lang, c.name, got)
			})
		}
		t.Run(lang+"/others", func(t *testing.T) {
			checkGolden(t, lang, "help_admin", x.Help("/", true))
			checkGolden(t, lang, "err_config", x.APIErrorText(&ghclient.APIError{Code: ghclient.CodeConfig}))
			checkGolden(t, lang, "sub_ok", x.T("sub.ok", "repo", "octocat/Hello-World", "events", x.KindsText([]string{"push", "release"}, "sub.all_events"), "interval", "300", "prefix", "!"))
			checkGolden(t, lang, "sub_ok_all", x.T("sub.ok", "repo", "octocat/Hello-World", "events", x.KindsText(nil, "sub.all_events"), "interval", "120", "prefix", "!"))
			for _, sub := range []string{"sub", "unsub"} {
				checkGolden(t, lang, sub+"_usage", x.Usage(sub, "!"))
			}
			kinds, unknown := events.ParseFilters([]string{"push", "pushes", "Bogus"})
			_ = kinds
			checkGolden(t, lang, "sub_bad_events", x.T("sub.bad_events", "tokens", x.Join(unknown), "valid", x.Join(events.FilterWords())))
			checkGolden(t, lang, "sub_cap_repos", x.T("sub.cap_repos", "max", "50"))
			checkGolden(t, lang, "sub_cap_subscribers", x.T("sub.cap_subscribers", "repo", "octocat/Hello-World", "max", "20"))
			checkGolden(t, lang, "unsub_ok", x.T("unsub.ok", "repo", "octocat/Hello-World"))
			checkGolden(t, lang, "unsub_not_subbed", x.T("unsub.not_subbed", "repo", "octocat/hello-world"))
			checkGolden(t, lang, "admin_only", x.T("err.admin_only"))
			checkGolden(t, lang, "no_bot", x.T("err.no_bot"))
			checkGolden(t, lang, "subs_none", x.SubsList(nil, "!"))
			checkGolden(t, lang, "subs", x.SubsList([]events.SubItem{
				{FullName: "langbot-app/LangBot", Kinds: nil},
				{FullName: "octocat/Hello-World", Kinds: []string{"push", "pull_request"}},
				{FullName: "octocat/gone", Kinds: []string{"release"}, BrokenStatus: 404},
				{FullName: "octocat/linguist", Kinds: []string{"push", "issues", "release", "ci"}, Refine: &events.Refine{
					Branches: []string{"main", "release/*"}, Labels: []string{"bug"}, NotLabels: []string{"wontfix"}, Tags: []string{"v*"}}},
				{FullName: "octocat/spoon-knife", Refine: &events.Refine{Tags: []string{"v2.*"}}},
			}, "!"))
			kinds, ref, _ := events.ParseSubscription([]string{"push", "branch:main,release/*", "-label:wip"})
			checkGolden(t, lang, "sub_ok_refined", x.T("sub.ok", "repo", "octocat/Hello-World", "events", x.FilterText(kinds, ref, "sub.all_events"), "interval", "300", "prefix", "!"))
			checkGolden(t, lang, "push_broken", x.T("push.broken", "repo", "octocat/gone", "status", "404", "prefix", "!"))
		})
	}
}

// eventCases pair each event fixture with an optional enrichment.
var eventCases = []struct {
	name    string
	fixture string
	en      *events.Enrichment
}{
	{"push_full", "push_full", nil},
	{"push_full_branch", "push_full_branch", nil},
	{"push_trimmed", "push_trimmed", nil},
	{"push_trimmed_enriched", "push_trimmed", &events.Enrichment{Commits: 3, HeadMessage: "Fix all the bugs\n\nA long description"}},
	{"push_trimmed_newbranch", "push_trimmed_newbranch", nil},
	{"push_tag_full", "push_tag_full", nil},
	{"pr_opened_full", "pr_opened_full", nil},
	{"pr_closed_full", "pr_closed_full", nil},
	{"pr_merged_full", "pr_merged_full", nil},
	{"pr_reopened_full", "pr_reopened_full", nil},
	{"pr_synchronize_full", "pr_synchronize_full", nil},
	{"pr_opened_trimmed", "pr_opened_trimmed", nil},
	{"pr_opened_trimmed_enriched", "pr_opened_trimmed", &events.Enrichment{HasPR: true, Title: "Update the greeting"}},
	{"pr_closed_trimmed", "pr_closed_trimmed", nil},
	{"pr_closed_trimmed_enriched", "pr_closed_trimmed", &events.Enrichment{HasPR: true, Title: "Speed up the build", Merged: true}},
	{"issue_opened", "issue_opened", nil},
	{"issue_closed", "issue_closed", nil},
	{"issue_reopened", "issue_reopened", nil},
	{"issue_labeled", "issue_labeled", nil},
	{"comment", "comment", nil},
	{"release_full", "release_full", nil},
	{"release_noname", "release_noname", nil},
	{"watch", "watch", nil},
	{"fork", "fork", nil},
	{"create_branch", "create_branch", nil},
	{"create_tag", "create_tag", nil},
	{"create_repo", "create_repo", nil},
	{"delete_branch", "delete_branch", nil},
	{"delete_tag", "delete_tag", nil},
	{"review_approved", "review_approved", nil},
	{"review_changes", "review_changes", nil},
	{"review_commented", "review_commented", nil},
	{"review_dismissed", "review_dismissed", nil},
	{"review_comment", "review_comment", nil},
	{"no_actor", "no_actor", nil},
	{"push_many_full", "push_many_full", nil},
	{"push_many_full_enriched", "push_many_full", &events.Enrichment{HeadMessage: "Step 25 of the migration: done"}},
	{"push_distinct_full", "push_distinct_full", nil},
	{"push_control_chars", "push_control_chars", nil},
	{"push_forced_trimmed", "push_trimmed", &events.Enrichment{Forced: true, HeadMessage: "Rewrite history"}},
	{"pr_opened_draft_full", "pr_opened_draft_full", nil},
	{"pr_review_requested_full", "pr_review_requested_full", nil},
	{"pr_ready_for_review_full", "pr_ready_for_review_full", nil},
	{"pr_labeled_full", "pr_labeled_full", nil},
	{"pr_assigned_full", "pr_assigned_full", nil},
	{"issue_assigned", "issue_assigned", nil},
	{"comment_pr", "comment_pr", nil},
	{"release_prerelease", "release_prerelease", nil},
	{"commit_comment", "commit_comment", nil},
	{"member", "member", nil},
	{"public", "public", nil},
	{"gollum", "gollum", nil},
	{"gollum_many", "gollum_many", nil},
	{"discussion", "discussion", nil},
	{"pr_unlabeled_full", "pr_unlabeled_full", nil},
	{"pr_unassigned_full", "pr_unassigned_full", nil},
	{"pr_review_request_removed_full", "pr_review_request_removed_full", nil},
	{"pr_converted_to_draft_full", "pr_converted_to_draft_full", nil},
	{"gollum_created", "gollum_created", nil},
	{"push_new_branch_one", "push_new_branch_one", nil},
	{"push_new_branch_many", "push_new_branch_many", nil},
}

// goldenLinks are the addresses of the fixtures' repository.
var goldenLinks = events.NewLinks("https://github.com", "octocat/Hello-World")

func fixtureEvent(t testing.TB, name string, id int64) ghclient.Event {
	t.Helper()
	var e ghclient.Event
	if err := json.Unmarshal(fakegithub.Event(name, id), &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestGoldenEvents(t *testing.T) {
	for _, lang := range []string{i18n.EnUS, i18n.ZhHans} {
		x := testTexts(t, lang)
		for _, c := range eventCases {
			t.Run(lang+"/"+c.name, func(t *testing.T) {
				line, ok := x.EventLine(fixtureEvent(t, c.fixture, 1), c.en, goldenLinks)
				if !ok {
					t.Fatalf("%s has no formatter", c.fixture)
				}
				checkGolden(t, lang, "ev_"+c.name, line)
			})
		}
		// webhook deliveries take the path the consumer takes: WebhookEvent,
		// then the poller's formatter (golden ev_hook_<fixture>)
		for _, name := range fakegithub.WebhookFixtures() {
			t.Run(lang+"/hook_"+name, func(t *testing.T) {
				event, body := fakegithub.Webhook(name)
				ev, ok := webhookEvent(event, body)
				if !ok {
					t.Fatalf("%s (%s) not mapped", name, event)
				}
				if ev.Repo.Name != "octocat/Hello-World" || events.FromEvent(ev, nil).Actor == "" {
					t.Fatalf("%s: repo %q, actor %q", name, ev.Repo.Name, events.FromEvent(ev, nil).Actor)
				}
				// the consumer formats without enrichment: the delivery must
				// carry what the line needs
				if _, _, need := events.NeedsCompare(ev); need {
					t.Errorf("%s needs compare", name)
				}
				if _, need := events.NeedsPull(ev); need {
					t.Errorf("%s needs GET pulls", name)
				}
				ev.ID = "1"
				line, ok := x.EventLine(ev, nil, goldenLinks)
				if !ok {
					t.Fatalf("%s (%s) has no formatter", name, ev.Type)
				}
				checkGolden(t, lang, "ev_hook_"+name, line)
			})
		}
		if line, ok := x.EventLine(ghclient.Event{ID: "1", Type: "SponsorshipEvent"}, nil, goldenLinks); ok {
			t.Errorf("SponsorshipEvent formatted as %q, want none", line)
		}
		t.Run(lang+"/ci", func(t *testing.T) {
			run := func(concl string) ghclient.WorkflowRun {
				r := ghclient.WorkflowRun{ID: 9002, Name: "CI", HeadBranch: "main", HeadSHA: "aa218f56b14c9653891f9e74264a383fa43fefbd",
					Status: "completed", Conclusion: concl, RunNumber: 42, RunAttempt: 1, DisplayTitle: "Speed up the build\r\nmore",
					HTMLURL: "https://github.com/octocat/Hello-World/actions/runs/9002"}
				r.TriggeringActor = &struct {
					Login string `json:"login"`
				}{Login: "hubot"}
				return r
			}
			var lines []string
			for _, c := range []string{"failure", "timed_out", "startup_failure", "success", "cancelled", "action_required", "skipped", "neutral", "stale", ""} {
				lines = append(lines, x.CILine(run(c)))
			}
			checkGolden(t, lang, "ci_runs", x.PushMessage("octocat/Hello-World", lines, 0))
		})
		t.Run(lang+"/push_message", func(t *testing.T) {
			a, _ := x.EventLine(fixtureEvent(t, "push_full", 1), nil, goldenLinks)
			b, _ := x.EventLine(fixtureEvent(t, "release_full", 2), nil, goldenLinks)
			checkGolden(t, lang, "push_message", x.PushMessage("octocat/Hello-World", []string{a, b}, 7))
			checkGolden(t, lang, "push_message_one_more", x.PushMessage("octocat/Hello-World", []string{a}, 1))
		})
	}
}

// TestEveryFixtureCovered keeps eventCases in step with the fixtures.
func TestEveryFixtureCovered(t *testing.T) {
	var covered []string
	for _, c := range eventCases {
		covered = append(covered, c.fixture)
	}
	for _, f := range fakegithub.EventFixtures() {
		if !slices.Contains(covered, f) {
			t.Errorf("fixture %s has no golden case", f)
		}
	}
}

// TestGoldensClean scans every golden for values that must never show
// (spec §7.5, AT-36).
func TestGoldensClean(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, bad := range []string{" 0 commit", "null", "None", "<nil>", "{", "}", "推送了 0 个"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q:\n%s", f, bad, s)
			}
		}
	}
}

func TestCatalogueParity(t *testing.T) {
	cat, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if got := cat.Languages(); !slices.Equal(got, []string{i18n.EnUS, i18n.ZhHans}) {
		t.Fatalf("languages %v", got)
	}
	// Every key the code may render exists.
	keys := cat.Keys()
	for _, k := range []string{"misc.sep", "misc.dash", "err.config", "push.more", "ev.review_other", "push.more_one", "help.admin"} {
		if !slices.Contains(keys, k) {
			t.Errorf("missing key %s", k)
		}
	}
}
