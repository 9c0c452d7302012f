package when

import (
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// remindMe are the openings that ask for a reminder rather than say what
// it is about; they are never part of the message.
var remindMe = []string{"请提醒我", "麻烦提醒我", "记得提醒我", "提醒我", "叫我", "remind me to", "remind me"}

// ReadReminder reads the natural "<when> <message>" of "!sche add". The
// time is read by ReadNatural, the reader of the tool's time_str too; this
// only finds the message around it:
//   - "remind me (to)" / "提醒我" is dropped before the time or the message
//     ("2小时后提醒我开会" gives "开会");
//   - the time may come after the message when the line starts with
//     "remind me" / "提醒我" or the time starts with in/at/on/every ("remind
//     me to call mom in 2 hours");
//   - an advance notice may end the message ("开会 提前10分钟提醒我",
//     "meeting, remind me 10 minutes before"): the time moves, the text
//     stays.
//
// The message is "" when nothing but time was written (no_message).
func ReadReminder(text string, in ScheduleInput) (Natural, string, error) {
	asked, body := cutRemindMe(text)
	n, err := ReadNatural(body, in)
	if err == nil {
		msg, _ := naturalMessage(n.Rest)
		again, m := cutRemindMe(msg)
		if t, ok := cutFoldPrefix(m, "to "); ok && (asked || again) {
			// "remind me tomorrow at 9 to call bob"
			m = t
		}
		msg = m
		return finishReminder(n, msg, in)
	}
	var hint *hintError
	if errors.As(err, &hint) || errors.Is(err, errCalendarRange) || errors.Is(err, errIntervalShort) {
		return Natural{}, "", err
	}
	if n, msg, terr, ok := readTrailing(body, asked, in); ok {
		if terr != nil {
			return Natural{}, "", terr
		}
		return finishReminder(n, msg, in)
	}
	return Natural{}, "", err
}

// finishReminder applies an advance notice that ends the message.
func finishReminder(n Natural, msg string, in ScheduleInput) (Natural, string, error) {
	msg, adv := cutAdvance(msg)
	if adv > 0 {
		var err error
		if n, err = n.early(adv, in); err != nil {
			return Natural{}, "", err
		}
	}
	m, ok := naturalMessage(msg)
	if !ok {
		return n, "", nil
	}
	return n, m, nil
}

// cutRemindMe drops a leading "remind me (to)" / "提醒我" (after spaces).
func cutRemindMe(s string) (bool, string) {
	t := strings.TrimLeftFunc(s, unicode.IsSpace)
	for _, p := range remindMe {
		if len(t) < len(p) || !strings.EqualFold(t[:len(p)], p) {
			continue
		}
		rest := t[len(p):]
		if r, _ := utf8.DecodeRuneInString(rest); p[0] < utf8.RuneSelf && rest != "" && (isASCIILetter(unicode.ToLower(r)) || isASCIIDigit(r)) {
			continue // "remind meeting": not the phrase
		}
		return true, strings.TrimLeftFunc(rest, unicode.IsSpace)
	}
	return false, s
}

// trailingStarts open a time that may follow the message without "remind
// me" before it.
var trailingStarts = []string{"in ", "at ", "on ", "every ", "each "}

// notBeforeTime are words a message cannot end with before its time: the
// time belongs to the message then ("buy tickets for friday").
var notBeforeTime = map[string]bool{"for": true, "until": true, "till": true, "before": true, "after": true, "by": true,
	"from": true, "since": true, "of": true, "about": true, "the": true, "a": true, "an": true, "and": true, "or": true, "to": true}

// readTrailing reads a time at the end of body, after a space: the
// longest suffix that reads as a whole expression. ok reports that one
// was found (err is then a refusal of that expression).
func readTrailing(body string, asked bool, in ScheduleInput) (Natural, string, error, bool) {
	for i, r := range body {
		if i == 0 || !unicode.IsSpace(r) {
			continue
		}
		j := i + utf8.RuneLen(r)
		suffix := strings.TrimRightFunc(body[j:], func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune(".!。！", r)
		})
		if suffix == "" || unicode.IsSpace(rune(suffix[0])) {
			continue
		}
		if !asked && !hasFoldPrefix(suffix, trailingStarts) {
			continue
		}
		msg := strings.TrimRightFunc(body[:i], func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == '，' })
		words := strings.Fields(msg)
		if len(words) == 0 || notBeforeTime[strings.ToLower(words[len(words)-1])] {
			continue
		}
		n, err := ParseNatural(suffix, in)
		var hint *hintError
		switch {
		case err == nil:
			return n, msg, nil, true
		case errors.As(err, &hint), errors.Is(err, errCalendarRange), errors.Is(err, errIntervalShort):
			return Natural{}, "", err, true
		}
	}
	return Natural{}, "", nil, false
}

// cutFoldPrefix drops prefix p (ASCII, any case) from s.
func cutFoldPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
		return s[len(p):], true
	}
	return s, false
}

func hasFoldPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}

// cutAdvance drops an advance notice that ends msg ("，提前10分钟提醒我",
// "remind me 10 minutes before") and returns it.
func cutAdvance(msg string) (string, time.Duration) {
	for i, r := range msg {
		if i == 0 {
			continue
		}
		prev, _ := utf8.DecodeLastRuneInString(msg[:i])
		if !(unicode.IsSpace(prev) || unicode.IsPunct(prev) || isHan(prev) || isHan(r)) || unicode.IsSpace(r) {
			continue
		}
		sc := &scanner{r: foldNatural([]rune(msg[i:]))}
		d, ok := sc.advance()
		if !ok {
			continue
		}
		rest := strings.TrimFunc(string(sc.r[sc.i:]), func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(".!。！", r) })
		head := strings.TrimRightFunc(msg[:i], func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == '，' })
		if rest != "" || strings.TrimSpace(head) == "" {
			continue
		}
		return head, d
	}
	return msg, 0
}
