package model

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Limits of the canned replies and notes: one installation's
// canned replies are one KV value, a chat's notes another, so both are
// bounded to keep each value small.
const (
	MaxCannedReplies   = 100
	MaxCannedNameRunes = 32
	MaxCannedTextRunes = 2000
	MaxNotes           = 50
	MaxNoteRunes       = 1000
)

// CannedReply is one canned reply of an installation: a name an operator
// types as /<name>, and the text sent in its place.
type CannedReply struct {
	Name      string `json:"name"`
	Text      string `json:"text"`
	By        string `json:"by"`
	UpdatedAt int64  `json:"updated_at"`
}

// CannedSet is an installation's canned replies, stored at <scope>.canned,
// sorted by name.
type CannedSet struct {
	V       int           `json:"v"`
	Replies []CannedReply `json:"replies"`
}

// Find returns the canned reply named name.
func (c CannedSet) Find(name string) (CannedReply, bool) {
	for _, r := range c.Replies {
		if r.Name == name {
			return r, true
		}
	}
	return CannedReply{}, false
}

// cannedNameRE: letters (any script), digits, _ and -; no spaces, so a
// name is one word after the slash.
var cannedNameRE = regexp.MustCompile(`^[\p{L}\p{N}_-]+$`)

// CannedName normalises a canned reply's name (lower case, without a
// leading slash) and reports whether it is valid: 1 to 32 letters, digits,
// _ or -.
func CannedName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(s), "/"))
	if s == "" || utf8.RuneCountInString(s) > MaxCannedNameRunes || !cannedNameRE.MatchString(s) {
		return s, false
	}
	return s, true
}

// Note is an internal note on a chat: written by an operator, shown to
// operators only, never sent to the user.
type Note struct {
	ID       string `json:"id"`
	At       int64  `json:"at"`
	Operator string `json:"operator"`
	Text     string `json:"text"`
}

// Notes are a chat's internal notes, stored at <scope>.notes.<sid>,
// oldest first.
type Notes struct {
	V     int    `json:"v"`
	Notes []Note `json:"notes"`
}

// Satisfaction is the satisfaction question after a release:
// asked at AskedAt, answered by the user's next message if it is a score
// from 1 to 5 before Until. Closed (Until 0) by any other message.
type Satisfaction struct {
	AskedAt    int64 `json:"asked_at"`
	Until      int64 `json:"until"`
	Score      int   `json:"score"`
	AnsweredAt int64 `json:"answered_at"`
}

// Waiting reports whether the question still waits for its answer at now.
func (s *Satisfaction) Waiting(now int64) bool {
	return s != nil && s.Score == 0 && now < s.Until
}

// SurveyScore reads a message's text as a satisfaction score: exactly one
// digit 1 to 5, half or full width, with optional spaces and a trailing
// full stop or "分" / "星".
func SurveyScore(text string) (int, bool) {
	t := strings.TrimSpace(text)
	t = strings.TrimRight(t, ".。!！分星 ")
	t = strings.TrimSpace(t)
	r, size := utf8.DecodeRuneInString(t)
	if size == 0 || size != len(t) {
		return 0, false
	}
	switch {
	case r >= '1' && r <= '5':
		return int(r - '0'), true
	case r >= '１' && r <= '５':
		return int(r-'１') + 1, true
	}
	return 0, false
}
