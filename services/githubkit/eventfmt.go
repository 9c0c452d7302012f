package githubkit

import (
	"encoding/json"
	"strconv"
	"strings"
)

// payload is the union of the payload fields the formatters read, in both
// the full and the trimmed (October 2025) forms. Unknown fields are ignored
// and a field of an unexpected type leaves the payload empty.
type payload struct {
	Action  string  `json:"action"`
	Ref     *string `json:"ref"`
	RefType string  `json:"ref_type"`
	Size    *int    `json:"size"`
	Before  string  `json:"before"`
	Head    string  `json:"head"`
	Commits []struct {
		SHA     string `json:"sha"`
		Message string `json:"message"`
	} `json:"commits"`
	Number      int `json:"number"`
	PullRequest *struct {
		Number   int     `json:"number"`
		Title    *string `json:"title"`
		Merged   *bool   `json:"merged"`
		MergedAt *string `json:"merged_at"`
	} `json:"pull_request"`
	Issue *struct {
		Number int    `json:"number"`
		Title  string `json:"title"`
	} `json:"issue"`
	Release *struct {
		TagName string `json:"tag_name"`
		Name    string `json:"name"`
	} `json:"release"`
	Review *struct {
		State string `json:"state"`
	} `json:"review"`
}

func (e Event) payload() payload {
	var p payload
	if len(e.Payload) > 0 {
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			return payload{}
		}
	}
	return p
}

// RefType returns payload.ref_type (Create and Delete events).
func (e Event) RefType() string { return e.payload().RefType }

func (e Event) actor() string {
	if e.Actor == nil {
		return ""
	}
	return e.Actor.Login
}

// formatted reports whether the event type has a formatter.
func formatted(typ string) bool {
	switch typ {
	case "PushEvent", "PullRequestEvent", "IssuesEvent", "IssueCommentEvent", "ReleaseEvent", "WatchEvent",
		"ForkEvent", "CreateEvent", "DeleteEvent", "PullRequestReviewEvent", "PullRequestReviewCommentEvent":
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
	// Title and Merged come from GET pulls/{n}; HasPR says they are set.
	Title  string
	Merged bool
	HasPR  bool
}

func isZeroSHA(s string) bool { return s == "" || strings.Trim(s, "0") == "" }

// pushCount returns payload size, else the length of a non-empty commits
// list, else 0 (unknown).
func (p payload) pushCount() int {
	if p.Size != nil && *p.Size > 0 {
		return *p.Size
	}
	return len(p.Commits)
}

// needsCompare reports whether a PushEvent needs compare (§7.6 rule 2).
func (e Event) needsCompare() (base, head string, ok bool) {
	if e.Type != "PushEvent" {
		return "", "", false
	}
	p := e.payload()
	if p.pushCount() > 0 || isZeroSHA(p.Before) || isZeroSHA(p.Head) {
		return "", "", false
	}
	return p.Before, p.Head, true
}

// needsPull reports whether a PullRequestEvent needs GET pulls/{n} (§7.6 rule 3).
func (e Event) needsPull() (int, bool) {
	if e.Type != "PullRequestEvent" {
		return 0, false
	}
	p := e.payload()
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

// eventLine formats one event (spec §7.5); ok is false for types without a
// formatter. en may be nil.
func (x texts) eventLine(e Event, en *Enrichment) (string, bool) {
	if !formatted(e.Type) {
		return "", false
	}
	p := e.payload()
	actor := e.actor()
	if actor == "" {
		actor = x.dash()
	}
	title := func(t string) string {
		t = strings.TrimSpace(t)
		if t == "" {
			return ""
		}
		return x.t("ev.title", "title", truncate(t, pushTitleRunes))
	}
	num := func(n int) string {
		if n <= 0 {
			return x.dash()
		}
		return strconv.Itoa(n)
	}
	switch e.Type {
	case "PushEvent":
		ref := ""
		if p.Ref != nil {
			ref = stripRef(*p.Ref)
		}
		if ref == "" {
			ref = x.dash()
		}
		n := p.pushCount()
		msg := ""
		if len(p.Commits) > 0 {
			msg = p.Commits[len(p.Commits)-1].Message
		}
		if en != nil {
			if n == 0 {
				n = en.Commits
			}
			if msg == "" {
				msg = en.HeadMessage
			}
		}
		head := ""
		if l := firstLine(msg); l != "" {
			head = x.t("ev.push_head", "msg", truncate(l, commitLineRunes))
		}
		if n <= 0 {
			return x.t("ev.push_nocount", "actor", actor, "ref", ref, "head", head), true
		}
		return x.t("ev.push", "actor", actor, "n", strconv.Itoa(n), "ref", ref, "head", head), true
	case "PullRequestEvent":
		n := p.Number
		t := ""
		merged := false
		if p.PullRequest != nil {
			if n == 0 {
				n = p.PullRequest.Number
			}
			if p.PullRequest.Title != nil {
				t = *p.PullRequest.Title
			}
			merged = (p.PullRequest.Merged != nil && *p.PullRequest.Merged) ||
				(p.PullRequest.MergedAt != nil && *p.PullRequest.MergedAt != "")
		}
		if en != nil && en.HasPR {
			if strings.TrimSpace(t) == "" {
				t = en.Title
			}
			merged = merged || en.Merged
		}
		action := "ev.pr_other"
		switch p.Action {
		case "opened":
			action = "ev.pr_opened"
		case "reopened":
			action = "ev.pr_reopened"
		case "closed":
			action = "ev.pr_closed"
			if merged {
				action = "ev.pr_merged"
			}
		}
		return x.t("ev.pr", "actor", actor, "action", x.t(action), "num", num(n), "title", title(t)), true
	case "IssuesEvent":
		action := "ev.issue_other"
		switch p.Action {
		case "opened", "closed", "reopened":
			action = "ev.issue_" + p.Action
		}
		n, t := 0, ""
		if p.Issue != nil {
			n, t = p.Issue.Number, p.Issue.Title
		}
		return x.t("ev.issue", "actor", actor, "action", x.t(action), "num", num(n), "title", title(t)), true
	case "IssueCommentEvent":
		n, t := 0, ""
		if p.Issue != nil {
			n, t = p.Issue.Number, p.Issue.Title
		}
		return x.t("ev.comment", "actor", actor, "num", num(n), "title", title(t)), true
	case "ReleaseEvent":
		tag := ""
		if p.Release != nil {
			tag = strings.TrimSpace(p.Release.TagName)
			if tag == "" {
				tag = strings.TrimSpace(p.Release.Name)
			}
		}
		if tag == "" {
			tag = x.dash()
		}
		return x.t("ev.release", "actor", actor, "tag", tag), true
	case "WatchEvent":
		return x.t("ev.star", "actor", actor), true
	case "ForkEvent":
		return x.t("ev.fork", "actor", actor), true
	case "CreateEvent", "DeleteEvent":
		key := "ev.create"
		if e.Type == "DeleteEvent" {
			key = "ev.delete"
		}
		rt := strings.ToLower(p.RefType)
		if rt == "repository" && e.Type == "CreateEvent" {
			return x.t("ev.create_repo", "actor", actor), true
		}
		word := rt
		switch rt {
		case "branch":
			word = x.t("ev.ref_branch")
		case "tag":
			word = x.t("ev.ref_tag")
		case "":
			word = x.dash()
		}
		ref := ""
		if p.Ref != nil {
			ref = *p.Ref
		}
		if ref == "" {
			ref = x.dash()
		}
		return x.t(key, "actor", actor, "ref_type", word, "ref", ref), true
	case "PullRequestReviewEvent":
		n := 0
		if p.PullRequest != nil {
			n = p.PullRequest.Number
		}
		verdict := "ev.verdict_other"
		if p.Review != nil {
			switch strings.ToLower(p.Review.State) {
			case "approved":
				verdict = "ev.verdict_approved"
			case "changes_requested":
				verdict = "ev.verdict_changes_requested"
			case "commented":
				verdict = "ev.verdict_commented"
			}
		}
		return x.t("ev.review", "actor", actor, "num", num(n), "verdict", x.t(verdict)), true
	case "PullRequestReviewCommentEvent":
		n := 0
		if p.PullRequest != nil {
			n = p.PullRequest.Number
		}
		return x.t("ev.review_comment", "actor", actor, "num", num(n)), true
	}
	return "", false
}

// pushMessage assembles one push digest (spec §7.4 rule 1).
func (x texts) pushMessage(repo string, lines []string, more int) string {
	out := x.t("push.header", "repo", repo) + "\n" + strings.Join(lines, "\n")
	if more > 0 {
		out += "\n" + x.t("push.more", "n", strconv.Itoa(more))
	}
	return out
}
