package model

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/settings"
)

// Bounds and defaults of the installation settings (spec §2, §11).
const (
	DefaultTakeoverTimeout = 600   // seconds
	MinTakeoverTimeout     = 30    // seconds
	MaxTakeoverTimeout     = 86400 // seconds
	DefaultHistoryLimit    = 300
	MinHistoryLimit        = 10
	MaxHistoryLimit        = 2000
	MaxTriggerWords        = 100
	MaxTriggerWordRunes    = 64
	MaxNoticeRunes         = 2000
)

// Trigger match modes.
const (
	MatchSubstring = "substring"
	MatchWord      = "word"
)

// Group recording policies (spec §3.6).
const (
	RecordAll        = "all"
	RecordAddressed  = "addressed"
	RecordActiveOnly = "active_only"
)

// Settings is one installation's plugin config after normalisation (spec §2).
// The zero value is not meaningful; use ParseSettings.
type Settings struct {
	TakeoverTimeout       int      `json:"takeover_timeout"` // seconds
	TriggerWords          []string `json:"trigger_words"`
	AutoTakeoverOnTrigger bool     `json:"auto_takeover_on_trigger"`
	TriggerMatch          string   `json:"trigger_match"`
	TriggerCaseSensitive  bool     `json:"trigger_case_sensitive"`
	TakeoverOnReply       bool     `json:"takeover_on_reply"`
	HistoryLimit          int      `json:"history_limit"`
	RecordGroups          string   `json:"record_groups"`
	NoticeOnTakeover      string   `json:"user_notice_on_takeover"`
	NoticeOnRelease       string   `json:"user_notice_on_release"`
	// OperatorChats are the chats alerted when a chat asks for a human,
	// and from which operators answer by command (operator_chats).
	OperatorChats []OperatorChat `json:"operator_chats"`
	// Language is the language of what the service writes into chats on
	// its own (alerts, command answers, the handoff tool's text).
	Language string `json:"language"`
}

// DefaultSettings returns the settings of an empty config.
func DefaultSettings() Settings {
	return Settings{
		TakeoverTimeout:       DefaultTakeoverTimeout,
		TriggerWords:          []string{},
		AutoTakeoverOnTrigger: true,
		TriggerMatch:          MatchSubstring,
		TakeoverOnReply:       true,
		HistoryLimit:          DefaultHistoryLimit,
		RecordGroups:          RecordAll,
		OperatorChats:         []OperatorChat{},
		Language:              LanguageEnUS,
	}
}

// TimeoutMillis is the takeover timeout in milliseconds.
func (s Settings) TimeoutMillis() int64 { return int64(s.TakeoverTimeout) * 1000 }

// HistorySlack is how far history may grow past HistoryLimit before a trim
// (spec §5.3 rule 6): a tenth of the limit, clamped to [1, 200].
func (s Settings) HistorySlack() int {
	return min(max(s.HistoryLimit/10, 1), 200)
}

// ParseSettings normalises an installation's config (a JSON object) by the
// rules of spec §2. It never fails: a bad value falls back to its default or
// is clamped, and its field name (never its value) is listed in problems so
// that the caller can log it. A config that is not an object gives the
// defaults. minTimeout is the lower clamp of takeover_timeout in seconds
// (MinTakeoverTimeout, or lower in tests); values < 1 mean MinTakeoverTimeout.
func ParseSettings(raw []byte, minTimeout int) (s Settings, problems []string) {
	if minTimeout < 1 {
		minTimeout = MinTakeoverTimeout
	}
	s = DefaultSettings()
	var obj map[string]json.RawMessage
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return s, nil
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return s, []string{"config"}
	}
	bad := func(name string) { problems = append(problems, name) }

	if v, ok := obj["takeover_timeout"]; ok {
		n, ok := ParseInt(v)
		switch {
		case !ok:
			if !IsNull(v) {
				bad("takeover_timeout")
			}
		case n < int64(minTimeout) || n > MaxTakeoverTimeout:
			bad("takeover_timeout")
			s.TakeoverTimeout = int(min(max(n, int64(minTimeout)), MaxTakeoverTimeout))
		default:
			s.TakeoverTimeout = int(n)
		}
	}
	if v, ok := obj["history_limit"]; ok {
		n, ok := ParseInt(v)
		switch {
		case !ok:
			if !IsNull(v) {
				bad("history_limit")
			}
		case n < MinHistoryLimit || n > MaxHistoryLimit:
			bad("history_limit")
			s.HistoryLimit = int(min(max(n, MinHistoryLimit), MaxHistoryLimit))
		default:
			s.HistoryLimit = int(n)
		}
	}
	if v, ok := obj["trigger_words"]; ok {
		words, clean := parseWords(v)
		s.TriggerWords = words
		if !clean {
			bad("trigger_words")
		}
	}
	for _, f := range []struct {
		name string
		dst  *bool
	}{
		{"auto_takeover_on_trigger", &s.AutoTakeoverOnTrigger},
		{"trigger_case_sensitive", &s.TriggerCaseSensitive},
		{"takeover_on_reply", &s.TakeoverOnReply},
	} {
		if v, ok := obj[f.name]; ok {
			if b, ok := ParseBool(v); ok {
				*f.dst = b
			} else if !IsNull(v) {
				bad(f.name)
			}
		}
	}
	if v, ok := obj["trigger_match"]; ok {
		switch m := strings.ToLower(strings.TrimSpace(jsonString(v))); m {
		case MatchSubstring, MatchWord:
			s.TriggerMatch = m
		default:
			if !IsNull(v) {
				bad("trigger_match")
			}
		}
	}
	if v, ok := obj["record_groups"]; ok {
		switch m := strings.ToLower(strings.TrimSpace(jsonString(v))); m {
		case RecordAll, RecordAddressed, RecordActiveOnly:
			s.RecordGroups = m
		default:
			if !IsNull(v) {
				bad("record_groups")
			}
		}
	}
	if v, ok := obj["operator_chats"]; ok {
		chats, clean := parseOperatorChats(v)
		s.OperatorChats = chats
		if !clean {
			bad("operator_chats")
		}
	}
	if v, ok := obj["language"]; ok {
		switch l := strings.TrimSpace(jsonString(v)); l {
		case LanguageEnUS, LanguageZhHans:
			s.Language = l
		default:
			if !IsNull(v) {
				bad("language")
			}
		}
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"user_notice_on_takeover", &s.NoticeOnTakeover},
		{"user_notice_on_release", &s.NoticeOnRelease},
	} {
		v, ok := obj[f.name]
		if !ok || IsNull(v) {
			continue
		}
		var str string
		if json.Unmarshal(v, &str) != nil {
			bad(f.name)
			continue
		}
		str = strings.TrimSpace(str)
		if utf8.RuneCountInString(str) > MaxNoticeRunes {
			str = strings.TrimSpace(CutRunes(str, MaxNoticeRunes))
			bad(f.name)
		}
		*f.dst = str
	}
	return s, problems
}

// IsNull reports whether v is the JSON null.
func IsNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// jsonString returns v's value when it is a JSON string, else "".
func jsonString(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// ParseInt accepts a JSON integer, a float (truncated) or a decimal string.
func ParseInt(v json.RawMessage) (int64, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return 0, false
	}
	var text string
	switch v[0] {
	case '"':
		if json.Unmarshal(v, &text) != nil {
			return 0, false
		}
		text = strings.TrimSpace(text)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		text = string(v)
	default:
		return 0, false
	}
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	if math.IsNaN(f) {
		return 0, false
	}
	// Out-of-range values saturate; the caller clamps them anyway.
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64, true
	case f <= math.MinInt64:
		return math.MinInt64, true
	}
	return int64(f), true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// ParseBool accepts a JSON bool or a string true/1/yes/on, false/0/no/off in
// any case.
func ParseBool(v json.RawMessage) (bool, bool) {
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b, true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes", "on":
		return true, true
	case "false", "0", "no", "off":
		return false, true
	}
	return false, false
}

// parseWords normalises trigger_words; clean reports whether nothing was
// dropped or cut other than blanks.
func parseWords(v json.RawMessage) (words []string, clean bool) {
	words = []string{}
	clean = true
	v = bytes.TrimSpace(v)
	var items []json.RawMessage
	switch {
	case len(v) == 0 || string(v) == "null":
		return words, true
	case v[0] == '[':
		if json.Unmarshal(v, &items) != nil {
			return words, false
		}
	default:
		items = []json.RawMessage{v} // a bare scalar is one word
	}
	seen := make(map[string]bool)
	for _, it := range items {
		w, ok := settings.ScalarText(it)
		if !ok {
			clean = false
			continue
		}
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		if utf8.RuneCountInString(w) > MaxTriggerWordRunes {
			clean = false
			continue
		}
		if seen[w] {
			continue
		}
		if len(words) == MaxTriggerWords {
			clean = false
			break
		}
		seen[w] = true
		words = append(words, w)
	}
	return words, clean
}

// CutRunes returns the first n runes of s.
func CutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
