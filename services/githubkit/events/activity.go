package events

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Activity is one GitHub event normalized for the formatter and the
// refinement filters. The poller builds it from an Events API item
// (FromEvent); a webhook receiver builds the same value from a delivery, so
// both paths share one formatter. Type uses the Events API names
// (PushEvent, PullRequestEvent, ...), whatever the source.
type Activity struct {
	Type   string
	Action string
	Actor  string

	// Push: Ref is the full ref (refs/heads/x, refs/tags/v1) or a bare
	// name; Commits counts the new (distinct) commits, 0 when unknown.
	Ref         string
	Before      string
	Head        string
	Commits     int
	HeadMessage string
	Forced      bool
	// Files are the paths the push touched; FilesKnown says the list is
	// complete: a webhook push lists each commit's added, removed and
	// modified files, an Events API item none (the poller may learn them
	// from compare, Enrichment.Files).
	Files      []string
	FilesKnown bool

	// Author is who opened the issue, PR or discussion an event is about,
	// when the payload says.
	Author string

	// Pull requests, issues, comments, reviews, discussions.
	Number      int
	Title       string
	OnPR        bool // an issue comment, label or assignment on a pull request
	Merged      bool
	Draft       bool
	Labels      []string // the issue's or PR's labels, when the payload lists them
	LabelsKnown bool     // the payload listed labels (possibly none)
	Label       string   // the label added or removed
	Assignee    string
	Reviewer    string // requested reviewer (user login or team name)
	ReviewState string // approved, changes_requested, commented, dismissed
	CommentID   int64
	ReviewID    int64

	// Releases.
	Tag         string
	ReleaseName string
	Prerelease  bool

	// Create and Delete.
	RefType string

	// Forks, members, commit comments, wiki pages, discussions.
	Forkee   string
	Member   string
	CommitID string
	Pages    []WikiPage
	Category string
}

// WikiPage is one page of a wiki edit (GollumEvent).
type WikiPage struct {
	Name   string
	Action string // created or edited
}

type ghLabel struct {
	Name string `json:"name"`
}

type ghUser struct {
	Login string `json:"login"`
}

// payload is the union of the payload fields the formatters read, in the
// full and the trimmed (October 2025) Events API forms and the webhook form.
// Unknown fields are ignored and a field of an unexpected type leaves the
// payload empty.
type payload struct {
	Action       string  `json:"action"`
	Ref          *string `json:"ref"`
	RefType      string  `json:"ref_type"`
	Size         *int    `json:"size"`
	DistinctSize *int    `json:"distinct_size"`
	Before       string  `json:"before"`
	Head         string  `json:"head"`
	After        string  `json:"after"`  // webhook push
	Forced       bool    `json:"forced"` // webhook push
	Commits      []struct {
		SHA      string   `json:"sha"`
		ID       string   `json:"id"` // webhook push
		Message  string   `json:"message"`
		Distinct *bool    `json:"distinct"`
		Added    []string `json:"added"` // webhook push: the files
		Removed  []string `json:"removed"`
		Modified []string `json:"modified"`
	} `json:"commits"`
	HeadCommit *struct {
		ID      string `json:"id"`
		Message string `json:"message"`
	} `json:"head_commit"` // webhook push
	Number      int `json:"number"`
	PullRequest *struct {
		Number   int       `json:"number"`
		Title    *string   `json:"title"`
		Merged   *bool     `json:"merged"`
		MergedAt *string   `json:"merged_at"`
		Draft    bool      `json:"draft"`
		Labels   []ghLabel `json:"labels"`
		User     *ghUser   `json:"user"`
	} `json:"pull_request"`
	Issue *struct {
		Number      int       `json:"number"`
		Title       string    `json:"title"`
		Labels      []ghLabel `json:"labels"`
		PullRequest *prLinks  `json:"pull_request"`
		User        *ghUser   `json:"user"`
	} `json:"issue"`
	Label             *ghLabel `json:"label"`
	Assignee          *ghUser  `json:"assignee"`
	RequestedReviewer *ghUser  `json:"requested_reviewer"`
	RequestedTeam     *struct {
		Name string `json:"name"`
	} `json:"requested_team"`
	Release *struct {
		TagName    string `json:"tag_name"`
		Name       string `json:"name"`
		Prerelease bool   `json:"prerelease"`
	} `json:"release"`
	Review *struct {
		ID    int64  `json:"id"`
		State string `json:"state"`
	} `json:"review"`
	Comment *struct {
		ID       int64  `json:"id"`
		CommitID string `json:"commit_id"`
		// PullRequestURL and HTMLURL name the PR of a review comment; a
		// legacy review comment payload has no pull_request object.
		PullRequestURL string `json:"pull_request_url"`
		HTMLURL        string `json:"html_url"`
	} `json:"comment"`
	Forkee *struct {
		FullName string `json:"full_name"`
	} `json:"forkee"`
	Member *ghUser `json:"member"`
	Pages  []struct {
		PageName string `json:"page_name"`
		Title    string `json:"title"`
		Action   string `json:"action"`
	} `json:"pages"`
	Discussion *struct {
		Number   int     `json:"number"`
		Title    string  `json:"title"`
		User     *ghUser `json:"user"`
		Category *struct {
			Name string `json:"name"`
		} `json:"category"`
	} `json:"discussion"`
}

// prLinks is an issue's pull_request object. An issue that is a pull
// request has its links; older payloads (the Events API for old activity,
// Enterprise Server archives) put {"html_url": null, ...} on plain issues.
type prLinks struct {
	URL     *string `json:"url"`
	HTMLURL *string `json:"html_url"`
}

// isPR reports whether an issue's pull_request object names a pull
// request: present with a link. The same rule as IsPullRequest, for the
// lookups.
func (l *prLinks) isPR() bool {
	return l != nil && ((l.URL != nil && *l.URL != "") || (l.HTMLURL != nil && *l.HTMLURL != ""))
}

// prNumberIn returns the pull request number at the end of a pulls API
// address (…/pulls/5) or in a web address (…/pull/5#discussion_r1), 0 when
// there is none.
func prNumberIn(u string) int {
	for _, seg := range []string{"/pulls/", "/pull/"} {
		i := strings.LastIndex(u, seg)
		if i < 0 {
			continue
		}
		rest := u[i+len(seg):]
		end := strings.IndexAny(rest, "/#?")
		if end >= 0 {
			rest = rest[:end]
		}
		if n, err := strconv.Atoi(rest); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

func payloadOf(e ghclient.Event) payload {
	var p payload
	if len(e.Payload) > 0 {
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			return payload{}
		}
	}
	return p
}

// RefType returns payload.ref_type (Create and Delete events).
// RefType is a create or delete event's ref type ("branch", "tag").
func RefType(e ghclient.Event) string { return payloadOf(e).RefType }

func actorOf(e ghclient.Event) string {
	if e.Actor == nil {
		return ""
	}
	return e.Actor.Login
}

func labelNames(ls []ghLabel) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		if n := strings.TrimSpace(l.Name); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// pushCount returns the count of new commits: distinct_size, else size,
// else the distinct entries of a non-empty commits list, else 0 (unknown).
// size counts every commit of the push, also those already on another
// branch; distinct_size counts those new to the repository.
func (p payload) pushCount() int {
	if p.DistinctSize != nil {
		return *p.DistinctSize
	}
	if p.Size != nil && *p.Size > 0 {
		return *p.Size
	}
	n := 0
	for _, c := range p.Commits {
		if c.Distinct == nil || *c.Distinct {
			n++
		}
	}
	return n
}

// countKnown reports whether the payload says how many commits came.
func (p payload) countKnown() bool {
	return p.DistinctSize != nil || (p.Size != nil && *p.Size > 0) || len(p.Commits) > 0
}

func (p payload) head() string {
	if p.Head != "" {
		return p.Head
	}
	return p.After
}

// headMessage returns the head commit's message when the payload has it.
// The Events API lists at most 20 commits (the oldest of a longer push are
// listed, not the head), so the head is found by its sha, not by position.
func (p payload) headMessage() string {
	head := p.head()
	if p.HeadCommit != nil && (head == "" || p.HeadCommit.ID == head) {
		return p.HeadCommit.Message
	}
	for i := len(p.Commits) - 1; i >= 0; i-- {
		c := p.Commits[i]
		if sha := c.SHA + c.ID; sha != "" && sha == head {
			return c.Message
		}
	}
	return ""
}

// files returns the files a webhook push's commits list, and whether the
// payload lists them (every commit has at least one file list; an Events
// API item has none).
func (p payload) files() ([]string, bool) {
	if len(p.Commits) == 0 {
		return nil, false
	}
	var out []string
	for _, c := range p.Commits {
		if c.Added == nil && c.Removed == nil && c.Modified == nil {
			return nil, false
		}
		for _, l := range [][]string{c.Added, c.Removed, c.Modified} {
			for _, f := range l {
				if !slices.Contains(out, f) {
					out = append(out, f)
				}
			}
		}
	}
	return out, true
}

// FromEvent normalizes an Events API item; en (may be nil) adds what extra
// GitHub calls found out.
func FromEvent(e ghclient.Event, en *Enrichment) Activity {
	p := payloadOf(e)
	a := Activity{Type: e.Type, Action: p.Action, Actor: actorOf(e), RefType: strings.ToLower(p.RefType)}
	if p.Ref != nil {
		a.Ref = *p.Ref
	}
	switch e.Type {
	case "PushEvent":
		a.Before, a.Head, a.Forced = p.Before, p.head(), p.Forced
		a.Commits, a.HeadMessage = p.pushCount(), p.headMessage()
		if en != nil {
			if !p.countKnown() {
				a.Commits = en.Commits
			}
			if a.HeadMessage == "" {
				a.HeadMessage = en.HeadMessage
			}
			a.Forced = a.Forced || en.Forced
		}
		a.Files, a.FilesKnown = p.files()
		if !a.FilesKnown && en != nil && en.FilesKnown {
			a.Files, a.FilesKnown = en.Files, true
		}
	case "PullRequestEvent":
		a.Number = p.Number
		if pr := p.PullRequest; pr != nil {
			if a.Number == 0 {
				a.Number = pr.Number
			}
			if pr.Title != nil {
				a.Title = *pr.Title
			}
			a.Merged = (pr.Merged != nil && *pr.Merged) || (pr.MergedAt != nil && *pr.MergedAt != "")
			a.Draft = pr.Draft
			if pr.Labels != nil {
				a.Labels, a.LabelsKnown = labelNames(pr.Labels), true
			}
		}
		if en != nil && en.HasPR {
			if strings.TrimSpace(a.Title) == "" {
				a.Title = en.Title
			}
			a.Merged = a.Merged || en.Merged
			if !a.LabelsKnown && en.Labels != nil {
				a.Labels, a.LabelsKnown = en.Labels, true
			}
		}
		// older payloads said "merged" where GitHub now says closed with
		// merged true
		a.Merged = a.Merged || p.Action == "merged"
		a.OnPR = true
	case "IssuesEvent", "IssueCommentEvent":
		if is := p.Issue; is != nil {
			a.Number, a.Title, a.OnPR = is.Number, is.Title, is.PullRequest.isPR()
			if is.Labels != nil {
				a.Labels, a.LabelsKnown = labelNames(is.Labels), true
			}
		}
	case "PullRequestReviewEvent", "PullRequestReviewCommentEvent":
		if pr := p.PullRequest; pr != nil {
			a.Number = pr.Number
			if pr.Title != nil {
				a.Title = *pr.Title
			}
		}
		if p.Review != nil {
			a.ReviewState, a.ReviewID = strings.ToLower(p.Review.State), p.Review.ID
		}
		if a.Number == 0 && p.Comment != nil {
			// a legacy review comment names its PR only in its addresses
			if a.Number = prNumberIn(p.Comment.PullRequestURL); a.Number == 0 {
				a.Number = prNumberIn(p.Comment.HTMLURL)
			}
		}
		a.OnPR = true
	case "ReleaseEvent":
		if r := p.Release; r != nil {
			a.Tag, a.ReleaseName, a.Prerelease = strings.TrimSpace(r.TagName), strings.TrimSpace(r.Name), r.Prerelease
		}
	case "ForkEvent":
		if p.Forkee != nil {
			a.Forkee = p.Forkee.FullName
		}
	case "MemberEvent":
		if p.Member != nil {
			a.Member = p.Member.Login
		}
	case "GollumEvent":
		for _, pg := range p.Pages {
			name := pg.Title
			if strings.TrimSpace(name) == "" {
				name = pg.PageName
			}
			a.Pages = append(a.Pages, WikiPage{Name: name, Action: pg.Action})
		}
	case "DiscussionEvent":
		if d := p.Discussion; d != nil {
			a.Number, a.Title = d.Number, d.Title
			if d.Category != nil {
				a.Category = d.Category.Name
			}
		}
	}
	switch {
	case p.Issue != nil && p.Issue.User != nil:
		a.Author = p.Issue.User.Login
	case p.PullRequest != nil && p.PullRequest.User != nil:
		a.Author = p.PullRequest.User.Login
	case p.Discussion != nil && p.Discussion.User != nil:
		a.Author = p.Discussion.User.Login
	}
	if p.Label != nil {
		a.Label = p.Label.Name
	}
	if p.Assignee != nil {
		a.Assignee = p.Assignee.Login
	}
	if p.RequestedReviewer != nil {
		a.Reviewer = p.RequestedReviewer.Login
	} else if p.RequestedTeam != nil {
		a.Reviewer = p.RequestedTeam.Name
	}
	if p.Comment != nil {
		a.CommentID, a.CommitID = p.Comment.ID, p.Comment.CommitID
	}
	return a
}
