package events

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Refinement limits.
const (
	maxPatterns     = 10  // per refinement kind
	maxPatternBytes = 100 // per pattern
	// MaxFilterWordBytes caps one word of a subscription's filters: no
	// valid word is longer (maxPatterns patterns of maxPatternBytes, their
	// commas and the longest prefix). A subscription with a longer word is
	// refused whole (FilterTooLong), and no part of the word is echoed.
	MaxFilterWordBytes = len("-labels:") + maxPatterns*(maxPatternBytes+1)
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
}

// empty reports whether r narrows nothing.
func (r *Refine) empty() bool {
	return r == nil || (len(r.Branches) == 0 && len(r.Labels) == 0 && len(r.NotLabels) == 0 && len(r.Tags) == 0)
}

// refinePrefixes are the prefixes of refinement words.
var refinePrefixes = []string{"branch:", "branches:", "label:", "labels:", "-label:", "-labels:", "tag:", "tags:"}

// isRefineWord reports whether w is a refinement word (prefix:patterns).
func isRefineWord(w string) bool {
	lw := strings.ToLower(w)
	for _, p := range refinePrefixes {
		if strings.HasPrefix(lw, p) {
			return true
		}
	}
	return false
}

// ParseSubscription splits the words after "sub owner/repo" into filter
// words and refinement words (branch:main,release/* label:bug -label:wontfix
// tag:v*; each may repeat, values are comma-separated). Words it cannot
// read are returned in bad, and then kinds and ref are nil.
func ParseSubscription(words []string) (kinds []string, ref *Refine, bad []string) {
	var plain []string
	r := &Refine{}
	for _, w := range words {
		if !isRefineWord(w) {
			plain = append(plain, w)
			continue
		}
		i := strings.IndexByte(w, ':')
		name, vals := strings.ToLower(w[:i]), w[i+1:]
		var list *[]string
		fold := false
		switch name {
		case "branch", "branches":
			list = &r.Branches
		case "label", "labels":
			list, fold = &r.Labels, true
		case "-label", "-labels":
			list, fold = &r.NotLabels, true
		default:
			list = &r.Tags
		}
		ok := vals != ""
		for _, v := range strings.Split(vals, ",") {
			if !validPattern(v) {
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

// Refined reports whether r would look at an event of type typ at all; the
// poll parses a payload for refinement only when it does.
func (r *Refine) Refined(typ string) bool {
	if r.empty() {
		return false
	}
	switch typ {
	case "PushEvent", "CreateEvent", "DeleteEvent":
		return len(r.Branches) > 0 || len(r.Tags) > 0
	case "IssuesEvent", "PullRequestEvent", "IssueCommentEvent":
		return len(r.Labels) > 0 || len(r.NotLabels) > 0
	case "ReleaseEvent":
		return len(r.Tags) > 0
	}
	return false
}

// Allows reports whether a passes r.
func (r *Refine) Allows(a Activity) bool {
	if !r.Refined(a.Type) {
		return true
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
	default: // issues, PRs, issue comments
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
}

// AllowsBranch reports whether a CI run on branch passes r.
func (r *Refine) AllowsBranch(branch string) bool {
	return r == nil || len(r.Branches) == 0 || anyMatch(r.Branches, branch, false)
}

// FilterText renders a subscription's filter: its kinds (or allKey's
// text) and then its refinements.
func (x Texts) FilterText(kinds []string, r *Refine, allKey string) string {
	out := x.KindsText(kinds, allKey)
	if r.empty() {
		return out
	}
	var parts []string
	for _, p := range []struct {
		key  string
		list []string
	}{{"refine.branches", r.Branches}, {"refine.labels", r.Labels}, {"refine.not_labels", r.NotLabels}, {"refine.tags", r.Tags}} {
		if len(p.list) > 0 {
			ls := make([]string, len(p.list))
			for i, v := range p.list {
				ls[i] = Clean(v)
			}
			parts = append(parts, x.T(p.key, "list", x.Join(ls)))
		}
	}
	return out + x.T("refine.sep") + strings.Join(parts, x.T("refine.sep"))
}
