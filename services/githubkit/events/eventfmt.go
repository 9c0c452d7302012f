package events

import (
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

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
	// Files are the paths a push touched, from compare's file list;
	// FilesKnown says the list is whole (compare lists at most 300).
	Files      []string
	FilesKnown bool
}

func isZeroSHA(s string) bool { return s == "" || strings.Trim(s, "0") == "" }

// newRef reports whether a push's before is the zero sha GitHub sends for
// a ref the push created. A payload without before (older Events API
// items) says nothing about it: such a push is not "the new branch".
func newRef(before string) bool { return before != "" && strings.Trim(before, "0") == "" }

// NeedsCompare reports whether a PushEvent needs compare (§7.6 rule 2):
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

// PushRange returns a PushEvent's before and head when both name commits
// (not a new ref, not a deletion): the range compare can be asked about.
func PushRange(e ghclient.Event) (base, head string, ok bool) {
	if e.Type != "PushEvent" {
		return "", "", false
	}
	p := payloadOf(e)
	h := p.head()
	if isZeroSHA(p.Before) || isZeroSHA(h) {
		return "", "", false
	}
	return p.Before, h, true
}

// NeedsPull reports whether a PullRequestEvent needs GET pulls/{n} (§7.6 rule 3).
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
		case strings.HasPrefix(a.Ref, "refs/tags/") && isZeroSHA(a.Head):
			// a tag deleted by a push: its release page is gone
			return l.path("tags")
		case strings.HasPrefix(a.Ref, "refs/tags/"):
			return l.path("releases", "tag", refPath(ref))
		case isZeroSHA(a.Head):
			return l.path("branches")
		case newRef(a.Before):
			return l.path("commits", refPath(ref))
		case a.Commits == 1 && !a.Forced:
			return l.path("commit", a.Head)
		case a.Before == "":
			// an older payload without before: no range to compare
			return l.path("commits", refPath(ref))
		}
		return l.path("compare", short(a.Before)+"..."+short(a.Head))
	case "PullRequestEvent", "IssuesEvent":
		return l.issueOrPR(a)
	case "IssueCommentEvent":
		u := l.issueOrPR(a)
		if a.CommentID > 0 && a.Number > 0 {
			u += "#issuecomment-" + strconv.FormatInt(a.CommentID, 10)
		}
		return u
	case "PullRequestReviewEvent":
		u := l.issueOrPR(a)
		if a.ReviewID > 0 && a.Number > 0 {
			u += "#pullrequestreview-" + strconv.FormatInt(a.ReviewID, 10)
		}
		return u
	case "PullRequestReviewCommentEvent":
		u := l.issueOrPR(a)
		if a.CommentID > 0 && a.Number > 0 {
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

// EventLine formats one Events API item (spec §7.5); ok is false for types
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

// PushMessage assembles one push digest (spec §7.4 rule 1).
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

// CILine renders one run alert and its link.
func (x Texts) CILine(r ghclient.WorkflowRun) string {
	key := "ev.ci_other"
	switch r.Conclusion {
	case "failure", "timed_out", "startup_failure", "success", "cancelled", "action_required", "skipped", "neutral", "stale":
		key = "ev.ci_" + r.Conclusion
	}
	return x.runLine(key, r)
}

// CIFixedLine renders the alert of a passing run after a failure of the
// same workflow on the same branch ("fixed again").
func (x Texts) CIFixedLine(r ghclient.WorkflowRun) string { return x.runLine("ev.ci_fixed", r) }

// runLine renders a run with template key, and its link.
func (x Texts) runLine(key string, r ghclient.WorkflowRun) string {
	actor := r.ActorLogin()
	or := func(s string) string {
		if s = Clean(s); s == "" {
			return x.Dash()
		}
		return s
	}
	title := ""
	if t := Clean(ghclient.FirstLine(r.DisplayTitle)); t != "" {
		title = x.T("ev.title", "title", ghclient.Truncate(t, pushTitleRunes))
	}
	sha := r.HeadSHA[:min(7, len(r.HeadSHA))]
	line := x.T(key, "workflow", or(r.WorkflowName()), "number", strconv.Itoa(r.RunNumber), "branch", or(r.HeadBranch),
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
