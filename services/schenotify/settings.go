package schenotify

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// Installation config defaults (spec 2).
const (
	DefaultLanguage      = i18n.ZhHans
	DefaultPrefix        = "[Notify] "
	DefaultMaxReminders  = 100
	DefaultMaxPerSession = 50
	maxCap               = 1000
	maxPrefixRunes       = 32
)

// ConfigWarning records one invalid config value and the value used
// instead; it renders as warn.bad_config.
type ConfigWarning struct {
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
	Warnings      []ConfigWarning
}

// NormalizeConfig reads the installation config of spec 2 from raw (a JSON
// object; anything else counts as empty) and never fails: invalid values
// give their default and, except for language, a warning. defaultZone is
// the process zone.
func NormalizeConfig(raw json.RawMessage, defaultZone *time.Location) Settings {
	var m map[string]json.RawMessage
	if len(raw) > 0 {
		if json.Unmarshal(raw, &m) != nil {
			m = nil
		}
	}
	get := func(k string) (json.RawMessage, bool) {
		v, ok := m[k]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return nil, false
		}
		return v, true
	}
	s := Settings{Language: DefaultLanguage, Zone: defaultZone, Prefix: DefaultPrefix,
		MaxReminders: DefaultMaxReminders, MaxPerSession: DefaultMaxPerSession}
	warn := func(field string, v json.RawMessage, used string) {
		s.Warnings = append(s.Warnings, ConfigWarning{Field: field, Value: shownValue(v), Used: used})
	}
	if v, ok := get("language"); ok {
		var lang string
		if json.Unmarshal(v, &lang) == nil && (lang == i18n.EnUS || lang == i18n.ZhHans) {
			s.Language = lang
		}
	}
	if v, ok := get("timezone"); ok {
		var name string
		if json.Unmarshal(v, &name) != nil {
			warn("timezone", v, defaultZone.String())
		} else if name != "" {
			if loc, ok := when.LoadZone(name); ok {
				s.Zone = loc
			} else {
				warn("timezone", v, defaultZone.String())
			}
		}
	}
	if v, ok := get("notify_prefix"); ok {
		var p string
		if json.Unmarshal(v, &p) == nil && validPrefix(p) {
			s.Prefix = p
		} else {
			warn("notify_prefix", v, DefaultPrefix)
		}
	}
	capField := func(field string, def int) int {
		v, ok := get(field)
		if !ok {
			return def
		}
		n, ok := jsonInt(v)
		switch {
		case !ok || n < 1:
			warn(field, v, strconv.Itoa(def))
			return def
		case n > maxCap:
			warn(field, v, strconv.Itoa(maxCap))
			return maxCap
		}
		return int(n)
	}
	s.MaxReminders = capField("max_reminders", DefaultMaxReminders)
	s.MaxPerSession = min(capField("max_per_session", DefaultMaxPerSession), s.MaxReminders)
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

// jsonInt decodes a JSON number with an integral value.
func jsonInt(v json.RawMessage) (int64, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || (v[0] != '-' && !isDigit(v[0])) {
		return 0, false
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if d.Decode(&n) != nil {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, false
	}
	if f > math.MaxInt32 {
		return math.MaxInt32, true
	}
	if f < math.MinInt32 {
		return math.MinInt32, true
	}
	return int64(f), true
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
