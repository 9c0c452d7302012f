package githubkit

import (
	"embed"
	"strconv"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/langbot-nats/plugins/pkg/i18n"
)

//go:embed messages/*.json
var messageFS embed.FS

// LoadCatalog loads the embedded en_US and zh_Hans catalogues.
func LoadCatalog() (*i18n.Catalog, error) { return i18n.Load(messageFS, "messages") }

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

// texts renders catalogue keys in one language.
type texts struct {
	cat  *i18n.Catalog
	lang string
}

// t renders key with alternating name, value arguments.
func (x texts) t(key string, kv ...string) string {
	var args map[string]string
	if len(kv) > 0 {
		args = make(map[string]string, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			args[kv[i]] = kv[i+1]
		}
	}
	return x.cat.Text(x.lang, key, args)
}

func (x texts) dash() string { return x.t("misc.dash") }

// str returns *p on one line (see clean), or the dash when nil or empty.
func (x texts) str(p *string) string {
	if p == nil {
		return x.dash()
	}
	if s := clean(*p); s != "" {
		return s
	}
	return x.dash()
}

// num returns *p in decimal, or the dash when nil.
func (x texts) num(p *int) string {
	if p == nil {
		return x.dash()
	}
	return strconv.Itoa(*p)
}

func (x texts) join(items []string) string { return strings.Join(items, x.t("misc.sep")) }

// apiErrorText renders a GitHub failure (spec §3.4).
func (x texts) apiErrorText(e *APIError) string {
	st := strconv.Itoa(e.Status)
	switch e.Code {
	case CodeNetwork:
		return x.t("err.network")
	case CodeBusy:
		return x.t("err.busy")
	case CodeUnavailable:
		return x.t("err.breaker")
	case CodeNotFound:
		return x.t("err.404")
	case CodeRateLimited:
		if e.Secondary {
			return x.t("err.rate_secondary", "minutes", strconv.Itoa(e.Minutes()))
		}
		return x.t("err.rate", "minutes", strconv.Itoa(e.Minutes()))
	case CodeUnauthorized, CodeForbidden:
		return x.t("err.perm", "status", st, "msg", e.Message)
	case CodeConfig:
		return x.t("err.config", "field", "github_api_url")
	}
	if e.offHost && e.Status == 0 {
		return x.t("err.redirect")
	}
	return x.t("err.generic", "status", st, "msg", e.Message)
}

func (x texts) repoCard(r *github.Repository) string {
	desc := strings.TrimSpace(r.GetDescription())
	if desc == "" {
		desc = x.t("repo.no_desc")
	}
	lic := x.dash()
	if r.License != nil {
		lic = x.str(r.License.SPDXID)
		// GitHub's NOASSERTION: a licence file it could not identify
		if r.License.GetSPDXID() == "NOASSERTION" {
			lic = x.t("repo.license_other")
		}
	}
	out := x.t("repo.body",
		"full_name", x.str(r.FullName), "desc", desc,
		"stars", x.num(r.StargazersCount), "forks", x.num(r.ForksCount),
		"watchers", x.num(r.SubscribersCount), "issues", x.num(r.OpenIssuesCount),
		"lang", x.str(r.Language), "lic", lic, "branch", x.str(r.DefaultBranch), "url", x.str(r.HTMLURL))
	if hp := strings.TrimSpace(r.GetHomepage()); hp != "" {
		out += x.t("repo.homepage", "homepage", hp)
	}
	return out
}

func (x texts) issuesList(repo, state string, list []*github.Issue) string {
	var lines []string
	for _, is := range list {
		if is == nil || is.PullRequestLinks != nil {
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
			labels = x.t("issues.labels", "labels", x.join(names))
		}
		lines = append(lines, x.t("issues.item", "number", x.num(is.Number), "title", x.str(is.Title), "labels", labels))
	}
	if len(lines) == 0 {
		return x.t("issues.none", "repo", repo, "state", x.stateWord(state))
	}
	return x.t("issues.header", "repo", repo, "state", x.stateWord(state)) + "\n" + strings.Join(lines, "\n")
}

// stateWord translates a list state (open, closed, all).
func (x texts) stateWord(state string) string {
	switch state {
	case "open", "closed", "all":
		return x.t("state." + state)
	}
	return state
}

func (x texts) pullsList(repo, state string, list []*github.PullRequest) string {
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
			draft = x.t("prs.merged")
		case pr.GetState() == "closed":
			draft = x.t("prs.closed")
		case pr.GetDraft():
			draft = x.t("prs.draft")
		}
		user := x.dash()
		if pr.User != nil {
			user = x.str(pr.User.Login)
		}
		lines = append(lines, x.t("prs.item", "number", x.num(pr.Number), "title", x.str(pr.Title), "draft", draft, "user", user))
	}
	if len(lines) == 0 {
		return x.t("prs.none", "repo", repo, "state", x.stateWord(state))
	}
	return x.t("prs.header", "repo", repo, "state", x.stateWord(state)) + "\n" + strings.Join(lines, "\n")
}

// issueState is "merged" for a merged PR, else the raw state.
func issueState(is *github.Issue) string {
	if is.PullRequestLinks != nil && is.PullRequestLinks.MergedAt != nil && !is.PullRequestLinks.MergedAt.IsZero() {
		return "merged"
	}
	return is.GetState()
}

func (x texts) issueCard(repo string, is *github.Issue) string {
	emoji, kind := "📝", x.t("issue.kind_issue")
	if is.PullRequestLinks != nil {
		emoji, kind = "🔀", x.t("issue.kind_pr")
	}
	var names []string
	for _, l := range is.Labels {
		if n := l.GetName(); n != "" {
			names = append(names, n)
		}
	}
	labels := ""
	if len(names) > 0 {
		labels = x.t("issue.labels", "labels", x.join(names))
	}
	body := ""
	if b := strings.TrimSpace(strings.ReplaceAll(is.GetBody(), "\r\n", "\n")); b != "" {
		body = x.t("issue.excerpt", "text", truncate(b, issueBodyRunes))
	}
	author := x.dash()
	if is.User != nil {
		author = x.str(is.User.Login)
	}
	state := issueState(is)
	switch state {
	case "":
		state = x.dash()
	case "open", "closed", "merged":
		state = x.t("state." + state)
	}
	return x.t("issue.body", "emoji", emoji, "repo", repo, "kind", kind, "number", x.num(is.Number),
		"state", state, "title", x.str(is.Title), "author", author, "comments", x.num(is.Comments),
		"labels", labels, "url", x.str(is.HTMLURL), "body", body)
}

func (x texts) releasesList(repo string, list []*github.RepositoryRelease) string {
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
			name = x.t("releases.name", "name", n)
		}
		pre := ""
		if r.GetPrerelease() {
			pre = x.t("releases.prerelease")
		}
		date := ""
		if r.PublishedAt != nil && !r.PublishedAt.IsZero() {
			date = x.t("releases.date", "date", r.PublishedAt.UTC().Format("2006-01-02"))
		}
		if tag == "" {
			tag = x.dash()
		}
		lines = append(lines, x.t("releases.item", "tag", tag, "name", name, "pre", pre, "date", date))
	}
	if len(lines) == 0 {
		return x.t("releases.none", "repo", repo)
	}
	return x.t("releases.header", "repo", repo) + "\n" + strings.Join(lines, "\n")
}

func (x texts) userCard(u *github.User) string {
	name := strings.TrimSpace(u.GetName())
	if name == "" {
		name = x.str(u.Login)
	}
	bio := ""
	if b := strings.TrimSpace(u.GetBio()); b != "" {
		bio = x.t("user.bio", "bio", b)
	}
	return x.t("user.body", "name", name, "login", x.str(u.Login), "bio", bio,
		"repos", x.num(u.PublicRepos), "followers", x.num(u.Followers), "following", x.num(u.Following), "url", x.str(u.HTMLURL))
}

func (x texts) searchList(query string, res *github.RepositoriesSearchResult) string {
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
				lines = append(lines, x.t("search.item_bare", "stars", x.num(r.StargazersCount), "full_name", x.str(r.FullName)))
				continue
			}
			lines = append(lines, x.t("search.item", "stars", x.num(r.StargazersCount), "full_name", x.str(r.FullName),
				"desc", truncate(desc, searchDescRunes)))
		}
	}
	if len(lines) == 0 {
		return x.t("search.none", "query", query)
	}
	return x.t("search.header", "query", query) + "\n" + strings.Join(lines, "\n")
}

// kindsText renders a filter list, or allKey's text for all events.
func (x texts) kindsText(kinds []string, allKey string) string {
	if len(kinds) == 0 {
		return x.t(allKey)
	}
	return x.join(kinds)
}

func (x texts) help(prefix string, admin bool) string {
	out := x.t("help", "prefix", prefix) + "\n" + x.t("help.cards", "prefix", prefix)
	if admin {
		out += "\n" + x.t("help.admin")
	}
	return out
}

// SubItem is one line of the subs listing.
type SubItem struct {
	FullName     string
	Kinds        []string
	Refine       *Refine
	BrokenStatus int       // 0 = not broken
	Hook         *HookItem // nil: no webhook (hook.go)
}

func (x texts) subsList(items []SubItem, prefix string) string {
	if len(items) == 0 {
		return x.t("subs.none", "prefix", prefix)
	}
	lines := []string{x.t("subs.header")}
	for _, it := range items {
		ev := x.filterText(it.Kinds, it.Refine, "subs.all")
		if it.BrokenStatus != 0 {
			lines = append(lines, x.t("subs.item_broken", "repo", it.FullName, "events", ev,
				"status", strconv.Itoa(it.BrokenStatus), "prefix", prefix))
			continue
		}
		lines = append(lines, x.t("subs.item", "repo", it.FullName, "events", ev))
		if it.Hook != nil {
			lines = append(lines, x.hookLine(*it.Hook))
		}
	}
	return strings.Join(lines, "\n")
}

func (x texts) usage(sub, prefix string) string { return x.t(sub+".usage", "prefix", prefix) }
