package events

import (
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Formatted reports whether the event type has a formatter.
func Formatted(typ string) bool {
	switch typ {
	case "PushEvent", "PullRequestEvent", "IssuesEvent", "IssueCommentEvent", "ReleaseEvent", "WatchEvent",
		"ForkEvent", "CreateEvent", "DeleteEvent", "PullRequestReviewEvent", "PullRequestReviewCommentEvent",
		"CommitCommentEvent", "MemberEvent", "PublicEvent", "GollumEvent", "DiscussionEvent":
		return true
	}
	return false
}

// Enrichment is what extra GitHub calls found out about an event (§7.6).
type Enrichment struct {
	// Commits is the compare total_commits (0 = unknown).
	Commits int
	// HeadMessage is the head commit's message from compare.
	HeadMessage string
	// Forced says compare found the new head not ahead of the old one
	// (diverged or behind): the push rewrote history.
	Forced bool
	// Title, Merged and Labels come from GET pulls/{n}; HasPR says they are set.
	Title  string
	Merged bool
	Labels []string
	HasPR  bool
}

func isZeroSHA(s string) bool { return s == "" || strings.Trim(s, "0") == "" }

// needsCompare reports whether a PushEvent needs compare (§7.6 rule 2):
// the payload gives no count (trimmed form), or the push has more commits
// than the payload lists and its head is not among them.
func NeedsCompare(e ghclient.Event) (base, head string, ok bool) {
	if e.Type != "PushEvent" {
		return "", "", false
	}
	p := payloadOf(e)
	h := p.head()
	if isZeroSHA(p.Before) || isZeroSHA(h) {
		return "", "", false
	}
	if p.countKnown() && (p.pushCount() == 0 || p.headMessage() != "") {
		return "", "", false
	}
	return p.Before, h, true
}

// needsPull reports whether a PullRequestEvent needs GET pulls/{n} (§7.6 rule 3).
func NeedsPull(e ghclient.Event) (int, bool) {
	if e.Type != "PullRequestEvent" {
		return 0, false
	}
	p := payloadOf(e)
	n := p.Number
	if n == 0 && p.PullRequest != nil {
		n = p.PullRequest.Number
	}
	if n == 0 {
		return 0, false
	}
	noTitle := p.PullRequest == nil || p.PullRequest.Title == nil || strings.TrimSpace(*p.PullRequest.Title) == ""
	noMerge := p.Action == "closed" && (p.PullRequest == nil || (p.PullRequest.Merged == nil && p.PullRequest.MergedAt == nil))
	return n, noTitle || noMerge
}

func stripRef(ref string) string {
	if s, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		return s
	}
	if s, ok := strings.CutPrefix(ref, "refs/tags/"); ok {
		return s
	}
	return ref
}

// Clean makes a value from GitHub safe for one chat line: every control
// character (\r, \n, \t, ESC, ...) and every bidirectional override becomes
// a space, runs of spaces collapse, the ends are trimmed.
func Clean(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// ChatSafe keeps a multi-line reply's line breaks ("\r\n" and a lone "\r"
// become "\n") and turns every other control character into a space and
// drops bidirectional overrides.
func ChatSafe(s string) string {
	Clean := true
	for _, r := range s {
		if (r != '\n' && unicode.IsControl(r)) || unicode.Is(unicode.Bidi_Control, r) {
			Clean = false
			break
		}
	}
	if Clean {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r':
			b.WriteByte('\n')
		case unicode.Is(unicode.Bidi_Control, r):
		case unicode.IsControl(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// WebBase returns the web address that belongs to a GitHub API base URL:
// https://api.github.com gives https://github.com, a GitHub Enterprise
// Server's https://host/api/v3 gives https://host, anything else itself.
func WebBase(apiURL string) string {
	u := strings.TrimRight(apiURL, "/")
	switch {
	case u == "" || u == "https://api.github.com":
		return "https://github.com"
	case strings.HasSuffix(u, "/api/v3"):
		return strings.TrimSuffix(u, "/api/v3")
	}
	return u
}

// Links builds the web addresses of one repository's events.
type Links struct {
	web  string // e.g. https://github.com
	repo string // owner/name
}

func (l Links) repoURL() string { return l.web + "/" + l.repo }

func (l Links) path(parts ...string) string {
	out := l.repoURL()
	for _, p := range parts {
		out += "/" + p
	}
	return out
}

// refPath escapes a ref name for a URL path, keeping its slashes.
func refPath(ref string) string {
	segs := strings.Split(ref, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func (l Links) issueOrPR(a Activity) string {
	if a.Number <= 0 {
		return l.repoURL()
	}
	if a.OnPR {
		return l.path("pull", strconv.Itoa(a.Number))
	}
	return l.path("issues", strconv.Itoa(a.Number))
}

// link returns the address a line about a points at.
func (l Links) link(a Activity) string {
	switch a.Type {
	case "PushEvent":
		ref := stripRef(a.Ref)
		switch {
		case strings.HasPrefix(a.Ref, "refs/tags/"):
			return l.path("releases", "tag", refPath(ref))
		case isZeroSHA(a.Head):
			return l.path("branches")
		case isZeroSHA(a.Before):
			return l.path("commits", refPath(ref))
		case a.Commits == 1 && !a.Forced:
			return l.path("commit", a.Head)
		}
		return l.path("compare", short(a.Before)+"..."+short(a.Head))
	case "PullRequestEvent", "IssuesEvent":
		return l.issueOrPR(a)
	case "IssueCommentEvent":
		u := l.issueOrPR(a)
		if a.CommentID > 0 {
			u += "#issuecomment-" + strconv.FormatInt(a.CommentID, 10)
		}
		return u
	case "PullRequestReviewEvent":
		u := l.issueOrPR(a)
		if a.ReviewID > 0 {
			u += "#pullrequestreview-" + strconv.FormatInt(a.ReviewID, 10)
		}
		return u
	case "PullRequestReviewCommentEvent":
		u := l.issueOrPR(a)
		if a.CommentID > 0 {
			u += "#discussion_r" + strconv.FormatInt(a.CommentID, 10)
		}
		return u
	case "ReleaseEvent":
		// a deleted release's tag page is gone: the list instead
		if a.Tag != "" && a.Action != "deleted" {
			return l.path("releases", "tag", refPath(a.Tag))
		}
		return l.path("releases")
	case "ForkEvent":
		if a.Forkee != "" {
			return l.web + "/" + a.Forkee
		}
		return l.path("forks")
	case "WatchEvent":
		return l.path("stargazers")
	case "CreateEvent":
		if a.RefType == "branch" || a.RefType == "tag" {
			return l.path("tree", refPath(a.Ref))
		}
	case "DeleteEvent":
		if a.RefType == "tag" {
			return l.path("tags")
		}
		return l.path("branches")
	case "CommitCommentEvent":
		if a.CommitID != "" {
			u := l.path("commit", a.CommitID)
			if a.CommentID > 0 {
				u += "#commitcomment-" + strconv.FormatInt(a.CommentID, 10)
			}
			return u
		}
	case "MemberEvent":
		if a.Member != "" {
			return l.web + "/" + url.PathEscape(a.Member)
		}
	case "GollumEvent":
		if len(a.Pages) == 1 && a.Pages[0].Name != "" {
			return l.path("wiki", url.PathEscape(strings.ReplaceAll(a.Pages[0].Name, " ", "-")))
		}
		return l.path("wiki")
	case "DiscussionEvent":
		if a.Number > 0 {
			return l.path("discussions", strconv.Itoa(a.Number))
		}
		return l.path("discussions")
	}
	return l.repoURL()
}

// eventLine formats one Events API item (spec §7.5); ok is false for types
// without a formatter. en may be nil.
func (x Texts) EventLine(e ghclient.Event, en *Enrichment, l Links) (string, bool) {
	if !Formatted(e.Type) {
		return "", false
	}
	return x.activityLine(FromEvent(e, en), l), true
}

// plural picks key+"_one" for n == 1 and key+"_many" otherwise; zh_Hans
// writes both the same, en_US does not.
func plural(key string, n int) string {
	if n == 1 {
		return key + "_one"
	}
	return key + "_many"
}

// activityLine renders one normalized event and, on the next line, the
// address it is about.
func (x Texts) activityLine(a Activity, l Links) string {
	return x.activityText(a) + "\n" + x.T("ev.link", "url", l.link(a))
}

func (x Texts) activityText(a Activity) string {
	actor := Clean(a.Actor)
	if actor == "" {
		actor = x.Dash()
	}
	or := func(s string) string {
		if s = Clean(s); s == "" {
			return x.Dash()
		}
		return s
	}
	title := func(t string) string {
		if t = Clean(t); t == "" {
			return ""
		}
		return x.T("ev.title", "title", ghclient.Truncate(t, PushTitleRunes))
	}
	num := func(n int) string {
		if n <= 0 {
			return x.Dash()
		}
		return strconv.Itoa(n)
	}
	what := x.T("ev.what_issue")
	if a.OnPR {
		what = x.T("ev.what_pr")
	}
	labels := ""
	if len(a.Labels) > 0 {
		ls := make([]string, 0, len(a.Labels))
		for _, n := range a.Labels {
			ls = append(ls, Clean(n))
		}
		labels = x.T("ev.labels", "labels", x.Join(ls))
	}
	// the common arguments of the issue and PR templates
	ip := func(key string, kv ...string) string {
		return x.T(key, append([]string{"actor", actor, "what", what, "num", num(a.Number), "title", title(a.Title), "labels", labels}, kv...)...)
	}
	switch a.Type {
	case "PushEvent":
		ref := or(stripRef(a.Ref))
		head := ""
		if m := Clean(ghclient.FirstLine(a.HeadMessage)); m != "" {
			head = x.T("ev.push_head", "msg", ghclient.Truncate(m, commitLineRunes))
		}
		n := strconv.Itoa(a.Commits)
		switch {
		case strings.HasPrefix(a.Ref, "refs/tags/"):
			if isZeroSHA(a.Head) {
				return x.T("ev.push_tag_deleted", "actor", actor, "ref", ref)
			}
			return x.T("ev.push_tag", "actor", actor, "ref", ref)
		case isZeroSHA(a.Head) && !isZeroSHA(a.Before):
			return x.T("ev.push_deleted", "actor", actor, "ref", ref)
		case a.Forced:
			return x.T("ev.push_forced", "actor", actor, "ref", ref, "head", head)
		case isZeroSHA(a.Before) && a.Commits > 0:
			return x.T(plural("ev.push_new_branch", a.Commits), "actor", actor, "n", n, "ref", ref, "head", head)
		case isZeroSHA(a.Before):
			return x.T("ev.push_new_branch_nocount", "actor", actor, "ref", ref, "head", head)
		case a.Commits > 0:
			return x.T(plural("ev.push", a.Commits), "actor", actor, "n", n, "ref", ref, "head", head)
		}
		return x.T("ev.push_nocount", "actor", actor, "ref", ref, "head", head)
	case "PullRequestEvent", "IssuesEvent":
		switch a.Action {
		case "labeled", "unlabeled":
			return ip("ev."+a.Action, "label", or(a.Label))
		case "assigned", "unassigned":
			return ip("ev."+a.Action, "assignee", or(a.Assignee))
		}
		if a.Type == "IssuesEvent" {
			action := "ev.issue_other"
			switch a.Action {
			case "opened", "closed", "reopened", "edited", "deleted", "transferred", "pinned", "unpinned", "locked", "unlocked":
				action = "ev.issue_" + a.Action
			}
			return ip("ev.issue", "action", x.T(action))
		}
		switch a.Action {
		case "review_requested", "review_request_removed":
			return ip("ev.pr_"+a.Action, "reviewer", or(a.Reviewer))
		case "ready_for_review", "converted_to_draft", "synchronize":
			return ip("ev.pr_" + a.Action)
		}
		if a.Action == "opened" && a.Draft {
			return ip("ev.pr_draft")
		}
		action := "ev.pr_other"
		switch a.Action {
		case "opened", "reopened", "edited":
			action = "ev.pr_" + a.Action
		case "closed":
			action = "ev.pr_closed"
			if a.Merged {
				action = "ev.pr_merged"
			}
		}
		return ip("ev.pr", "action", x.T(action))
	case "IssueCommentEvent":
		return ip("ev.comment")
	case "ReleaseEvent":
		tag, name := Clean(a.Tag), Clean(a.ReleaseName)
		pre := ""
		if a.Prerelease {
			pre = x.T("ev.prerelease")
		}
		key := "ev.release"
		switch a.Action {
		case "edited", "deleted":
			key = "ev.release_" + a.Action
		}
		switch {
		case tag == "" && name == "":
			return x.T(key, "actor", actor, "release", x.Dash(), "pre", pre)
		case tag == "" || name == "" || name == tag:
			return x.T(key, "actor", actor, "release", tag+name, "pre", pre)
		}
		return x.T(key, "actor", actor, "release", x.T("ev.release_named", "name", ghclient.Truncate(name, PushTitleRunes), "tag", tag), "pre", pre)
	case "WatchEvent":
		return x.T("ev.star", "actor", actor)
	case "ForkEvent":
		if f := Clean(a.Forkee); f != "" {
			return x.T("ev.fork_to", "actor", actor, "fork", f)
		}
		return x.T("ev.fork", "actor", actor)
	case "CreateEvent", "DeleteEvent":
		key := "ev.create"
		if a.Type == "DeleteEvent" {
			key = "ev.delete"
		}
		if a.RefType == "repository" && a.Type == "CreateEvent" {
			return x.T("ev.create_repo", "actor", actor)
		}
		word := Clean(a.RefType)
		switch a.RefType {
		case "branch":
			word = x.T("ev.ref_branch")
		case "tag":
			word = x.T("ev.ref_tag")
		case "":
			word = x.Dash()
		}
		return x.T(key, "actor", actor, "ref_type", word, "ref", or(a.Ref))
	case "PullRequestReviewEvent":
		if a.Action == "dismissed" || a.ReviewState == "dismissed" {
			return ip("ev.review_dismissed")
		}
		switch a.ReviewState {
		case "approved", "changes_requested", "commented":
			return ip("ev.review_" + a.ReviewState)
		}
		return ip("ev.review_other")
	case "PullRequestReviewCommentEvent":
		return ip("ev.review_comment")
	case "CommitCommentEvent":
		return x.T("ev.commit_comment", "actor", actor, "sha", or(a.CommitID[:min(7, len(a.CommitID))]))
	case "MemberEvent":
		key := "ev.member_added"
		switch a.Action {
		case "removed", "edited":
			key = "ev.member_" + a.Action
		}
		return x.T(key, "actor", actor, "member", or(a.Member))
	case "PublicEvent":
		if a.Action == "privatized" {
			return x.T("ev.private", "actor", actor)
		}
		return x.T("ev.public", "actor", actor)
	case "GollumEvent":
		if len(a.Pages) == 1 {
			key := "ev.wiki_edited"
			if a.Pages[0].Action == "created" {
				key = "ev.wiki_created"
			}
			return x.T(key, "actor", actor, "page", or(a.Pages[0].Name))
		}
		names := make([]string, 0, len(a.Pages))
		for _, pg := range a.Pages {
			names = append(names, or(pg.Name))
		}
		return x.T(plural("ev.wiki_pages", len(a.Pages)), "actor", actor, "n", strconv.Itoa(len(a.Pages)), "pages", x.Join(names))
	case "DiscussionEvent":
		action := "ev.discussion_other"
		switch a.Action {
		case "created", "closed", "reopened", "answered", "unanswered", "edited", "deleted", "locked", "unlocked", "pinned", "unpinned", "transferred":
			action = "ev.discussion_" + a.Action
		}
		cat := ""
		if c := Clean(a.Category); c != "" {
			cat = x.T("ev.category", "category", c)
		}
		return x.T("ev.discussion", "actor", actor, "action", x.T(action), "num", num(a.Number), "title", title(a.Title), "category", cat)
	}
	return x.Dash()
}

// pushMessage assembles one push digest (spec §7.4 rule 1).
func (x Texts) PushMessage(repo string, lines []string, more int) string {
	out := x.T("push.header", "repo", ChatSafe(repo)) + "\n" + strings.Join(lines, "\n")
	if more > 0 {
		key := "push.more"
		if more == 1 {
			key = "push.more_one"
		}
		out += "\n" + x.T(key, "n", strconv.Itoa(more))
	}
	return out
}

// ciLine renders one run alert and its link.
func (x Texts) CILine(r ghclient.WorkflowRun) string {
	actor := ""
	if r.TriggeringActor != nil {
		actor = r.TriggeringActor.Login
	}
	if actor == "" && r.Actor != nil {
		actor = r.Actor.Login
	}
	or := func(s string) string {
		if s = Clean(s); s == "" {
			return x.Dash()
		}
		return s
	}
	key := "ev.ci_other"
	switch r.Conclusion {
	case "failure", "timed_out", "startup_failure", "success", "cancelled", "action_required", "skipped", "neutral", "stale":
		key = "ev.ci_" + r.Conclusion
	}
	title := ""
	if t := Clean(ghclient.FirstLine(r.DisplayTitle)); t != "" {
		title = x.T("ev.title", "title", ghclient.Truncate(t, PushTitleRunes))
	}
	sha := r.HeadSHA[:min(7, len(r.HeadSHA))]
	line := x.T(key, "workflow", or(r.Name), "number", strconv.Itoa(r.RunNumber), "branch", or(r.HeadBranch),
		"sha", or(sha), "actor", or(actor), "title", title)
	return line + "\n" + x.T("ev.link", "url", Clean(r.HTMLURL))
}

// NewLinks builds the web addresses of repository repo (owner/name) on the
// GitHub web root web (WebBase of the API root).
func NewLinks(web, repo string) Links { return Links{web: web, repo: repo} }

// FilterKind returns the event kind a filter word stands for.
func FilterKind(word string) (string, bool) {
	k, ok := filterWords[word]
	return k, ok
}
