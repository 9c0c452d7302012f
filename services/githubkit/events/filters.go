package events

import (
	"slices"
	"strings"
)

// Canonical event filters (spec §3.6).
const (
	KindPush         = "push"
	KindPullRequest  = "pull_request"
	KindIssues       = "issues"
	KindIssueComment = "issue_comment"
	KindRelease      = "release"
	KindStar         = "star"
	KindFork         = "fork"
	KindCreate       = "create"
	KindDelete       = "delete"
	KindBranch       = "branch"
	KindTag          = "tag"
	KindReview       = "review"
	// Kinds of the events added with link cards and webhooks.
	kindCommitComment = "commit_comment"
	kindMember        = "member"
	kindPublic        = "public"
	kindWiki          = "wiki"
	kindDiscussion    = "discussion"
	// kindAll matches every event kind; it exists so that "all ci" can ask
	// for every event and CI alerts together.
	kindAll = "all"
	// kindCI turns on alerts for failed workflow runs, kindCIAll for every
	// completed run. Neither is an event kind: no kinds (all events) does not
	// include them, since each costs an extra Actions API request per poll.
	kindCI    = "ci"
	kindCIAll = "ci_all"
)

// filterWords maps each accepted filter word to its canonical filter.
var filterWords = map[string]string{
	"push": KindPush, "commit": KindPush, "commits": KindPush,
	"pr": KindPullRequest, "prs": KindPullRequest, "pull_request": KindPullRequest,
	"issue": KindIssues, "issues": KindIssues,
	"comment": KindIssueComment,
	"release": KindRelease, "releases": KindRelease,
	"star": KindStar, "stars": KindStar,
	"fork": KindFork, "forks": KindFork,
	"create": KindCreate, "delete": KindDelete,
	"branch": KindBranch, "tag": KindTag,
	"review":         KindReview,
	"commit_comment": kindCommitComment, "commit_comments": kindCommitComment,
	"member": kindMember, "members": kindMember,
	"public": kindPublic, "visibility": kindPublic,
	"wiki": kindWiki, "gollum": kindWiki,
	"discussion": kindDiscussion, "discussions": kindDiscussion,
	"all": kindAll,
	"ci":  kindCI, "actions": kindCI, "workflow": kindCI, "workflows": kindCI,
	"ci_all": kindCIAll, "ci-all": kindCIAll,
}

// FilterWords returns every accepted filter word in a fixed order (help and
// sub.bad_events).
func FilterWords() []string {
	return []string{"push", "commit", "commits", "pr", "prs", "pull_request", "issue", "issues", "comment",
		"release", "releases", "star", "stars", "fork", "forks", "create", "delete", "branch", "tag", "review",
		"commit_comment", "commit_comments", "member", "members", "public", "visibility", "wiki", "gollum",
		"discussion", "discussions", "all", "ci", "actions", "workflow", "workflows", "ci_all", "ci-all"}
}

// ParseFilters maps filter words to canonical filters, de-duplicated in
// first-seen order. No words gives nil (all events). Unknown words are
// returned, lower-cased and de-duplicated, and then kinds is nil.
func ParseFilters(words []string) (kinds, unknown []string) {
	for _, w := range words {
		lw := strings.ToLower(w)
		k, ok := filterWords[lw]
		if !ok {
			if !slices.Contains(unknown, lw) {
				unknown = append(unknown, lw)
			}
			continue
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(unknown) > 0 {
		return nil, unknown
	}
	return kinds, nil
}

// Matches reports whether an event of type typ (with refType for Create and
// Delete events) passes the filter kinds; nil kinds match everything.
func Matches(kinds []string, typ, refType string) bool {
	if kinds == nil {
		return true
	}
	for _, k := range kinds {
		switch k {
		case kindAll:
			return true
		case kindCommitComment:
			if typ == "CommitCommentEvent" {
				return true
			}
		case kindMember:
			if typ == "MemberEvent" {
				return true
			}
		case kindPublic:
			if typ == "PublicEvent" {
				return true
			}
		case kindWiki:
			if typ == "GollumEvent" {
				return true
			}
		case kindDiscussion:
			if typ == "DiscussionEvent" {
				return true
			}
		case KindPush:
			if typ == "PushEvent" {
				return true
			}
		case KindPullRequest:
			if typ == "PullRequestEvent" {
				return true
			}
		case KindIssues:
			if typ == "IssuesEvent" {
				return true
			}
		case KindIssueComment:
			if typ == "IssueCommentEvent" {
				return true
			}
		case KindRelease:
			if typ == "ReleaseEvent" {
				return true
			}
		case KindStar:
			if typ == "WatchEvent" {
				return true
			}
		case KindFork:
			if typ == "ForkEvent" {
				return true
			}
		case KindCreate:
			if typ == "CreateEvent" {
				return true
			}
		case KindDelete:
			if typ == "DeleteEvent" {
				return true
			}
		case KindBranch, KindTag:
			if (typ == "CreateEvent" || typ == "DeleteEvent") && strings.EqualFold(refType, k) {
				return true
			}
		case KindReview:
			if typ == "PullRequestReviewEvent" || typ == "PullRequestReviewCommentEvent" {
				return true
			}
		}
	}
	return false
}

// WantsCI reports whether kinds ask for workflow run alerts, and whether
// for every completed run (all) or only the failed ones.
func WantsCI(kinds []string) (on, all bool) {
	return slices.Contains(kinds, kindCI) || slices.Contains(kinds, kindCIAll), slices.Contains(kinds, kindCIAll)
}
