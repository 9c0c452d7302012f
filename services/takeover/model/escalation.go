package model

import (
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/settings"
)

// ReasonIdle is the release reason of a taken-over chat whose operator
// said nothing for operator_idle_return: it goes back to the queue.
const ReasonIdle = "idle"

// Escalation bounds.
const (
	MaxEscalateSeconds = 86400
	MaxCancelWords     = 20
	DefaultTimezone    = "UTC" // time.UTC's name
)

// DefaultCancelWords returns the words with which a user withdraws a
// request for a human when the config names none.
func DefaultCancelWords() []string { return []string{"取消人工", "cancel human"} }

// Escalation is the escalation block of the settings: every
// part is off by default except the cancel words.
type Escalation struct {
	// EscalateAfter (escalate_after, seconds, 0 = off): a chat waiting for
	// a human this long without an operator is alerted again to every
	// operator chat, and after as long again to the fallback chats.
	EscalateAfter int `json:"escalate_after"`
	// FallbackChats (escalate_fallback_chats) are alerted at the second
	// escalation; the entries are written as operator_chats' are.
	FallbackChats []OperatorChat `json:"escalate_fallback_chats"`
	// QueueNotice (queue_notice) tells a user who asks for a human their
	// place in the queue.
	QueueNotice bool `json:"queue_notice"`
	// WorkingHours (working_hours, "HH:MM-HH:MM", "" = always) in Timezone
	// (timezone, an IANA name read by settings.Reader.Zone; "" = UTC):
	// outside them a user who asks for a human gets OutOfHoursReply
	// (out_of_hours_reply, "" = the catalogue's).
	WorkingHours    string `json:"working_hours"`
	Timezone        string `json:"timezone"`
	OutOfHoursReply string `json:"out_of_hours_reply"`
	// CancelWords (cancel_words): a user's whole message equal to one of
	// them (case-insensitive, trimmed) withdraws the request: the takeover
	// ends, the chat leaves the queue and the AI answers again.
	CancelWords []string `json:"cancel_words"`
	// OperatorIdle (operator_idle_return, seconds, 0 = off): a chat taken
	// over by an operator who said nothing this long goes back to the
	// queue, and the operator chats are told.
	OperatorIdle int `json:"operator_idle_return"`
}

// parseEscalation reads the escalation block; minSeconds is the lower
// clamp of the two durations (the takeover timeout's).
func parseEscalation(r *settings.Reader, minSeconds int) (Escalation, []string) {
	e := Escalation{Timezone: DefaultTimezone, CancelWords: DefaultCancelWords(), FallbackChats: []OperatorChat{}}
	var problems []string
	dur := func(field string) int {
		v := r.Int(field, 0, settings.Ints{Min: 0, Max: MaxEscalateSeconds, Strings: true, Truncate: true})
		if v > 0 && v < minSeconds {
			v = minSeconds
		}
		return v
	}
	e.EscalateAfter = dur("escalate_after")
	e.OperatorIdle = dur("operator_idle_return")
	e.QueueNotice = r.Bool("queue_notice", false, settings.Bools{Words: true})
	e.WorkingHours = r.String("working_hours", "", settings.Strings{Trim: true, Valid: func(v string) bool {
		_, _, ok := parseHours(v)
		return v == "" || ok
	}})
	e.Timezone = r.Zone("timezone", time.UTC).String()
	e.OutOfHoursReply = r.String("out_of_hours_reply", "", settings.Strings{Trim: true, MaxRunes: MaxNoticeRunes})
	if _, ok := r.Raw("cancel_words"); ok {
		e.CancelWords = r.Words("cancel_words", settings.Words{MaxWords: MaxCancelWords, MaxRunes: MaxTriggerWordRunes})
	}
	if v, ok := r.Raw("escalate_fallback_chats"); ok {
		chats, clean := parseOperatorChats(v)
		e.FallbackChats = chats
		if !clean {
			problems = append(problems, "escalate_fallback_chats")
		}
	}
	return e, problems
}

// parseHours reads "HH:MM-HH:MM" into minutes of the day; an end before
// the start spans midnight.
func parseHours(v string) (from, to int, ok bool) {
	a, b, found := strings.Cut(v, "-")
	if !found {
		return 0, 0, false
	}
	from, ok1 := clockMinutes(strings.TrimSpace(a))
	to, ok2 := clockMinutes(strings.TrimSpace(b))
	return from, to, ok1 && ok2 && from != to
}

func clockMinutes(s string) (int, bool) {
	h, m, found := strings.Cut(s, ":")
	if !found {
		return 0, false
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || hh > 24 || mm < 0 || mm > 59 || hh == 24 && mm != 0 || len(m) != 2 {
		return 0, false
	}
	return hh*60 + mm, true
}

// InWorkingHours reports whether the instant ms (Unix milliseconds) lies
// within the working hours in the installation's zone; no working hours
// means always.
func (e Escalation) InWorkingHours(ms int64) bool {
	from, to, ok := parseHours(e.WorkingHours)
	if !ok {
		return true
	}
	loc, err := settings.LoadZone(e.Timezone)
	if err != nil {
		loc = time.UTC
	}
	t := time.UnixMilli(ms).In(loc)
	m := t.Hour()*60 + t.Minute()
	if from < to {
		return m >= from && m < to
	}
	return m >= from || m < to
}

// IsCancel reports whether a user's message text withdraws a request for
// a human: it equals a cancel word, trimmed, in any case.
func (e Escalation) IsCancel(text string) bool {
	t := strings.TrimSpace(text)
	if t == "" {
		return false
	}
	for _, w := range e.CancelWords {
		if strings.EqualFold(t, w) {
			return true
		}
	}
	return false
}
