package events_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/githubkit/events"
)

func TestParseRepo(t *testing.T) {
	tests := []struct {
		name, in, apiHost, want string
		err                     error
	}{
		{"plain", "octocat/Hello-World", "", "octocat/Hello-World", nil},
		{"trimmed", "  o/r \t", "", "o/r", nil},
		{"url", "https://github.com/o/r", "", "o/r", nil},
		{"url issues", "https://github.com/o/r/issues/5", "", "o/r", nil},
		{"url dot git", "https://github.com/o/r.git", "", "o/r", nil},
		{"dot git upper", "o/r.GIT", "", "o/r", nil},
		{"dot git once", "o/r.git.git", "", "o/r.git", nil},
		{"www", "www.github.com/o/r", "", "o/r", nil},
		{"bare github.com", "github.com/o/r", "", "o/r", nil},
		{"bare upper host", "GitHub.com/o/r", "", "o/r", nil},
		{"http scheme", "http://github.com/o/r", "", "o/r", nil},
		{"query and fragment ignored", "https://github.com/o/r?tab=readme#top", "", "o/r", nil},
		{"enterprise host", "https://ghe.example.com/o/r", "ghe.example.com", "o/r", nil},
		{"enterprise host with port", "https://ghe.example.com:8443/o/r/pulls", "ghe.example.com:8443", "o/r", nil},
		{"dots in name", "o/my.repo_x-1", "", "o/my.repo_x-1", nil},
		{"40 char owner", strings.Repeat("a", 39) + "/r", "", strings.Repeat("a", 39) + "/r", nil},
		{"empty", "", "", "", events.ErrEmptyRepo},
		{"spaces", "   ", "", "", events.ErrEmptyRepo},
		{"owner too long", strings.Repeat("a", 40) + "/r", "", "", events.ErrBadRepo},
		{"wrong host", "https://gitlab.com/o/r", "", "", events.ErrBadRepo},
		{"enterprise host not configured", "https://ghe.example.com/o/r", "", "", events.ErrBadRepo},
		{"dotdot", "o/..", "", "", events.ErrBadRepo},
		{"dot", "o/.", "", "", events.ErrBadRepo},
		{"only .git", "o/.git", "", "", events.ErrBadRepo},
		{"hash", "o/r#x", "", "", events.ErrBadRepo},
		{"question", "o/r?x", "", "", events.ErrBadRepo},
		{"three segments", "o/r/x", "", "", events.ErrBadRepo},
		{"trailing slash", "o/r/", "", "", events.ErrBadRepo},
		{"no slash", "octocat", "", "", events.ErrBadRepo},
		{"url one segment", "https://github.com/o", "", "", events.ErrBadRepo},
		{"url userinfo", "https://u:p@github.com/o/r", "", "", events.ErrBadRepo},
		{"underscore owner", "o_x/r", "", "", events.ErrBadRepo},
		{"unicode", "ö/r", "", "", events.ErrBadRepo},
		{"ftp scheme", "ftp://github.com/o/r", "", "", events.ErrBadRepo},
		{"encoded slash", "https://github.com/o%2Fx/r", "", "", events.ErrBadRepo},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := events.ParseRepo(tc.in, tc.apiHost)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("ParseRepo(%q) error %v, want %v", tc.in, err, tc.err)
			}
			if err == nil && got.String() != tc.want {
				t.Fatalf("ParseRepo(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseIssueNumber(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"5", 5, true}, {"#5", 5, true}, {"2147483647", 2147483647, true},
		{"0", 0, false}, {"-1", 0, false}, {"+5", 0, false}, {"5a", 0, false}, {"1_0", 0, false},
		{"٥", 0, false}, {"##5", 0, false}, {"", 0, false}, {"#", 0, false}, {"05", 0, false},
		{"2147483648", 0, false}, {"99999999999", 0, false}, {" 5", 0, false},
	}
	for _, tc := range tests {
		got, ok := events.ParseIssueNumber(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseIssueNumber(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseUsername(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"@octocat", "octocat", true}, {" octocat ", "octocat", true}, {"a/b", "a/b", true},
		{"@@x", "x", true}, {"@ octocat", "octocat", true}, {"@ @", "", false}, {"", "", false}, {"@", "", false}, {strings.Repeat("é", 100), strings.Repeat("é", 100), true},
		{strings.Repeat("é", 101), "", false},
	}
	for _, tc := range tests {
		got, ok := events.ParseUsername(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseUsername(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseState(t *testing.T) {
	for in, want := range map[string]string{"": "open", "OPEN": "open", "Closed": "closed", "all": "all", "merged": "open"} {
		var words []string
		if in != "" {
			words = []string{in}
		}
		if got := events.ParseState(words); got != want {
			t.Errorf("ParseState(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		name   string
		params []string
		sub    string
		args   []string
	}{
		{"empty", nil, "help", nil},
		{"only gh", []string{"gh"}, "help", nil},
		{"unknown", []string{"frobnicate", "x"}, "help", nil},
		{"upper", []string{"REPO", "o/r"}, "repo", []string{"o/r"}},
		{"mixed case alias", []string{"Sub", "o/r", "push"}, "sub", []string{"o/r", "push"}},
		{"leading gh", []string{"GH", "r", "o/r"}, "repo", []string{"o/r"}},
		{"whitespace", []string{"", "repo\t\to/r\n", "", "\u3000x"}, "repo", []string{"o/r", "x"}},
		{"words inside one param", []string{"issues o/r  closed"}, "issues", []string{"o/r", "closed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := events.ParseCommand(tc.params)
			if got.Sub != tc.sub || !slices.Equal(got.Args, tc.args) {
				t.Fatalf("ParseCommand(%q) = %+v, want %s %q", tc.params, got, tc.sub, tc.args)
			}
		})
	}
}

func TestAliases(t *testing.T) {
	pairs := map[string]string{
		"r": "repo", "pulls": "prs", "pr": "issue", "rel": "releases", "u": "user", "s": "search",
		"subscribe": "sub", "watch": "sub", "unsubscribe": "unsub", "unwatch": "unsub",
		"subscriptions": "subs", "list": "subs", "h": "help",
	}
	for alias, canon := range pairs {
		if got := events.ParseCommand([]string{strings.ToUpper(alias), "x"}).Sub; got != canon {
			t.Errorf("alias %s -> %s, want %s", alias, got, canon)
		}
		if !slices.Contains(events.Aliases(canon), alias) {
			t.Errorf("Aliases(%s) lacks %s", canon, alias)
		}
	}
}

func TestParseFilters(t *testing.T) {
	tests := []struct {
		words, kinds, unknown []string
	}{
		{nil, nil, nil},
		{[]string{"PUSH", "commits", "pr", "Release"}, []string{"push", "pull_request", "release"}, nil},
		{[]string{"branch", "tag", "create", "delete", "review", "comment"}, []string{"branch", "tag", "create", "delete", "review", "issue_comment"}, nil},
		{[]string{"push", "bogus", "Bogus", "x"}, nil, []string{"bogus", "x"}},
		{[]string{"commit_comment", "Commit_Comments", "member", "MEMBERS"}, []string{"commit_comment", "member"}, nil},
		{[]string{"public", "visibility", "wiki", "Gollum", "discussion", "discussions"}, []string{"public", "wiki", "discussion"}, nil},
		{[]string{"visibility", "all", "ci"}, []string{"public", "all", "ci"}, nil},
	}
	for _, tc := range tests {
		k, u := events.ParseFilters(tc.words)
		if !slices.Equal(k, tc.kinds) || !slices.Equal(u, tc.unknown) {
			t.Errorf("ParseFilters(%q) = %q, %q; want %q, %q", tc.words, k, u, tc.kinds, tc.unknown)
		}
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		kinds        []string
		typ, refType string
		want         bool
	}{
		{nil, "GollumEvent", "", true},
		{[]string{"push"}, "PushEvent", "", true},
		{[]string{"push"}, "PullRequestEvent", "", false},
		{[]string{"branch"}, "CreateEvent", "branch", true},
		{[]string{"branch"}, "CreateEvent", "tag", false},
		{[]string{"tag"}, "DeleteEvent", "tag", true},
		{[]string{"create"}, "CreateEvent", "tag", true},
		{[]string{"delete"}, "CreateEvent", "tag", false},
		{[]string{"review"}, "PullRequestReviewCommentEvent", "", true},
		{[]string{"review"}, "PullRequestReviewEvent", "", true},
		{[]string{"star"}, "WatchEvent", "", true},
		{[]string{"issue_comment"}, "IssueCommentEvent", "", true},
		{[]string{"commit_comment"}, "CommitCommentEvent", "", true},
		{[]string{"commit_comment"}, "IssueCommentEvent", "", false},
		{[]string{"issue_comment"}, "CommitCommentEvent", "", false},
		{[]string{"member"}, "MemberEvent", "", true},
		{[]string{"member"}, "PublicEvent", "", false},
		{[]string{"public"}, "PublicEvent", "", true},
		{[]string{"public"}, "MemberEvent", "", false},
		{[]string{"wiki"}, "GollumEvent", "", true},
		{[]string{"wiki"}, "DiscussionEvent", "", false},
		{[]string{"discussion"}, "DiscussionEvent", "", true},
		{[]string{"discussion"}, "IssuesEvent", "", false},
		{[]string{"push", "wiki"}, "GollumEvent", "", true},
		{[]string{"ci"}, "GollumEvent", "", false},
		{[]string{"all"}, "DiscussionEvent", "", true},
	}
	for _, tc := range tests {
		if got := events.Matches(tc.kinds, tc.typ, tc.refType); got != tc.want {
			t.Errorf("Matches(%q, %s, %s) = %v", tc.kinds, tc.typ, tc.refType, got)
		}
	}
}

func TestParsedArg(t *testing.T) {
	p := events.ParseCommand([]string{"hook", "acme", "off"})
	for i, want := range []string{"acme", "off", "", ""} {
		if got := p.Arg(i); got != want {
			t.Errorf("Arg(%d) = %q, want %q", i, got, want)
		}
	}
	if got := (events.Parsed{}).Arg(0); got != "" {
		t.Errorf("Arg(0) of no words = %q", got)
	}
}
