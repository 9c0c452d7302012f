package model

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MatchTrigger returns the first of words (in config order) found in text by
// the settings' match mode and case rule (spec §3.5). An empty text never
// matches.
func MatchTrigger(text string, s Settings) (string, bool) {
	if strings.TrimSpace(text) == "" || len(s.TriggerWords) == 0 {
		return "", false
	}
	hay := text
	if !s.TriggerCaseSensitive {
		hay = foldString(text)
	}
	for _, w := range s.TriggerWords {
		needle := w
		if !s.TriggerCaseSensitive {
			needle = foldString(w)
		}
		if needle == "" {
			continue
		}
		if s.TriggerMatch == MatchWord {
			if containsWord(hay, needle) {
				return w, true
			}
		} else if strings.Contains(hay, needle) {
			return w, true
		}
	}
	return "", false
}

// foldString maps every rune to the smallest rune of its simple case folding
// orbit, so two strings are equal under simple case folding exactly when
// their folds are equal.
func foldString(s string) string {
	return strings.Map(foldRune, s)
}

func foldRune(r rune) rune {
	min := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < min {
			min = f
		}
	}
	return min
}

// containsWord reports whether needle occurs in hay with no word character
// adjacent to the match.
func containsWord(hay, needle string) bool {
	for off := 0; off <= len(hay)-len(needle); {
		i := strings.Index(hay[off:], needle)
		if i < 0 {
			return false
		}
		start := off + i
		end := start + len(needle)
		before, _ := utf8.DecodeLastRuneInString(hay[:start])
		after, _ := utf8.DecodeRuneInString(hay[end:])
		if (start == 0 || !isWordRune(before)) && (end == len(hay) || !isWordRune(after)) {
			return true
		}
		// Step past the first rune of this match and try again.
		_, size := utf8.DecodeRuneInString(hay[start:])
		off = start + size
	}
	return false
}

// isWordRune reports whether r is a word character: a letter, digit or '_',
// except characters of scripts written without spaces.
func isWordRune(r rune) bool {
	if r == '_' {
		return true
	}
	if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
		return false
	}
	return !unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai)
}

// TriggerPattern is a Python regular expression that matches, with
// re.search, every text in which MatchTrigger finds one of the settings'
// words in substring mode (a superset in word mode): an event gate
// (docs/protocol.md) lets a message pass without asking only when it does
// not match. Each rune is written as an escape; without case sensitivity
// it is the class of every rune of its simple-fold orbit, which is
// exactly what foldString compares. "" when there is no word.
func TriggerPattern(s Settings) string {
	var alts []string
	for _, w := range s.TriggerWords {
		if w == "" {
			continue
		}
		var b strings.Builder
		for _, r := range w {
			if s.TriggerCaseSensitive {
				b.WriteString(pyRune(r))
				continue
			}
			b.WriteByte('[')
			b.WriteString(pyRune(r))
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				b.WriteString(pyRune(f))
			}
			b.WriteByte(']')
		}
		alts = append(alts, b.String())
	}
	return strings.Join(alts, "|")
}

// pyRune is r as an escape of Python's re, valid in and out of a class.
func pyRune(r rune) string {
	if r <= 0xFFFF {
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}
