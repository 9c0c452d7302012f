package events

import (
	"strconv"
	"strings"

	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// kindLines is the push line of each event type that has one: one
// formatter per kind. A new kind is one entry here (and its payload fields
// in activity.go, its catalogue keys, a golden file).
var kindLines = map[string]func(l line) string{
	"PushEvent":                     pushLine,
	"PullRequestEvent":              issueOrPRLine,
	"IssuesEvent":                   issueOrPRLine,
	"IssueCommentEvent":             func(l line) string { return l.ip("ev.comment") },
	"ReleaseEvent":                  releaseLine,
	"WatchEvent":                    func(l line) string { return l.x.T("ev.star", "actor", l.actor()) },
	"ForkEvent":                     forkLine,
	"CreateEvent":                   refLine,
	"DeleteEvent":                   refLine,
	"PullRequestReviewEvent":        reviewLine,
	"PullRequestReviewCommentEvent": reviewCommentLine,
	"CommitCommentEvent":            commitCommentLine,
	"MemberEvent":                   memberLine,
	"PublicEvent":                   publicLine,
	"GollumEvent":                   wikiLine,
	"DiscussionEvent":               discussionLine,
}

// Formatted reports whether the event type has a formatter.
func Formatted(typ string) bool {
	_, ok := kindLines[typ]
	return ok
}

// activityText is the first line of a push entry: the kind's formatter,
// or a dash for a type without one.
func (x Texts) activityText(a Activity) string {
	if f, ok := kindLines[a.Type]; ok {
		return f(line{x: x, a: a})
	}
	return x.Dash()
}

// line is one event being rendered, with the helpers every kind shares.
type line struct {
	x Texts
	a Activity
}

// actor is the event's actor, or a dash.
func (l line) actor() string {
	if actor := Clean(l.a.Actor); actor != "" {
		return actor
	}
	return l.x.Dash()
}

// or is s cleaned, or a dash when nothing is left.
func (l line) or(s string) string {
	if s = Clean(s); s == "" {
		return l.x.Dash()
	}
	return s
}

// title is the ev.title fragment of t, empty without a title.
func (l line) title(t string) string {
	if t = Clean(t); t == "" {
		return ""
	}
	return l.x.T("ev.title", "title", ghclient.Truncate(t, pushTitleRunes))
}

// num is n, or a dash when unknown.
func (l line) num(n int) string {
	if n <= 0 {
		return l.x.Dash()
	}
	return strconv.Itoa(n)
}

// ip renders an issue or PR template with their common arguments.
func (l line) ip(key string, kv ...string) string {
	x, a := l.x, l.a
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
	return x.T(key, append([]string{"actor", l.actor(), "what", what, "num", l.num(a.Number), "title", l.title(a.Title), "labels", labels}, kv...)...)
}

func pushLine(l line) string {
	x, a, actor := l.x, l.a, l.actor()
	ref := l.or(stripRef(a.Ref))
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
	case isZeroSHA(a.Head) && !newRef(a.Before):
		return x.T("ev.push_deleted", "actor", actor, "ref", ref)
	case a.Forced:
		return x.T("ev.push_forced", "actor", actor, "ref", ref, "head", head)
	case newRef(a.Before) && a.Commits > 0:
		return x.T(plural("ev.push_new_branch", a.Commits), "actor", actor, "n", n, "ref", ref, "head", head)
	case newRef(a.Before):
		return x.T("ev.push_new_branch_nocount", "actor", actor, "ref", ref, "head", head)
	case a.Commits > 0:
		return x.T(plural("ev.push", a.Commits), "actor", actor, "n", n, "ref", ref, "head", head)
	}
	return x.T("ev.push_nocount", "actor", actor, "ref", ref, "head", head)
}

func issueOrPRLine(l line) string {
	x, a := l.x, l.a
	switch a.Action {
	case "labeled", "unlabeled":
		return l.ip("ev."+a.Action, "label", l.or(a.Label))
	case "assigned", "unassigned":
		return l.ip("ev."+a.Action, "assignee", l.or(a.Assignee))
	}
	if a.Type == "IssuesEvent" {
		action := "ev.issue_other"
		switch a.Action {
		case "opened", "closed", "reopened", "edited", "deleted", "transferred", "pinned", "unpinned", "locked", "unlocked":
			action = "ev.issue_" + a.Action
		}
		return l.ip("ev.issue", "action", x.T(action))
	}
	switch a.Action {
	case "review_requested", "review_request_removed":
		return l.ip("ev.pr_"+a.Action, "reviewer", l.or(a.Reviewer))
	case "ready_for_review", "converted_to_draft", "synchronize":
		return l.ip("ev.pr_" + a.Action)
	}
	if a.Action == "opened" && a.Draft {
		return l.ip("ev.pr_draft")
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
	case "merged":
		action = "ev.pr_merged"
	}
	return l.ip("ev.pr", "action", x.T(action))
}

func releaseLine(l line) string {
	x, a, actor := l.x, l.a, l.actor()
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
	return x.T(key, "actor", actor, "release", x.T("ev.release_named", "name", ghclient.Truncate(name, pushTitleRunes), "tag", tag), "pre", pre)
}

func forkLine(l line) string {
	if f := Clean(l.a.Forkee); f != "" {
		return l.x.T("ev.fork_to", "actor", l.actor(), "fork", f)
	}
	return l.x.T("ev.fork", "actor", l.actor())
}

// refLine is a created or deleted branch, tag or repository.
func refLine(l line) string {
	x, a, actor := l.x, l.a, l.actor()
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
	return x.T(key, "actor", actor, "ref_type", word, "ref", l.or(a.Ref))
}

func reviewLine(l line) string {
	a := l.a
	if a.Action == "dismissed" || a.ReviewState == "dismissed" {
		return l.ip("ev.review_dismissed")
	}
	switch a.ReviewState {
	case "approved", "changes_requested", "commented":
		return l.ip("ev.review_" + a.ReviewState)
	}
	return l.ip("ev.review_other")
}

// reviewCommentLine is a comment on a PR's changes; a legacy payload whose
// PR number cannot be found says "a PR" rather than "PR #-".
func reviewCommentLine(l line) string {
	if l.a.Number <= 0 {
		return l.x.T("ev.review_comment_nonum", "actor", l.actor())
	}
	return l.ip("ev.review_comment")
}

func commitCommentLine(l line) string {
	a := l.a
	return l.x.T("ev.commit_comment", "actor", l.actor(), "sha", l.or(a.CommitID[:min(7, len(a.CommitID))]))
}

func memberLine(l line) string {
	key := "ev.member_added"
	switch l.a.Action {
	case "removed", "edited":
		key = "ev.member_" + l.a.Action
	}
	return l.x.T(key, "actor", l.actor(), "member", l.or(l.a.Member))
}

func publicLine(l line) string {
	if l.a.Action == "privatized" {
		return l.x.T("ev.private", "actor", l.actor())
	}
	return l.x.T("ev.public", "actor", l.actor())
}

func wikiLine(l line) string {
	x, a, actor := l.x, l.a, l.actor()
	if len(a.Pages) == 1 {
		key := "ev.wiki_edited"
		if a.Pages[0].Action == "created" {
			key = "ev.wiki_created"
		}
		return x.T(key, "actor", actor, "page", l.or(a.Pages[0].Name))
	}
	names := make([]string, 0, len(a.Pages))
	for _, pg := range a.Pages {
		names = append(names, l.or(pg.Name))
	}
	return x.T(plural("ev.wiki_pages", len(a.Pages)), "actor", actor, "n", strconv.Itoa(len(a.Pages)), "pages", x.Join(names))
}

func discussionLine(l line) string {
	x, a := l.x, l.a
	action := "ev.discussion_other"
	switch a.Action {
	case "created", "closed", "reopened", "answered", "unanswered", "edited", "deleted", "locked", "unlocked", "pinned", "unpinned", "transferred":
		action = "ev.discussion_" + a.Action
	}
	cat := ""
	if c := Clean(a.Category); c != "" {
		cat = x.T("ev.category", "category", c)
	}
	return x.T("ev.discussion", "actor", l.actor(), "action", x.T(action), "num", l.num(a.Number), "title", l.title(a.Title), "category", cat)
}
