package events

import (
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// List and text limits (spec §9).
const (
	issuesShown        = 10
	issueLabelsShown   = 3
	issueBodyRunes     = 400
	searchDescRunes    = 50
	commitLineRunes    = 60
	pushTitleRunes     = 100
	MaxReposPerInst    = 50
	MaxSubscribersRepo = 20
)

// Texts renders catalogue keys in one language.
type Texts struct {
	cat  *i18n.Catalog
	lang string
}

// NewTexts renders cat's keys in lang.
func NewTexts(cat *i18n.Catalog, lang string) Texts { return Texts{cat: cat, lang: lang} }

// Lang is the language the texts render in.
func (x Texts) Lang() string { return x.lang }

// T renders key with alternating name, value arguments.
func (x Texts) T(key string, kv ...string) string {
	var args map[string]string
	if len(kv) > 0 {
		args = make(map[string]string, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			args[kv[i]] = kv[i+1]
		}
	}
	return x.cat.Text(x.lang, key, args)
}

func (x Texts) Dash() string { return x.T("misc.dash") }

// str returns *p on one line (see Clean), or the dash when nil or empty.
func (x Texts) str(p *string) string {
	if p == nil {
		return x.Dash()
	}
	if s := Clean(*p); s != "" {
		return s
	}
	return x.Dash()
}

// num returns *p in decimal, or the dash when nil.
func (x Texts) num(p *int) string {
	if p == nil {
		return x.Dash()
	}
	return strconv.Itoa(*p)
}

func (x Texts) Join(items []string) string { return strings.Join(items, x.T("misc.sep")) }

// APIErrorText renders a GitHub failure (spec §3.4).
func (x Texts) APIErrorText(e *ghclient.APIError) string {
	st := strconv.Itoa(e.Status)
	switch e.Code {
	case ghclient.CodeNetwork:
		return x.T("err.network")
	case ghclient.CodeBusy:
		return x.T("err.busy")
	case ghclient.CodeUnavailable:
		return x.T("err.breaker")
	case ghclient.CodeNotFound:
		return x.T("err.404")
	case ghclient.CodeRateLimited:
		if e.Secondary {
			return x.T("err.rate_secondary", "minutes", strconv.Itoa(e.Minutes()))
		}
		return x.T("err.rate", "minutes", strconv.Itoa(e.Minutes()))
	case ghclient.CodeUnauthorized, ghclient.CodeForbidden:
		return x.T("err.perm", "status", st, "msg", e.Message)
	case ghclient.CodeConfig:
		return x.T("err.config", "field", "github_api_url")
	}
	if e.OffHost() && e.Status == 0 {
		return x.T("err.redirect")
	}
	return x.T("err.generic", "status", st, "msg", e.Message)
}

func (x Texts) RepoCard(r *github.Repository) string {
	desc := strings.TrimSpace(r.GetDescription())
	if desc == "" {
		desc = x.T("repo.no_desc")
	}
	lic := x.Dash()
	if r.License != nil {
		lic = x.str(r.License.SPDXID)
		// GitHub's NOASSERTION: a licence file it could not identify
		if r.License.GetSPDXID() == "NOASSERTION" {
			lic = x.T("repo.license_other")
		}
	}
	out := x.T("repo.body",
		"full_name", x.str(r.FullName), "desc", desc,
		"stars", x.num(r.StargazersCount), "forks", x.num(r.ForksCount),
		"watchers", x.num(r.SubscribersCount), "issues", x.num(r.OpenIssuesCount),
		"lang", x.str(r.Language), "lic", lic, "branch", x.str(r.DefaultBranch), "url", x.str(r.HTMLURL))
	if hp := strings.TrimSpace(r.GetHomepage()); hp != "" {
		out += x.T("repo.homepage", "homepage", hp)
	}
	return out
}

func (x Texts) IssuesList(repo, state string, list []*github.Issue) string {
	var lines []string
	for _, is := range list {
		if is == nil || IsPullRequest(is) {
			continue
		}
		if len(lines) == issuesShown {
			break
		}
		var names []string
		for _, l := range is.Labels {
			if len(names) == issueLabelsShown {
				break
			}
			if n := l.GetName(); n != "" {
				names = append(names, n)
			}
		}
		labels := ""
		if len(names) > 0 {
			labels = x.T("issues.labels", "labels", x.Join(names))
		}
		lines = append(lines, x.T("issues.item", "number", x.num(is.Number), "title", x.str(is.Title), "labels", labels))
	}
	if len(lines) == 0 {
		return x.T("issues.none", "repo", repo, "state", x.stateWord(state))
	}
	return x.T("issues.header", "repo", repo, "state", x.stateWord(state)) + "\n" + strings.Join(lines, "\n")
}

// stateWord translates a list state (open, closed, all).
func (x Texts) stateWord(state string) string {
	switch state {
	case "open", "closed", "all":
		return x.T("state." + state)
	}
	return state
}

func (x Texts) PullsList(repo, state string, list []*github.PullRequest) string {
	var lines []string
	for _, pr := range list {
		if pr == nil {
			continue
		}
		if len(lines) == issuesShown {
			break
		}
		draft := ""
		switch {
		case pr.MergedAt != nil && !pr.MergedAt.IsZero():
			draft = x.T("prs.merged")
		case pr.GetState() == "closed":
			draft = x.T("prs.closed")
		case pr.GetDraft():
			draft = x.T("prs.draft")
		}
		user := x.Dash()
		if pr.User != nil {
			user = x.str(pr.User.Login)
		}
		lines = append(lines, x.T("prs.item", "number", x.num(pr.Number), "title", x.str(pr.Title), "draft", draft, "user", user))
	}
	if len(lines) == 0 {
		return x.T("prs.none", "repo", repo, "state", x.stateWord(state))
	}
	return x.T("prs.header", "repo", repo, "state", x.stateWord(state)) + "\n" + strings.Join(lines, "\n")
}

// IsPullRequest reports whether an item of the issues API is a pull
// request: its pull_request object has a link. Older payloads put
// {"html_url": null, ...} on plain issues; the same rule reads push lines
// (prLinks.isPR).
func IsPullRequest(is *github.Issue) bool {
	l := is.PullRequestLinks
	return l != nil && (l.GetURL() != "" || l.GetHTMLURL() != "")
}

// IssueState is "merged" for a merged PR, else the raw state.
func IssueState(is *github.Issue) string {
	if IsPullRequest(is) && is.PullRequestLinks.MergedAt != nil && !is.PullRequestLinks.MergedAt.IsZero() {
		return "merged"
	}
	return is.GetState()
}

func (x Texts) IssueCard(repo string, is *github.Issue) string {
	emoji, kind := "📝", x.T("issue.kind_issue")
	if IsPullRequest(is) {
		emoji, kind = "🔀", x.T("issue.kind_pr")
	}
	var names []string
	for _, l := range is.Labels {
		if n := l.GetName(); n != "" {
			names = append(names, n)
		}
	}
	labels := ""
	if len(names) > 0 {
		labels = x.T("issue.labels", "labels", x.Join(names))
	}
	body := ""
	if b := strings.TrimSpace(strings.ReplaceAll(is.GetBody(), "\r\n", "\n")); b != "" {
		body = x.T("issue.excerpt", "text", ghclient.Truncate(b, issueBodyRunes))
	}
	author := x.Dash()
	if is.User != nil {
		author = x.str(is.User.Login)
	}
	state := IssueState(is)
	switch state {
	case "":
		state = x.Dash()
	case "open", "closed", "merged":
		state = x.T("state." + state)
	}
	return x.T("issue.body", "emoji", emoji, "repo", repo, "kind", kind, "number", x.num(is.Number),
		"state", state, "title", x.str(is.Title), "author", author, "comments", x.num(is.Comments),
		"labels", labels, "url", x.str(is.HTMLURL), "body", body)
}

func (x Texts) ReleasesList(repo string, list []*github.RepositoryRelease) string {
	var lines []string
	for _, r := range list {
		if r == nil {
			continue
		}
		if len(lines) == 5 {
			break
		}
		tag := r.GetTagName()
		name := ""
		if n := strings.TrimSpace(r.GetName()); n != "" && n != tag {
			name = x.T("releases.name", "name", n)
		}
		pre := ""
		if r.GetPrerelease() {
			pre = x.T("releases.prerelease")
		}
		date := ""
		if r.PublishedAt != nil && !r.PublishedAt.IsZero() {
			date = x.T("releases.date", "date", r.PublishedAt.UTC().Format("2006-01-02"))
		}
		if tag == "" {
			tag = x.Dash()
		}
		lines = append(lines, x.T("releases.item", "tag", tag, "name", name, "pre", pre, "date", date))
	}
	if len(lines) == 0 {
		return x.T("releases.none", "repo", repo)
	}
	return x.T("releases.header", "repo", repo) + "\n" + strings.Join(lines, "\n")
}

func (x Texts) UserCard(u *github.User) string {
	name := strings.TrimSpace(u.GetName())
	if name == "" {
		name = x.str(u.Login)
	}
	bio := ""
	if b := strings.TrimSpace(u.GetBio()); b != "" {
		bio = x.T("user.bio", "bio", b)
	}
	return x.T("user.body", "name", name, "login", x.str(u.Login), "bio", bio,
		"repos", x.num(u.PublicRepos), "followers", x.num(u.Followers), "following", x.num(u.Following), "url", x.str(u.HTMLURL))
}

func (x Texts) SearchList(query string, res *github.RepositoriesSearchResult) string {
	var lines []string
	if res != nil {
		for _, r := range res.Repositories {
			if r == nil {
				continue
			}
			if len(lines) == 8 {
				break
			}
			desc := strings.TrimSpace(r.GetDescription())
			if desc == "" {
				lines = append(lines, x.T("search.item_bare", "stars", x.num(r.StargazersCount), "full_name", x.str(r.FullName)))
				continue
			}
			lines = append(lines, x.T("search.item", "stars", x.num(r.StargazersCount), "full_name", x.str(r.FullName),
				"desc", ghclient.Truncate(desc, searchDescRunes)))
		}
	}
	if len(lines) == 0 {
		return x.T("search.none", "query", query)
	}
	return x.T("search.header", "query", query) + "\n" + strings.Join(lines, "\n")
}

// KindsText renders a filter list, or allKey's text for all events.
func (x Texts) KindsText(kinds []string, allKey string) string {
	if len(kinds) == 0 {
		return x.T(allKey)
	}
	return x.Join(kinds)
}

func (x Texts) Help(prefix string, admin bool) string {
	out := x.T("help", "prefix", prefix) + "\n" + x.T("help.filters") + "\n" + x.T("help.cards", "prefix", prefix) + "\n" + x.T("help.noise", "prefix", prefix)
	if admin {
		out += "\n" + x.T("help.admin")
	}
	return out
}

// SubItem is one line of the subs listing.
type SubItem struct {
	FullName     string
	Kinds        []string
	Refine       *Refine
	BrokenStatus int       // 0 = not broken
	Hook         *HookItem // nil: no webhook
}

func (x Texts) SubsList(items []SubItem, prefix string) string {
	if len(items) == 0 {
		return x.T("subs.none", "prefix", prefix)
	}
	lines := []string{x.T("subs.header")}
	for _, it := range items {
		ev := x.FilterText(it.Kinds, it.Refine, "subs.all")
		if it.BrokenStatus != 0 {
			lines = append(lines, x.T("subs.item_broken", "repo", it.FullName, "events", ev,
				"status", strconv.Itoa(it.BrokenStatus), "prefix", prefix))
			continue
		}
		lines = append(lines, x.T("subs.item", "repo", it.FullName, "events", ev))
		if it.Hook != nil {
			lines = append(lines, x.hookLine(*it.Hook))
		}
	}
	return strings.Join(lines, "\n")
}

func (x Texts) Usage(sub, prefix string) string { return x.T(sub+".usage", "prefix", prefix) }

// HookItem is the webhook state of a "!gh subs" line.
type HookItem struct {
	Last *time.Time // last ping or event, nil when none yet
	Live bool       // delivering: polling is at the health interval
}

// hookLine renders a subs line's webhook state.
func (x Texts) hookLine(h HookItem) string {
	switch {
	case h.Last == nil:
		return x.T("subs.hook_waiting")
	case h.Live:
		return x.T("subs.hook_live", "time", h.Last.UTC().Format("2006-01-02 15:04"))
	}
	return x.T("subs.hook_silent", "time", h.Last.UTC().Format("2006-01-02 15:04"))
}
