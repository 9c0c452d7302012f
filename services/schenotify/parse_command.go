package schenotify

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// CommandIn is the command part of an invocation.
type CommandIn struct {
	Name     string   `json:"name"`
	Params   []string `json:"params"`
	FullText string   `json:"full_text"`
	Prefix   string   `json:"prefix,omitempty"`
}

// Command kinds produced by ParseSche and ParseDsche.
const (
	CmdHelp       = "help"
	CmdList       = "list"
	CmdAdd        = "add"
	CmdAddUsage   = "add_usage"
	CmdDelUsage   = "delete_usage"
	CmdDelInvalid = "delete_invalid"
	CmdDelAll     = "delete_all"
	CmdDelIndex   = "delete_index"
	CmdDelID      = "delete_id"
	// Changes of a reminder (snooze, edit, pause, resume); Verb is the canonical verb, Rest
	// the text after it as typed.
	cmdSnooze      = "snooze"
	cmdEdit        = "edit"
	cmdPause       = "pause"
	cmdResume      = "resume"
	cmdChangeUsage = "change_usage"
)

// changeVerbs maps the words of the change commands to their verb.
var changeVerbs = map[string]string{
	"snooze": cmdSnooze, "稍后": cmdSnooze, "延后": cmdSnooze,
	"edit": cmdEdit, "修改": cmdEdit, "改": cmdEdit,
	"pause": cmdPause, "暂停": cmdPause,
	"resume": cmdResume, "恢复": cmdResume, "继续": cmdResume,
}

// textWords introduce a new text in "!sche edit <id> text <new text>".
var textWords = map[string]bool{"text": true, "message": true, "内容": true, "文本": true}

// command is a parsed !sche or !dsche.
type command struct {
	Kind  string
	Page  int          // CmdList
	Add   when.AddSpec // CmdAdd
	Index int          // CmdDelIndex
	ID    string       // CmdDelID
	Token string       // CmdDelInvalid
	Verb  string       // CmdChangeUsage: the verb whose usage to show
	Rest  string       // CmdSnooze (its argument), CmdEdit (the when)
	Text  string       // CmdEdit: the new text, when Rest is empty
}

// foldWidth maps full-width digits and the full-width colon to ASCII;
// command input only (spec 4.1 rule 3).
func foldWidth(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return (r >= '０' && r <= '９') || r == '：' }) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= '０' && r <= '９':
			return '0' + (r - '０')
		case r == '：':
			return ':'
		}
		return r
	}, s)
}

// tokens drops the empty tokens of params.
func tokens(params []string) []string {
	var out []string
	for _, p := range params {
		if strings.TrimSpace(p) != "" {
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out
}

// ParseSche parses the params of !sche.
func ParseSche(in CommandIn) command {
	toks := tokens(in.Params)
	if len(toks) == 0 {
		return command{Kind: CmdList, Page: 1}
	}
	first := foldWidth(toks[0])
	if strings.EqualFold(first, "add") {
		spec, ok := parseAdd(addRest(in, toks))
		if !ok {
			return command{Kind: CmdAddUsage}
		}
		return command{Kind: CmdAdd, Add: spec}
	}
	if verb, ok := changeVerbs[strings.ToLower(first)]; ok {
		return parseChange(verb, restAfter(in, toks, toks[0]))
	}
	if len(toks) == 1 {
		if n, ok := atoiStrict(first); ok && n > 0 && first[0] != '-' {
			return command{Kind: CmdList, Page: n}
		}
	}
	return command{Kind: CmdHelp}
}

// parseChange parses the argument of snooze, edit, pause and resume.
func parseChange(verb, rest string) command {
	usage := command{Kind: cmdChangeUsage, Verb: verb}
	arg := strings.TrimSpace(rest)
	if verb == cmdSnooze {
		return command{Kind: cmdSnooze, Rest: arg}
	}
	idWord, after := cutWord(arg)
	id, ok := NormalizeID(foldWidth(idWord))
	if !ok {
		return usage
	}
	switch verb {
	case cmdPause, cmdResume:
		return command{Kind: verb, ID: id}
	}
	after = strings.TrimLeftFunc(after, unicode.IsSpace)
	w, afterWord := cutWord(after)
	if textWords[strings.ToLower(strings.TrimRight(w, ":："))] {
		text, ok := naturalText(afterWord)
		if !ok {
			return usage
		}
		return command{Kind: cmdEdit, ID: id, Text: text}
	}
	if strings.TrimSpace(after) == "" {
		return usage
	}
	return command{Kind: cmdEdit, ID: id, Rest: strings.TrimSpace(after)}
}

// naturalText is a new text after its separator, kept as typed.
func naturalText(rest string) (string, bool) {
	msg := strings.TrimLeftFunc(rest, unicode.IsSpace)
	msg = strings.TrimLeftFunc(strings.TrimPrefix(strings.TrimPrefix(msg, ":"), "："), unicode.IsSpace)
	return msg, strings.TrimSpace(msg) != ""
}

// addRest is the text after the "add" token, from full_text when it holds
// it (so the message keeps its spacing and line breaks), else the params.
func addRest(in CommandIn, toks []string) string { return restAfter(in, toks, "add") }

// restAfter is the text after the sub-command word, from full_text when it
// holds it, else the params.
func restAfter(in CommandIn, toks []string, sub string) string {
	ft := in.FullText
	// Find "add" among the first three whitespace-separated words: the
	// command word may come as "!sche" or as "!" "sche".
	pos := 0
	for word := 0; word < 3; word++ {
		start, end := nextWord(ft, pos)
		if start < 0 {
			break
		}
		if strings.EqualFold(ft[start:end], sub) && word > 0 {
			return ft[end:]
		}
		pos = end
	}
	return " " + strings.Join(toks[1:], " ")
}

// nextWord returns the bounds of the next whitespace-separated word at or
// after pos, or -1.
func nextWord(s string, pos int) (int, int) {
	start := -1
	for i, r := range s[pos:] {
		if unicode.IsSpace(r) {
			if start >= 0 {
				return start, pos + i
			}
			continue
		}
		if start < 0 {
			start = pos + i
		}
	}
	if start < 0 {
		return -1, -1
	}
	return start, len(s)
}

// cutWord splits s (starting at a word) into the word and the rest.
func cutWord(s string) (word, rest string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// message takes the message after a <when>: at least one whitespace
// character, then a non-blank rest, kept as typed after the separator.
func message(rest string) (string, bool) {
	if rest == "" {
		return "", false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	if !unicode.IsSpace(r) {
		return "", false
	}
	msg := strings.TrimLeftFunc(rest, unicode.IsSpace)
	if strings.TrimSpace(msg) == "" {
		return "", false
	}
	return msg, true
}

// parseAdd parses "<when> <message>" (rest starts with the separator after
// "add"). ok false means cmd.add_usage. A recognised form whose value is
// invalid is returned with DelayOK or WallOK false, or an Expr the caller
// rejects, so it can answer err.invalid_*.
func parseAdd(rest string) (when.AddSpec, bool) {
	s := strings.TrimLeftFunc(rest, unicode.IsSpace)
	w1, after1 := cutWord(s)
	if w1 == "" {
		return when.AddSpec{}, false
	}
	switch {
	case strings.EqualFold(w1, "in"):
		a := strings.TrimLeftFunc(after1, unicode.IsSpace)
		w2, after2 := cutWord(a)
		if w2 != "" && !startsWithDigit(foldWidth(w2)) {
			return naturalAdd(s)
		}
		msg, ok := message(after2)
		if w2 == "" || !ok {
			return when.AddSpec{}, false
		}
		raw := foldWidth(w2)
		d, err := when.ParseDuration(raw)
		if err != nil {
			// "in 10 minutes", "in the morning": a natural expression.
			return naturalAdd(s)
		}
		return when.AddSpec{Form: when.WhenIn, Raw: raw, Delay: d, DelayOK: err == nil && d >= when.MinDelay, Message: msg}, true
	case strings.EqualFold(w1, "cron"):
		a := strings.TrimLeftFunc(after1, unicode.IsSpace)
		var body string
		switch {
		case strings.HasPrefix(a, `"`):
			body = a[1:]
		case strings.HasPrefix(a, "“"):
			body = a[len("“"):]
		default:
			return when.AddSpec{}, false
		}
		end := strings.IndexAny(body, `"”`)
		if end < 0 {
			return when.AddSpec{}, false
		}
		expr := body[:end]
		closeLen := 1
		if strings.HasPrefix(body[end:], "”") {
			closeLen = len("”")
		}
		msg, ok := message(body[end+closeLen:])
		if !ok {
			return when.AddSpec{}, false
		}
		return when.AddSpec{Form: when.WhenCron, Raw: expr, Expr: expr, Message: msg}, true
	}
	f1 := foldWidth(w1)
	if looksLikeDate(f1) {
		// The date form: the time is the next word, after spaces or tabs.
		a := strings.TrimLeft(after1, " \t")
		if len(a) == len(after1) {
			return when.AddSpec{}, false
		}
		w2, after2 := cutWord(a)
		f2 := foldWidth(w2)
		if w2 != "" && !looksLikeClock(f2) {
			// "2030-01-31 dentist", "2030-01-31 3pm": a natural date.
			return naturalAdd(s)
		}
		msg, ok := message(after2)
		if w2 == "" || !ok {
			return when.AddSpec{}, false
		}
		raw := f1 + " " + f2
		w, ok := when.ParseDateTime(raw)
		return when.AddSpec{Form: when.WhenDate, Raw: raw, Wall: w, WallOK: ok, Message: msg}, true
	}
	if looksLikeClock(f1) {
		msg, ok := message(after1)
		if !ok {
			return when.AddSpec{}, false
		}
		w, ok := when.ParseClock(f1)
		return when.AddSpec{Form: when.WhenClock, Raw: f1, Wall: w, WallOK: ok, Message: msg}, true
	}
	return naturalAdd(s)
}

// naturalAdd is the add of a natural expression ("明天下午3点 开会",
// "tomorrow 3pm call mom"): the when and the message are split by
// when.ReadNatural once the clock and zone are known (when.PlanAdd).
func naturalAdd(s string) (when.AddSpec, bool) {
	if strings.TrimSpace(s) == "" {
		return when.AddSpec{}, false
	}
	return when.AddSpec{Form: when.WhenNatural, Raw: s}, true
}

func startsWithDigit(s string) bool { return s != "" && isDigit(s[0]) }

// looksLikeDate reports whether s has the shape digits-digits-digits.
func looksLikeDate(s string) bool {
	parts := strings.Split(s, "-")
	return len(parts) == 3 && allDigits(parts[0]) && allDigits(parts[1]) && allDigits(parts[2])
}

// looksLikeClock reports whether s has the shape digits:digits[:digits].
func looksLikeClock(s string) bool {
	parts := strings.Split(s, ":")
	if len(parts) != 2 && len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if !allDigits(p) {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// ParseDsche parses the params of !dsche (spec 4.3).
func ParseDsche(in CommandIn) command {
	toks := tokens(in.Params)
	if len(toks) == 0 {
		return command{Kind: CmdDelUsage}
	}
	t := foldWidth(toks[0])
	switch {
	case strings.EqualFold(t, "i"):
		if len(toks) < 2 {
			return command{Kind: CmdDelUsage}
		}
		n := foldWidth(toks[1])
		if idx, ok := atoiStrict(n); ok {
			return command{Kind: CmdDelIndex, Index: idx}
		}
		return command{Kind: CmdDelInvalid, Token: n}
	case strings.EqualFold(t, "all"):
		return command{Kind: CmdDelAll}
	}
	if idx, ok := atoiStrict(t); ok {
		return command{Kind: CmdDelIndex, Index: idx}
	}
	if id, ok := NormalizeID(t); ok {
		return command{Kind: CmdDelID, ID: id}
	}
	return command{Kind: CmdDelInvalid, Token: t}
}
