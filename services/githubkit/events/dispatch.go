package events

import (
	"strings"
	"unicode"
)

// Subcommand names (spec §3.1).
const (
	SubRepo     = "repo"
	SubIssues   = "issues"
	SubPRs      = "prs"
	SubIssue    = "issue"
	SubReleases = "releases"
	SubUser     = "user"
	SubSearch   = "search"
	SubSub      = "sub"
	SubUnsub    = "unsub"
	SubSubs     = "subs"
	SubHelp     = "help"
	SubHook     = "hook" // admins: the repository's webhook (the root's webhook_cmd.go)
	SubCards    = "cards"
	// SubQuiet and SubDigest are a chat's quiet hours and digest (the
	// root's noise_cmd.go).
	SubQuiet  = "quiet"
	SubDigest = "digest"
)

// aliases maps every accepted word to its canonical subcommand.
var aliases = map[string]string{
	"repo": SubRepo, "r": SubRepo,
	"issues": SubIssues,
	"prs":    SubPRs, "pulls": SubPRs,
	"issue": SubIssue, "pr": SubIssue,
	"releases": SubReleases, "rel": SubReleases,
	"user": SubUser, "u": SubUser,
	"search": SubSearch, "s": SubSearch,
	"sub": SubSub, "subscribe": SubSub, "watch": SubSub,
	"unsub": SubUnsub, "unsubscribe": SubUnsub, "unwatch": SubUnsub,
	"subs": SubSubs, "subscriptions": SubSubs, "list": SubSubs,
	"help": SubHelp, "h": SubHelp,
	"hook": SubHook, "webhook": SubHook,
	"cards": SubCards,
	"quiet": SubQuiet, "免打扰": SubQuiet,
	"digest": SubDigest, "摘要": SubDigest,
}

// Aliases returns the aliases of a canonical subcommand, in a fixed order.
func Aliases(canonical string) []string {
	var out []string
	for _, w := range []string{"r", "pulls", "pr", "rel", "u", "s", "subscribe", "watch", "unsubscribe", "unwatch", "subscriptions", "list", "h"} {
		if aliases[w] == canonical {
			out = append(out, w)
		}
	}
	return out
}

// Parsed is a gh command line after dispatch.
type Parsed struct {
	Sub  string   // canonical subcommand (help for missing or unknown)
	Args []string // the words after the subcommand
}

// Arg is the i-th word after the subcommand, "" when there are fewer.
func (p Parsed) Arg(i int) string {
	if i < len(p.Args) {
		return p.Args[i]
	}
	return ""
}

// ParseCommand applies spec §3.1 rules 1-3 to the command's params.
func ParseCommand(params []string) Parsed {
	if len(params) > 0 && strings.EqualFold(strings.TrimSpace(params[0]), "gh") {
		params = params[1:]
	}
	words := strings.FieldsFunc(strings.Join(params, " "), unicode.IsSpace)
	if len(words) == 0 {
		return Parsed{Sub: SubHelp}
	}
	sub, ok := subOf(words[0])
	if !ok {
		return Parsed{Sub: SubHelp}
	}
	return Parsed{Sub: sub, Args: words[1:]}
}
