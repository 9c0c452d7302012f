package githubkit

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// apiHost is the host of a non-default API URL ("" for api.github.com), whose
// repository links ParseRepo accepts.
func apiHost(s Settings) string {
	if s.APIErr != nil || strings.EqualFold(s.APIURL, ghclient.DefaultAPIURL) {
		return ""
	}
	u, err := url.Parse(s.APIURL)
	if err != nil {
		return ""
	}
	return u.Host
}

// repoArg parses the repository a subcommand names first; on failure it
// returns the reply (the subcommand's usage when there is none).
func (x texts) repoArg(p events.Parsed, prefix string, s Settings) (ghclient.Repo, string, bool) {
	r, err := events.ParseRepo(p.Arg(0), apiHost(s))
	switch {
	case errors.Is(err, events.ErrEmptyRepo):
		return ghclient.Repo{}, x.Usage(p.Sub, prefix), false
	case err != nil:
		return ghclient.Repo{}, x.T("err.bad_repo", "input", events.Echo(p.Arg(0)), "prefix", prefix), false
	}
	return r, "", true
}

// failText renders a GitHub failure.
func (x texts) failText(err error) string {
	var ae *ghclient.APIError
	if errors.As(err, &ae) {
		return x.APIErrorText(ae)
	}
	return x.T("err.network")
}

// queryCommand runs the read-only subcommands (repo, issues, prs, issue,
// releases, user, search, help) and returns the reply text. GitHub failures
// become texts per spec §3.4; it never returns a protocol error.
func (x texts) queryCommand(ctx context.Context, gh *ghclient.GitHub, s Settings, p events.Parsed, prefix string) (out string) {
	// values from GitHub (titles, bodies, descriptions) may carry raw
	// control characters; none reaches the chat
	defer func() { out = events.ChatSafe(out) }()
	needsAPI := func() (ghclient.Target, string, bool) {
		if s.APIErr != nil {
			return ghclient.Target{}, x.T("err.config", "field", "github_api_url"), false
		}
		return ghclient.Target{BaseURL: s.APIURL, Token: s.Token}, "", true
	}
	switch p.Sub {
	case events.SubRepo:
		r, msg, ok := x.repoArg(p, prefix, s)
		if !ok {
			return msg
		}
		t, msg, ok := needsAPI()
		if !ok {
			return msg
		}
		rp, err := gh.Repo(ctx, t, r)
		if err != nil {
			return x.failText(err)
		}
		return x.RepoCard(rp)
	case events.SubIssues, events.SubPRs:
		if len(p.Args) == 0 {
			return x.Usage(p.Sub, prefix)
		}
		r, msg, ok := x.repoArg(p, prefix, s)
		if !ok {
			return msg
		}
		t, msg, ok := needsAPI()
		if !ok {
			return msg
		}
		state := events.ParseState(p.Args[1:])
		if p.Sub == events.SubIssues {
			list, err := gh.Issues(ctx, t, r, state)
			if err != nil {
				return x.failText(err)
			}
			return x.IssuesList(r.String(), state, list)
		}
		list, err := gh.Pulls(ctx, t, r, state)
		if err != nil {
			return x.failText(err)
		}
		return x.PullsList(r.String(), state, list)
	case events.SubIssue:
		if len(p.Args) < 2 {
			return x.Usage(events.SubIssue, prefix)
		}
		r, msg, ok := x.repoArg(p, prefix, s)
		if !ok {
			return msg
		}
		n, ok := events.ParseIssueNumber(p.Arg(1))
		if !ok {
			return x.T("issue.bad_number")
		}
		t, msg, ok := needsAPI()
		if !ok {
			return msg
		}
		is, err := gh.Issue(ctx, t, r, n)
		if err != nil {
			return x.failText(err)
		}
		return x.IssueCard(r.String(), is)
	case events.SubReleases:
		r, msg, ok := x.repoArg(p, prefix, s)
		if !ok {
			return msg
		}
		t, msg, ok := needsAPI()
		if !ok {
			return msg
		}
		list, err := gh.Releases(ctx, t, r)
		if err != nil {
			return x.failText(err)
		}
		return x.ReleasesList(r.String(), list)
	case events.SubUser:
		login, ok := events.ParseUsername(p.Arg(0))
		if !ok {
			return x.Usage(events.SubUser, prefix)
		}
		t, msg, ok := needsAPI()
		if !ok {
			return msg
		}
		u, err := gh.User(ctx, t, login)
		if err != nil {
			return x.failText(err)
		}
		return x.UserCard(u)
	case events.SubSearch:
		q := strings.TrimSpace(strings.Join(p.Args, " "))
		if q == "" {
			return x.Usage(events.SubSearch, prefix)
		}
		if utf8.RuneCountInString(q) > events.MaxSearchRunes {
			return x.T("search.too_long", "max", strconv.Itoa(events.MaxSearchRunes))
		}
		t, msg, ok := needsAPI()
		if !ok {
			return msg
		}
		res, err := gh.Search(ctx, t, q, 8)
		if err != nil {
			return x.failText(err)
		}
		return x.SearchList(q, res)
	}
	return x.Help(prefix, s.SubscribeRequiresAdmin)
}
