package events

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Link kinds a chat message may carry (link cards).
const (
	LinkRepo    = "repo"
	LinkIssue   = "issue" // an issue or a pull request: one API call reads both
	LinkRelease = "release"
	LinkCommit  = "commit"
)

// Link-scanning limits: a message gets at most MaxCardsPerMessage cards, and
// only its first maxLinkScanBytes are scanned, so a pasted log costs no more
// than a short message.
const (
	MaxCardsPerMessage = 3
	maxLinkScanBytes   = 8 << 10
	maxTagBytes        = 255
)

// Link is one GitHub web address recognised in a chat message.
type Link struct {
	Kind   string
	Repo   ghclient.Repo
	Number int    // LinkIssue
	Tag    string // LinkRelease, path-unescaped
	SHA    string // LinkCommit, lower-case hex
}

// Key identifies what the link is about: two Links with the same key get
// one card (issues/5 and pull/5 are the same item; owner and repo compare
// case-insensitively, like GitHub; a tag compares exactly).
func (l Link) Key() string {
	base := l.Kind + ":" + strings.ToLower(l.Repo.String())
	switch l.Kind {
	case LinkIssue:
		return base + "#" + strconv.Itoa(l.Number)
	case LinkRelease:
		return base + "@" + l.Tag
	case LinkCommit:
		return base + "@" + l.SHA
	}
	return base
}

// linkRE finds candidate addresses: an optional scheme, an optional www.,
// a host with a dot, then a path. The host is checked afterwards, so only
// github.com (and the installation's own host) ever yields a link.
var linkRE = regexp.MustCompile(`(?i)(?:https?://)?(?:www\.)?[a-z0-9][a-z0-9.-]*\.[a-z0-9-]+(?::[0-9]{1,5})?/[^\s<>"'` + "`" + `()\[\]{}|\\^，。、！？；：（）【】《》「」『』“”‘’]+`)

// pathTrim is what may end a sentence around an address without being part
// of it.
const pathTrim = ".,;:!?'\")]}>*_~"

// reservedOwners are github.com's own top-level pages: github.com/features/x
// is no repository, so it gets no card (and costs no request).
var reservedOwners = map[string]bool{
	"about": true, "apps": true, "codespaces": true, "collections": true, "contact": true, "customer-stories": true,
	"enterprise": true, "events": true, "explore": true, "features": true, "issues": true, "join": true, "login": true,
	"logout": true, "marketplace": true, "new": true, "notifications": true, "orgs": true, "organizations": true,
	"pricing": true, "pulls": true, "readme": true, "search": true, "security": true, "settings": true, "site": true,
	"sponsors": true, "stars": true, "team": true, "topics": true, "trending": true, "users": true,
}

var shaRE = regexp.MustCompile(`^[0-9a-fA-F]{7,40}$`)

// ParseLinks returns the GitHub Links of a chat message, first seen first,
// one per Key, at most MaxCardsPerMessage. apiHost is the host of a
// non-default github_api_url ("" for github.com), accepted like github.com
// (the rule of spec §3.2 for repository arguments). Anything else (another
// host, a path that is no repository, issue, PR, release or commit) is
// skipped; nothing here does I/O.
func ParseLinks(text, apiHost string) []Link {
	if len(text) > maxLinkScanBytes {
		i := maxLinkScanBytes
		for i > 0 && !utf8.RuneStart(text[i]) {
			i--
		}
		text = text[:i]
	}
	var out []Link
	seen := map[string]bool{}
	for _, loc := range linkRE.FindAllStringIndex(text, -1) {
		// "notgithub.com/o/r" must not match from "github.com": a match
		// starts after no host character (Chinese text glued to an
		// address is fine: no host is spelled in it)
		if loc[0] > 0 && strings.IndexByte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-/@_:", text[loc[0]-1]) >= 0 {
			continue
		}
		l, ok := parseLink(text[loc[0]:loc[1]], apiHost)
		if !ok || seen[l.Key()] {
			continue
		}
		seen[l.Key()] = true
		out = append(out, l)
		if len(out) == MaxCardsPerMessage {
			break
		}
	}
	return out
}

// parseLink reads one candidate address.
func parseLink(s, apiHost string) (Link, bool) {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, pathTrim)
	lower := strings.ToLower(s)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.Host == "" {
		return Link{}, false
	}
	host := strings.ToLower(u.Host)
	switch {
	case host == "github.com" || host == "www.github.com":
	case apiHost != "" && strings.EqualFold(host, apiHost):
	default:
		return Link{}, false
	}
	segs := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	if len(segs) < 2 || reservedOwners[strings.ToLower(segs[0])] {
		return Link{}, false
	}
	r, err := ParseRepo(segs[0]+"/"+segs[1], "")
	if err != nil {
		return Link{}, false
	}
	l := Link{Kind: LinkRepo, Repo: r}
	rest := segs[2:]
	switch {
	case len(rest) == 0:
		return l, true
	case len(rest) >= 2 && (rest[0] == "issues" || rest[0] == "pull"):
		// pull/5/files and issues/5 are the same item as pull/5
		n, ok := ParseIssueNumber(rest[1])
		if !ok || strings.HasPrefix(rest[1], "#") {
			return Link{}, false
		}
		l.Kind, l.Number = LinkIssue, n
		return l, true
	case len(rest) >= 3 && rest[0] == "releases" && rest[1] == "tag":
		tag, err := url.PathUnescape(strings.Join(rest[2:], "/"))
		if err != nil || tag == "" || len(tag) > maxTagBytes || !utf8.ValidString(tag) || strings.ContainsFunc(tag, unicode.IsControl) {
			return Link{}, false
		}
		l.Kind, l.Tag = LinkRelease, tag
		return l, true
	case len(rest) == 2 && rest[0] == "commit" && shaRE.MatchString(rest[1]):
		l.Kind, l.SHA = LinkCommit, strings.ToLower(rest[1])
		return l, true
	}
	return Link{}, false
}
