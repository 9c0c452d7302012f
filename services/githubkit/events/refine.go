package events

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Refinement limits.
const (
	maxPatterns     = 10  // per refinement kind
	maxPatternBytes = 100 // per pattern
	// MaxFilterWordBytes caps one word of a subscription's filters: no
	// valid word is longer (maxPatterns patterns of maxPatternBytes, their
	// commas and the longest prefix). A subscription with a longer word is
	// refused whole (FilterTooLong), and no part of the word is echoed.
	MaxFilterWordBytes = len("conclusions:") + maxPatterns*(maxPatternBytes+1)
	// maxBadShown caps the unreadable words a refusal repeats, each cut by
	// Echo.
	maxBadShown = 5
)

// FilterTooLong reports whether a word of words is longer than
// MaxFilterWordBytes.
func FilterTooLong(words []string) bool {
	for _, w := range words {
		if len(w) > MaxFilterWordBytes {
			return true
		}
	}
	return false
}

// ShownBad is what a refusal repeats of the unreadable words: at most
// maxBadShown of them, each cut by Echo.
func ShownBad(bad []string) []string {
	out := make([]string, 0, min(len(bad), maxBadShown))
	for i, w := range bad {
		if i == maxBadShown {
			out = append(out, "…")
			break
		}
		out = append(out, Echo(w))
	}
	return out
}

// Refine narrows a subscription inside the kinds it applies to; a kind it
// does not name passes unchanged, so "push release branch:main" still gets
// every release. A nil *Refine (every record written before refinements existed)
// narrows nothing. Patterns are globs: * matches any run of characters,
// slashes included, ? one character.
type Refine struct {
	// Branches keeps pushes, branch creations and deletions and CI runs whose
	// branch matches one of the patterns (case-sensitive, as git is).
	Branches []string `json:"branches,omitempty"`
	// Labels keeps issues, PRs and issue comments carrying a label that
	// matches one of the patterns (case-insensitive, as GitHub's labels are).
	// An event whose payload lists no labels (the trimmed PR form) does not
	// match.
	Labels []string `json:"labels,omitempty"`
	// NotLabels drops issues, PRs and issue comments carrying a label that
	// matches one of the patterns.
	NotLabels []string `json:"not_labels,omitempty"`
	// Tags keeps releases, tag pushes, tag creations and deletions whose tag
	// matches one of the patterns (case-sensitive).
	Tags []string `json:"tags,omitempty"`
	// Workflows keeps CI runs whose workflow name matches one of the
	// patterns (case-insensitive).
	Workflows []string `json:"workflows,omitempty"`
	// Conclusions, when set, are the run conclusions CI alerts are sent
	// for, instead of ci's failures or ci_all's every run.
	Conclusions []string `json:"conclusions,omitempty"`
	// Authors keeps issue, PR and discussion events (their comments and
	// reviews too) whose item was opened by a matching login
	// (case-insensitive, as logins are). A payload that names no author
	// (the trimmed PR form, comments on the Events API) does not match.
	Authors []string `json:"authors,omitempty"`
	// Actors keeps events (and CI runs) done by a matching login; NotActors
	// drops them (-actor:dependabot[bot]). Case-insensitive.
	Actors    []string `json:"actors,omitempty"`
	NotActors []string `json:"not_actors,omitempty"`
	// Paths keeps pushes that touch a file matching one of the patterns
	// (case-sensitive; docs/** or docs/* is everything under docs/). A push
	// whose files are not known passes (see Activity.FilesKnown).
	Paths []string `json:"paths,omitempty"`
}

// Conclusions a run can end with (GitHub's check conclusions); the
// conclusion: refinement takes these words only.
var runConclusions = []string{"success", "failure", "cancelled", "timed_out", "startup_failure", "action_required", "skipped", "neutral", "stale"}

// empty reports whether r narrows nothing.
func (r *Refine) empty() bool {
	return r == nil || (len(r.Branches) == 0 && len(r.Labels) == 0 && len(r.NotLabels) == 0 && len(r.Tags) == 0 &&
		len(r.Workflows) == 0 && len(r.Conclusions) == 0 && len(r.Authors) == 0 && len(r.Actors) == 0 &&
		len(r.NotActors) == 0 && len(r.Paths) == 0)
}

// refineList is one refinement kind: its canonical prefix (what Words
// writes), its aliases, whether its values fold case, and its list in r.
type refineList struct {
	prefix  string
	aliases []string
	fold    bool
	key     string // catalogue key of FilterText
	list    func(r *Refine) *[]string
}

// refineLists are the refinement kinds, in the order FilterText shows them.
var refineLists = []refineList{
	{"branch:", []string{"branch:", "branches:"}, false, "refine.branches", func(r *Refine) *[]string { return &r.Branches }},
	{"label:", []string{"label:", "labels:"}, true, "refine.labels", func(r *Refine) *[]string { return &r.Labels }},
	{"-label:", []string{"-label:", "-labels:"}, true, "refine.not_labels", func(r *Refine) *[]string { return &r.NotLabels }},
	{"tag:", []string{"tag:", "tags:"}, false, "refine.tags", func(r *Refine) *[]string { return &r.Tags }},
	{"workflow:", []string{"workflow:", "workflows:"}, true, "refine.workflows", func(r *Refine) *[]string { return &r.Workflows }},
	{"conclusion:", []string{"conclusion:", "conclusions:"}, true, "refine.conclusions", func(r *Refine) *[]string { return &r.Conclusions }},
	{"author:", []string{"author:", "authors:"}, true, "refine.authors", func(r *Refine) *[]string { return &r.Authors }},
	{"actor:", []string{"actor:", "actors:"}, true, "refine.actors", func(r *Refine) *[]string { return &r.Actors }},
	{"-actor:", []string{"-actor:", "-actors:"}, true, "refine.not_actors", func(r *Refine) *[]string { return &r.NotActors }},
	{"path:", []string{"path:", "paths:"}, false, "refine.paths", func(r *Refine) *[]string { return &r.Paths }},
}

// Words renders r as the refinement words that parse back to it.
func (r *Refine) Words() []string {
	if r.empty() {
		return nil
	}
	var out []string
	for _, l := range refineLists {
		if v := *l.list(r); len(v) > 0 {
			out = append(out, l.prefix+strings.Join(v, ","))
		}
	}
	return out
}

// refineOf returns the refinement kind of word w (prefix:patterns).
func refineOf(w string) (refineList, bool) {
	lw := strings.ToLower(w)
	for _, l := range refineLists {
		for _, p := range l.aliases {
			if strings.HasPrefix(lw, p) {
				return l, true
			}
		}
	}
	return refineList{}, false
}

// ParseSubscription splits the words after "sub owner/repo" into filter
// words and refinement words (branch:main,release/* label:bug -label:wontfix
// tag:v*; each may repeat, values are comma-separated). Words it cannot
// read are returned in bad, and then kinds and ref are nil.
func ParseSubscription(words []string) (kinds []string, ref *Refine, bad []string) {
	var plain []string
	r := &Refine{}
	for _, w := range words {
		rl, isRefine := refineOf(w)
		if !isRefine {
			plain = append(plain, w)
			continue
		}
		vals := w[strings.IndexByte(w, ':')+1:]
		list, fold := rl.list(r), rl.fold
		ok := vals != ""
		for _, v := range strings.Split(vals, ",") {
			if !validPattern(v) || (rl.prefix == "conclusion:" && !slices.Contains(runConclusions, strings.ToLower(v))) {
				ok = false
				break
			}
			if fold {
				v = strings.ToLower(v)
			}
			if !slices.Contains(*list, v) {
				*list = append(*list, v)
			}
		}
		if !ok || len(*list) > maxPatterns {
			if !slices.Contains(bad, w) {
				bad = append(bad, w)
			}
		}
	}
	kinds, unknown := ParseFilters(plain)
	bad = append(unknown, bad...)
	if len(bad) > 0 {
		return nil, nil, bad
	}
	if r.empty() {
		r = nil
	} else if (len(r.Workflows) > 0 || len(r.Conclusions) > 0) && !slices.Contains(kinds, kindCI) && !slices.Contains(kinds, kindCIAll) {
		// workflow: and conclusion: are about CI alerts: naming them asks
		// for the alerts (the other kinds stay as written)
		kinds = append(kinds, kindCI)
	}
	return kinds, r, nil
}

func validPattern(p string) bool {
	if p == "" || len(p) > maxPatternBytes || !utf8.ValidString(p) {
		return false
	}
	for _, c := range p {
		if unicode.IsSpace(c) || unicode.IsControl(c) {
			return false
		}
	}
	return true
}

// globMatch reports whether s matches pattern, where * matches any run of
// characters (slashes too) and ? exactly one.
func globMatch(pattern, s string) bool {
	// iterative wildcard matching with one backtrack point
	p, t := []rune(pattern), []rune(s)
	pi, ti, star, mark := 0, 0, -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi, mark = star+1, mark+1
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

func anyMatch(patterns []string, s string, fold bool) bool {
	if fold {
		s = strings.ToLower(s)
	}
	for _, p := range patterns {
		if fold {
			p = strings.ToLower(p)
		}
		if globMatch(p, s) {
			return true
		}
	}
	return false
}

// authored reports whether events of type typ have an item author the
// author: refinement reads.
func authored(typ string) bool {
	switch typ {
	case "IssuesEvent", "PullRequestEvent", "IssueCommentEvent", "PullRequestReviewEvent",
		"PullRequestReviewCommentEvent", "DiscussionEvent":
		return true
	}
	return false
}

// Refined reports whether r would look at an event of type typ at all; the
// poll parses a payload for refinement only when it does.
func (r *Refine) Refined(typ string) bool {
	if r.empty() {
		return false
	}
	if len(r.Actors) > 0 || len(r.NotActors) > 0 || (len(r.Authors) > 0 && authored(typ)) {
		return true
	}
	switch typ {
	case "PushEvent":
		return len(r.Branches) > 0 || len(r.Tags) > 0 || len(r.Paths) > 0
	case "CreateEvent", "DeleteEvent":
		return len(r.Branches) > 0 || len(r.Tags) > 0
	case "IssuesEvent", "PullRequestEvent", "IssueCommentEvent":
		return len(r.Labels) > 0 || len(r.NotLabels) > 0
	case "ReleaseEvent":
		return len(r.Tags) > 0
	}
	return false
}

// WantsFiles reports whether r reads the files of a push (path:), which
// a polled push does not carry.
func (r *Refine) WantsFiles() bool { return r != nil && len(r.Paths) > 0 }

// allowsActor applies actor: and -actor: to login.
func (r *Refine) allowsActor(login string) bool {
	if len(r.NotActors) > 0 && login != "" && anyMatch(r.NotActors, login, true) {
		return false
	}
	return len(r.Actors) == 0 || (login != "" && anyMatch(r.Actors, login, true))
}

// Allows reports whether a passes r.
func (r *Refine) Allows(a Activity) bool {
	if !r.Refined(a.Type) {
		return true
	}
	if !r.allowsActor(a.Actor) {
		return false
	}
	if len(r.Authors) > 0 && authored(a.Type) && (a.Author == "" || !anyMatch(r.Authors, a.Author, true)) {
		return false
	}
	if a.Type == "PushEvent" && len(r.Paths) > 0 && a.FilesKnown && !r.touches(a.Files) {
		return false
	}
	switch a.Type {
	case "PushEvent", "CreateEvent", "DeleteEvent":
		name, tag := a.Ref, false
		switch {
		case strings.HasPrefix(a.Ref, "refs/tags/"):
			name, tag = strings.TrimPrefix(a.Ref, "refs/tags/"), true
		case strings.HasPrefix(a.Ref, "refs/heads/"):
			name = strings.TrimPrefix(a.Ref, "refs/heads/")
		case a.Type != "PushEvent":
			switch a.RefType {
			case "tag":
				tag = true
			case "branch":
			default:
				return true // a repository creation
			}
		}
		if tag {
			return len(r.Tags) == 0 || anyMatch(r.Tags, name, false)
		}
		return len(r.Branches) == 0 || anyMatch(r.Branches, name, false)
	case "ReleaseEvent":
		return anyMatch(r.Tags, a.Tag, false)
	case "IssuesEvent", "PullRequestEvent", "IssueCommentEvent":
		if len(r.NotLabels) > 0 {
			for _, l := range a.Labels {
				if anyMatch(r.NotLabels, l, true) {
					return false
				}
			}
		}
		if len(r.Labels) == 0 {
			return true
		}
		for _, l := range a.Labels {
			if anyMatch(r.Labels, l, true) {
				return true
			}
		}
		return false
	}
	return true
}

// touches reports whether a file of files matches a path: pattern.
func (r *Refine) touches(files []string) bool {
	for _, f := range files {
		if anyMatch(r.Paths, f, false) {
			return true
		}
	}
	return false
}

// AllowsBranch reports whether a CI run on branch passes r.
func (r *Refine) AllowsBranch(branch string) bool {
	return r == nil || len(r.Branches) == 0 || anyMatch(r.Branches, branch, false)
}

// AllowsRun reports whether a completed CI run passes r's branch:,
// workflow:, actor: and -actor: refinements, and, when r names
// conclusions, whether its conclusion is one of them; ok is false when r
// names none (the caller's ci / ci_all rule decides).
func (r *Refine) AllowsRun(run ghclient.WorkflowRun) (pass, byConclusion bool) {
	if r == nil {
		return true, false
	}
	if !r.AllowsBranch(run.HeadBranch) || !r.allowsActor(run.ActorLogin()) {
		return false, false
	}
	if len(r.Workflows) > 0 && !anyMatch(r.Workflows, run.WorkflowName(), true) {
		return false, false
	}
	if len(r.Conclusions) > 0 {
		return slices.Contains(r.Conclusions, strings.ToLower(run.Conclusion)), true
	}
	return true, false
}

// FilterText renders a subscription's filter: its kinds (or allKey's
// text) and then its refinements.
func (x Texts) FilterText(kinds []string, r *Refine, allKey string) string {
	out := x.KindsText(kinds, allKey)
	if r.empty() {
		return out
	}
	var parts []string
	for _, l := range refineLists {
		if list := *l.list(r); len(list) > 0 {
			ls := make([]string, len(list))
			for i, v := range list {
				ls[i] = Clean(v)
			}
			parts = append(parts, x.T(l.key, "list", x.Join(ls)))
		}
	}
	return out + x.T("refine.sep") + strings.Join(parts, x.T("refine.sep"))
}
