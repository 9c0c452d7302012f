package model

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

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

	DefaultSatisfactionWindow = 600 // seconds
	MinSatisfactionWindow     = 60
	MaxSatisfactionWindow     = 86400
	DefaultAICallsPerDay      = 50
	MaxAICallsPerDay          = 1000
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
	// CommandPrefix is the bot's command prefix (command_prefix), used
	// where a text names the ho command and no user typed one: operator
	// alerts and notes. An answer to a command uses the typed prefix.
	CommandPrefix string `json:"command_prefix"`

	// Issue 31's canned replies, notes, satisfaction and AI assist.

	// SatisfactionSurvey asks the user "How did we do? 1-5" after a
	// release of a private chat (satisfaction_survey, off by default).
	SatisfactionSurvey bool `json:"satisfaction_survey"`
	// SatisfactionWindow is how long, in seconds, the user's score is
	// awaited (satisfaction_window).
	SatisfactionWindow int `json:"satisfaction_window"`
	// AIAssist lets the host's LLM write the handoff summary of an alert
	// and `!ho suggest` (ai_assist, off by default).
	AIAssist bool `json:"ai_assist"`
	// AICallsPerDay bounds the installation's LLM calls per UTC day
	// (ai_calls_per_day).
	AICallsPerDay int `json:"ai_calls_per_day"`
	// Escalation is the queue's escalation (escalation.go).
	Escalation
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
		CommandPrefix:         settings.DefaultCommandPrefix,
		SatisfactionWindow:    DefaultSatisfactionWindow,
		AICallsPerDay:         DefaultAICallsPerDay,
		Escalation:            Escalation{Timezone: DefaultTimezone, CancelWords: DefaultCancelWords(), FallbackChats: []OperatorChat{}},
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
// rules of spec §2, through the one config reader every service shares
// (pkg/settings). It never fails: a bad value falls back to its default or
// is clamped, and its field name (never its value) is listed in problems so
// that the caller can log it. A config that is not an object gives the
// defaults. minTimeout is the lower clamp of takeover_timeout in seconds
// (MinTakeoverTimeout, or lower in tests); values < 1 mean MinTakeoverTimeout.
func ParseSettings(raw []byte, minTimeout int) (s Settings, problems []string) {
	if minTimeout < 1 {
		minTimeout = MinTakeoverTimeout
	}
	s = DefaultSettings()
	r := settings.Read(raw)
	if r.NotObject() {
		return s, []string{"config"}
	}
	// integers: a number (a fraction truncated) or a numeric string;
	// out-of-range values are clamped
	ints := func(lo, hi int) settings.Ints {
		return settings.Ints{Min: lo, Max: hi, Strings: true, Truncate: true}
	}
	s.TakeoverTimeout = r.Int("takeover_timeout", s.TakeoverTimeout, ints(minTimeout, MaxTakeoverTimeout))
	s.HistoryLimit = r.Int("history_limit", s.HistoryLimit, ints(MinHistoryLimit, MaxHistoryLimit))
	s.TriggerWords = r.Words("trigger_words", settings.Words{MaxWords: MaxTriggerWords, MaxRunes: MaxTriggerWordRunes})
	bools := settings.Bools{Words: true}
	s.AutoTakeoverOnTrigger = r.Bool("auto_takeover_on_trigger", s.AutoTakeoverOnTrigger, bools)
	s.TriggerCaseSensitive = r.Bool("trigger_case_sensitive", s.TriggerCaseSensitive, bools)
	s.TakeoverOnReply = r.Bool("takeover_on_reply", s.TakeoverOnReply, bools)
	// the two modes are words in any case
	oneOf := func(words ...string) settings.Strings {
		return settings.Strings{Trim: true, Valid: func(v string) bool {
			for _, w := range words {
				if strings.EqualFold(v, w) {
					return true
				}
			}
			return false
		}}
	}
	s.TriggerMatch = strings.ToLower(r.String("trigger_match", s.TriggerMatch, oneOf(MatchSubstring, MatchWord)))
	s.RecordGroups = strings.ToLower(r.String("record_groups", s.RecordGroups, oneOf(RecordAll, RecordAddressed, RecordActiveOnly)))
	s.Language = r.String("language", s.Language, settings.Strings{Trim: true, Valid: func(v string) bool {
		return v == LanguageEnUS || v == LanguageZhHans
	}})
	s.CommandPrefix = r.CommandPrefix()
	notice := settings.Strings{Trim: true, MaxRunes: MaxNoticeRunes}
	s.NoticeOnTakeover = r.String("user_notice_on_takeover", s.NoticeOnTakeover, notice)
	s.NoticeOnRelease = r.String("user_notice_on_release", s.NoticeOnRelease, notice)
	s.SatisfactionSurvey = r.Bool("satisfaction_survey", s.SatisfactionSurvey, bools)
	s.SatisfactionWindow = r.Int("satisfaction_window", s.SatisfactionWindow, ints(MinSatisfactionWindow, MaxSatisfactionWindow))
	s.AIAssist = r.Bool("ai_assist", s.AIAssist, bools)
	s.AICallsPerDay = r.Int("ai_calls_per_day", s.AICallsPerDay, ints(1, MaxAICallsPerDay))
	esc, escProblems := parseEscalation(r, minTimeout)
	s.Escalation = esc
	for _, w := range r.Warnings() {
		problems = append(problems, w.Field)
	}
	problems = append(problems, escProblems...)
	if v, ok := r.Raw("operator_chats"); ok {
		chats, clean := parseOperatorChats(v)
		s.OperatorChats = chats
		if !clean {
			problems = append(problems, "operator_chats")
		}
	}
	return s, problems
}

// IsNull reports whether v is the JSON null.
func IsNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// ParseInt accepts a JSON integer, a float (truncated) or a decimal string
// (the console's request parameters; settings go through pkg/settings).
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
