package githubkit

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// apiHost is the host of a non-default API URL ("" for api.github.com), whose
// repository links ParseRepo accepts.
func apiHost(s Settings) string {
	if s.APIErr != nil || strings.EqualFold(s.APIURL, DefaultAPIURL) {
		return ""
	}
	u, err := url.Parse(s.APIURL)
	if err != nil {
		return ""
	}
	return u.Host
}

// repoArg parses a repository argument; on failure it returns the reply.
func (x texts) repoArg(sub, arg, prefix string, s Settings) (Repo, string, bool) {
	r, err := ParseRepo(arg, apiHost(s))
	switch {
	case errors.Is(err, ErrEmptyRepo):
		return Repo{}, x.usage(sub, prefix), false
	case err != nil:
		return Repo{}, x.t("err.bad_repo", "input", Echo(arg), "prefix", prefix), false
	}
	return r, "", true
}

// failText renders a GitHub failure.
func (x texts) failText(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return x.apiErrorText(ae)
	}
	return x.t("err.network")
}

// queryCommand runs the read-only subcommands (repo, issues, prs, issue,
// releases, user, search, help) and returns the reply text. GitHub failures
// become texts per spec §3.4; it never returns a protocol error.
func (x texts) queryCommand(ctx context.Context, gh *GitHub, s Settings, p Parsed, prefix string) (out string) {
	// values from GitHub (titles, bodies, descriptions) may carry raw
	// control characters; none reaches the chat
	defer func() { out = chatSafe(out) }()
	arg := func(i int) string {
		if i < len(p.Args) {
			return p.Args[i]
		}
		return ""
	}
	needsAPI := func() (Target, string, bool) {
		if s.APIErr != nil {
			return Target{}, x.t("err.config", "field", "github_api_url"), false
		}
		return Target{BaseURL: s.APIURL, Token: s.Token}, "", true
	}
	switch p.Sub {
	case SubRepo:
		r, msg, ok := x.repoArg(SubRepo, arg(0), prefix, s)
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
		return x.repoCard(rp)
	case SubIssues, SubPRs:
		if len(p.Args) == 0 {
			return x.usage(p.Sub, prefix)
		}
		r, msg, ok := x.repoArg(p.Sub, arg(0), prefix, s)
		if !ok {
			return msg
		}
		t, msg, ok := needsAPI()
		if !ok {
			return msg
		}
		state := ParseState(p.Args[1:])
		if p.Sub == SubIssues {
			list, err := gh.Issues(ctx, t, r, state)
			if err != nil {
				return x.failText(err)
			}
			return x.issuesList(r.String(), state, list)
		}
		list, err := gh.Pulls(ctx, t, r, state)
		if err != nil {
			return x.failText(err)
		}
		return x.pullsList(r.String(), state, list)
	case SubIssue:
		if len(p.Args) < 2 {
			return x.usage(SubIssue, prefix)
		}
		r, msg, ok := x.repoArg(SubIssue, arg(0), prefix, s)
		if !ok {
			return msg
		}
		n, ok := ParseIssueNumber(arg(1))
		if !ok {
			return x.t("issue.bad_number")
		}
		t, msg, ok := needsAPI()
		if !ok {
			return msg
		}
		is, err := gh.Issue(ctx, t, r, n)
		if err != nil {
			return x.failText(err)
		}
		return x.issueCard(r.String(), is)
	case SubReleases:
		r, msg, ok := x.repoArg(SubReleases, arg(0), prefix, s)
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
		return x.releasesList(r.String(), list)
	case SubUser:
		login, ok := ParseUsername(arg(0))
		if !ok {
			return x.usage(SubUser, prefix)
		}
		t, msg, ok := needsAPI()
		if !ok {
			return msg
		}
		u, err := gh.User(ctx, t, login)
		if err != nil {
			return x.failText(err)
		}
		return x.userCard(u)
	case SubSearch:
		q := strings.TrimSpace(strings.Join(p.Args, " "))
		if q == "" {
			return x.usage(SubSearch, prefix)
		}
		if utf8.RuneCountInString(q) > MaxSearchRunes {
			return x.t("search.too_long", "max", strconv.Itoa(MaxSearchRunes))
		}
		t, msg, ok := needsAPI()
		if !ok {
			return msg
		}
		res, err := gh.Search(ctx, t, q, 8)
		if err != nil {
			return x.failText(err)
		}
		return x.searchList(q, res)
	}
	return x.help(prefix, s.SubscribeRequiresAdmin)
}
