package schenotify

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/settings"
)

// Installation config defaults (spec 2).
const (
	defaultLanguage      = i18n.ZhHans
	defaultPrefix        = "[Notify] "
	defaultMaxReminders  = 100
	defaultMaxPerSession = 50
	maxCap               = 1000
	maxPrefixRunes       = 32
)

// configWarning records one invalid config value and the value used
// instead; it renders as warn.bad_config.
type configWarning struct {
	Field string
	Value string // the offending value as written, shortened
	Used  string
}

// Settings is an installation config snapshot after normalisation.
type Settings struct {
	Language      string
	Zone          *time.Location
	Prefix        string
	MaxReminders  int
	MaxPerSession int // effective: at most MaxReminders
	// MentionCreator: a reminder delivered in a group mentions its creator
	// (setting mention_creator, default on).
	MentionCreator bool
	// CommandPrefix is the prefix texts name the sche and dsche commands
	// with: the installation's command_prefix, replaced in a command's
	// answer by the prefix the user typed (handleCommand).
	CommandPrefix string
	// AICallsPerDay is the installation's budget of AI-written deliveries
	// per calendar day of its zone (setting ai_calls_per_day; 0 turns the
	// form off).
	AICallsPerDay int
	Warnings      []configWarning
}

// NormalizeConfig reads the installation config of spec 2 from raw (a JSON
// object; anything else counts as empty) and never fails: invalid values
// give their default and, except for language, a warning. defaultZone is
// the process zone.
func NormalizeConfig(raw json.RawMessage, defaultZone *time.Location) Settings {
	r := settings.Read(raw)
	s := Settings{
		Language: r.String("language", defaultLanguage, settings.Strings{Quiet: true, Valid: func(l string) bool { return l == i18n.EnUS || l == i18n.ZhHans }}),
		Zone:     r.Zone("timezone", defaultZone),
	}
	s.Prefix = r.String("notify_prefix", defaultPrefix, settings.Strings{Valid: validPrefix})
	caps := settings.Ints{Min: 1, Max: maxCap, LowIsDefault: true}
	s.MaxReminders = r.Int("max_reminders", defaultMaxReminders, caps)
	s.MaxPerSession = min(r.Int("max_per_session", defaultMaxPerSession, caps), s.MaxReminders)
	s.MentionCreator = r.Bool("mention_creator", true, settings.Bools{})
	s.AICallsPerDay = r.Int("ai_calls_per_day", defaultAICallsPerDay, settings.Ints{Min: 0, Max: maxCap})
	s.CommandPrefix = r.CommandPrefix()
	for _, w := range r.Warnings() {
		s.Warnings = append(s.Warnings, configWarning{Field: w.Field, Value: shownValue(w.Raw), Used: w.Used})
	}
	return s
}

// validPrefix reports whether p is valid UTF-8 of at most 32 code points
// without control characters.
func validPrefix(p string) bool {
	if !utf8.ValidString(p) || utf8.RuneCountInString(p) > maxPrefixRunes {
		return false
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// shownValue is the offending value as shown in a warning: a string
// without its quotes, anything else as JSON, cut to 40 code points.
func shownValue(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		s = string(bytes.TrimSpace(v))
	}
	var b strings.Builder
	for _, r := range cutRunes(s, 40) {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cutRunes returns s cut to n code points plus "…" when it was longer.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}
