package schenotify

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// Caps of the members a reminder names (every stored string has one).
const (
	MaxMentions     = 10
	MaxMentionRunes = 64
)

// mentionsFailure is the failure of too many or too long mentions.
func mentionsFailure(field string) *when.Failure {
	return fail("mentions", field, map[string]string{"max": strconv.Itoa(MaxMentions), "len": strconv.Itoa(MaxMentionRunes)})
}

// takeMentions removes the "@id" words from a command's message and
// returns them (in order, without duplicates). A word is "@" followed by
// non-space characters, at the start or after a space. More than
// MaxMentions, or one longer than MaxMentionRunes, is a failure.
func takeMentions(msg string) (string, []string, *when.Failure) {
	var ids []string
	var b strings.Builder
	tooLong := false
	i := 0
	for i < len(msg) {
		r, size := utf8.DecodeRuneInString(msg[i:])
		if unicode.IsSpace(r) {
			b.WriteString(msg[i : i+size])
			i += size
			continue
		}
		// A word: msg[i:j].
		j := i + strings.IndexFunc(msg[i:], unicode.IsSpace)
		if j < i {
			j = len(msg)
		}
		word := msg[i:j]
		if len(word) < 2 || word[0] != '@' {
			b.WriteString(word)
			i = j
			continue
		}
		id := word[1:]
		if utf8.RuneCountInString(id) > MaxMentionRunes {
			tooLong = true
		}
		if !hasString(ids, id) {
			ids = append(ids, id)
		}
		// Drop the word and the spaces after it.
		i = j
		for i < len(msg) {
			r, size := utf8.DecodeRuneInString(msg[i:])
			if !unicode.IsSpace(r) {
				break
			}
			i += size
		}
	}
	if tooLong || len(ids) > MaxMentions {
		return msg, nil, mentionsFailure("")
	}
	return strings.TrimRightFunc(b.String(), unicode.IsSpace), ids, nil
}

func hasString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// validMentions checks the tool's mentions: ids without spaces, within the
// caps, duplicates dropped.
func validMentions(ids []string) ([]string, bool) {
	var out []string
	for _, id := range ids {
		id = strings.TrimPrefix(strings.TrimSpace(id), "@")
		if id == "" || strings.ContainsFunc(id, unicode.IsSpace) || !utf8.ValidString(id) || utf8.RuneCountInString(id) > MaxMentionRunes {
			return nil, false
		}
		if !hasString(out, id) {
			out = append(out, id)
		}
	}
	return out, len(out) <= MaxMentions
}

// deliveryChain is the message chain of a delivery: in a group, an At for
// the creator (when the installation mentions creators) and one for each
// member the reminder names, then the text after a space; elsewhere the
// text alone (spec 7.4 step 5).
func deliveryChain(set Settings, rec *Record, text string) []wire.Component {
	if rec.Session.TargetType != "group" {
		return wire.Plain(text)
	}
	var targets []string
	if set.MentionCreator && rec.CreatorSenderID != "" {
		targets = append(targets, rec.CreatorSenderID)
	}
	for _, m := range rec.Mentions {
		if !hasString(targets, m) {
			targets = append(targets, m)
		}
	}
	if len(targets) == 0 {
		return wire.Plain(text)
	}
	chain := make([]wire.Component, 0, len(targets)+1)
	for _, id := range targets {
		chain = append(chain, wire.Component{Type: "At", Target: wire.ID(id)})
	}
	return append(chain, wire.Component{Type: "Plain", Text: " " + text})
}
