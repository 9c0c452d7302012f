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

// Input limits (spec §3.2, §9).
const (
	MaxSearchRunes   = 256
	MaxUsernameRunes = 100
	maxEchoRunes     = 60
)

var repoRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}$`)

// ParseRepo normalises a repository argument (spec §3.2). apiHost is the
// host of a non-default github_api_url ("" for github.com), whose URLs are
// accepted too. It returns ErrEmptyRepo or ErrBadRepo.
func ParseRepo(arg, apiHost string) (ghclient.Repo, error) {
	s := strings.TrimSpace(arg)
	if s == "" {
		return ghclient.Repo{}, ErrEmptyRepo
	}
	lower := strings.ToLower(s)
	var owner, name string
	if strings.Contains(s, "://") || strings.HasPrefix(lower, "github.com/") || strings.HasPrefix(lower, "www.github.com/") {
		if !strings.Contains(s, "://") {
			s = "https://" + s
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
			return ghclient.Repo{}, ErrBadRepo
		}
		host := strings.ToLower(u.Hostname())
		if host != "github.com" && host != "www.github.com" && (apiHost == "" || !strings.EqualFold(host, hostOnly(apiHost))) {
			return ghclient.Repo{}, ErrBadRepo
		}
		segs := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
		if len(segs) < 2 {
			return ghclient.Repo{}, ErrBadRepo
		}
		owner, name = segs[0], segs[1]
	} else {
		var ok bool
		owner, name, ok = strings.Cut(s, "/")
		if !ok {
			return ghclient.Repo{}, ErrBadRepo
		}
	}
	if len(name) > 4 && strings.EqualFold(name[len(name)-4:], ".git") {
		name = name[:len(name)-4]
	} else if strings.EqualFold(name, ".git") {
		name = ""
	}
	if name == "." || name == ".." || !repoRE.MatchString(owner+"/"+name) {
		return ghclient.Repo{}, ErrBadRepo
	}
	return ghclient.Repo{Owner: owner, Name: name}, nil
}

func hostOnly(h string) string {
	if u, err := url.Parse("//" + h); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return h
}

// Echo cuts user input for an error message to maxEchoRunes runes.
func Echo(s string) string { return ghclient.Truncate(strings.TrimSpace(s), maxEchoRunes) }

var issueNumRE = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)

// ParseIssueNumber accepts an optional single '#' then a positive decimal of
// at most 2147483647 in ASCII digits (spec §3.2).
func ParseIssueNumber(s string) (int, bool) {
	s = strings.TrimPrefix(s, "#")
	if !issueNumRE.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > 2147483647 {
		return 0, false
	}
	return int(n), true
}

// ParseUsername trims, strips leading '@' and checks the length (spec §3.2).
// The caller path-escapes the result.
func ParseUsername(s string) (string, bool) {
	// strip leading "@"s and spaces in any mix ("@ octocat"), then the tail
	s = strings.TrimSpace(strings.TrimLeftFunc(s, func(r rune) bool { return r == '@' || unicode.IsSpace(r) }))
	if s == "" || utf8.RuneCountInString(s) > MaxUsernameRunes {
		return "", false
	}
	return s, true
}

// ParseState maps a state word to open, closed or all (default open).
func ParseState(words []string) string {
	if len(words) == 0 {
		return "open"
	}
	switch w := strings.ToLower(words[0]); w {
	case "open", "closed", "all":
		return w
	}
	return "open"
}
