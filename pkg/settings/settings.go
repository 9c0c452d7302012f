// Package settings reads an installation's plugin config: the JSON object
// LangBot stores for one installation and sends with every invocation and
// attach. A service's settings are normalised, never refused (DESIGN 3.2;
// each service's spec §2): a missing value takes its default, a bad one
// its default or the nearest bound, and the reader keeps a Warning for
// each value it replaced, naming the field and the reason. The one refusal
// is size: a config with a string over MaxStringBytes is refused whole
// where it enters a service (CheckSizes, called by pkg/bus on every
// invocation and attach), before anything reads or stores it.
//
// One Reader serves every service, so that integers, strings, booleans and
// word lists are read the same way everywhere and the parsing is fuzzed
// once; what differs between services (bounds, which forms a field
// accepts, what a value below the minimum becomes) is data in the rules.
// A time zone is read by Zone (one rule for which names are zones,
// LoadZone); values that need a service's own parser (a URL) are read
// with Raw and reported with Warn.
//
// It may import only the standard library.
package settings

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reason says why a value was replaced. Its text is fixed: services show
// or log it.
type Reason string

// The reasons.
const (
	ClampedLow  Reason = "below minimum, clamped"
	ClampedHigh Reason = "above maximum, clamped"
	TooLow      Reason = "below minimum, default used"
	Invalid     Reason = "invalid, default used"
	WrongType   Reason = "wrong type, default used"
	Cut         Reason = "too long, cut"
	Dropped     Reason = "entries dropped"
)

// Warning is one value the reader replaced. Raw is the value as the
// installation wrote it: it is config text, so it must never go into logs
// or span attributes (a service may show it to the installation's own
// users). Used is the value taken instead, as text.
type Warning struct {
	Field  string
	Reason Reason
	Raw    json.RawMessage
	Used   string
}

// Reader reads the fields of one config. It is not safe for concurrent
// use; a service reads a config in one function.
type Reader struct {
	fields    map[string]json.RawMessage
	notObject bool
	warnings  []Warning
}

// Read returns a Reader over raw. Empty, null or absent config is an empty
// object; anything else that is not a JSON object reads as empty too, and
// NotObject reports it (a service decides whether that is worth a
// warning).
func Read(raw json.RawMessage) *Reader {
	r := &Reader{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return r
	}
	if err := json.Unmarshal(raw, &r.fields); err != nil || r.fields == nil {
		r.fields = nil
		r.notObject = true
	}
	return r
}

// NotObject reports whether the config was not a JSON object.
func (r *Reader) NotObject() bool { return r.notObject }

// Warnings returns the warnings so far, in the order the fields were read.
func (r *Reader) Warnings() []Warning { return r.warnings }

// Raw returns a field's value when it is present and not null.
func (r *Reader) Raw(field string) (json.RawMessage, bool) {
	v, ok := r.fields[field]
	if !ok || isNull(v) {
		return nil, false
	}
	return bytes.TrimSpace(v), true
}

// Warn records a warning for a value the service replaced itself.
func (r *Reader) Warn(field string, reason Reason, used string) {
	raw, _ := r.Raw(field)
	r.warnings = append(r.warnings, Warning{Field: field, Reason: reason, Raw: raw, Used: used})
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// Ints is the rule of an integer field.
type Ints struct {
	Min, Max int
	// Strings also takes a decimal string ("120", trimmed; "" is absent).
	Strings bool
	// Truncate takes a number with a fraction by dropping the fraction
	// (with Strings, also a number written in a string: "90.5", "12.5e1");
	// otherwise such a number is Invalid.
	Truncate bool
	// LowIsDefault gives the default (TooLow), not Min (ClampedLow), for a
	// value below Min.
	LowIsDefault bool
}

// Int reads an integer field: a JSON number with an integral value (or
// any number, with Truncate), or with Strings a decimal string. Missing or
// null gives def silently; a value out of [Min, Max] is clamped (or, below
// Min with LowIsDefault, replaced by def); anything else gives def.
func (r *Reader) Int(field string, def int, rule Ints) int {
	v, ok := r.Raw(field)
	if !ok {
		return def
	}
	n, reason := readInt(v, def, rule)
	if reason != "" {
		r.warnings = append(r.warnings, Warning{Field: field, Reason: reason, Raw: v, Used: strconv.Itoa(n)})
	}
	return n
}

func readInt(v json.RawMessage, def int, rule Ints) (int, Reason) {
	var text string
	switch {
	case v[0] == '"':
		if !rule.Strings {
			return def, WrongType
		}
		if json.Unmarshal(v, &text) != nil {
			return def, Invalid
		}
		text = strings.TrimSpace(text)
		if text == "" {
			return def, ""
		}
		if !isDecimal(text) && !rule.Truncate {
			return def, Invalid
		}
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		var num json.Number
		if json.Unmarshal(v, &num) != nil {
			return def, Invalid
		}
		text = num.String()
	default:
		return def, WrongType
	}
	d, ok := parseNumber(text)
	if !ok {
		return def, Invalid
	}
	if !d.integral() && !rule.Truncate {
		return def, Invalid
	}
	switch {
	case d.less(rule.Min):
		if rule.LowIsDefault {
			return def, TooLow
		}
		return rule.Min, ClampedLow
	case d.greater(rule.Max):
		return rule.Max, ClampedHigh
	}
	return d.int(), ""
}

// isDecimal reports whether s is an optional sign and digits.
func isDecimal(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Strings is the rule of a string field.
type Strings struct {
	// Trim drops surrounding white space first.
	Trim bool
	// EmptyIsDefault gives the default for "" (after Trim), silently.
	EmptyIsDefault bool
	// MaxRunes, when > 0, cuts a longer value to its first MaxRunes code
	// points (then trimmed again with Trim), with a Cut warning.
	MaxRunes int
	// Valid, when set, decides whether a value (after Trim) is allowed;
	// one that is not gives the default, Invalid.
	Valid func(string) bool
	// Quiet replaces a bad value without a warning, for a field whose
	// spec asks for none (schenotify's language).
	Quiet bool
}

// String reads a string field. Missing or null gives def silently, a value
// that is not a JSON string gives def (WrongType).
func (r *Reader) String(field, def string, rule Strings) string {
	v, ok := r.Raw(field)
	if !ok {
		return def
	}
	warn := func(reason Reason, used string) {
		if !rule.Quiet {
			r.warnings = append(r.warnings, Warning{Field: field, Reason: reason, Raw: v, Used: used})
		}
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil {
		warn(WrongType, def)
		return def
	}
	if rule.Trim {
		s = strings.TrimSpace(s)
	}
	if s == "" && rule.EmptyIsDefault {
		return def
	}
	if rule.Valid != nil && !rule.Valid(s) {
		warn(Invalid, def)
		return def
	}
	if rule.MaxRunes > 0 && utf8.RuneCountInString(s) > rule.MaxRunes {
		s = CutRunes(s, rule.MaxRunes)
		if rule.Trim {
			s = strings.TrimSpace(s)
		}
		warn(Cut, s)
	}
	return s
}

// CutRunes returns the first n code points of s (s itself when it has no
// more): the one rune cutter of the module.
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

// Bools is the rule of a boolean field.
type Bools struct {
	// Words also takes 1, yes, on and 0, no, off (in strings, any case);
	// "true" and "false" strings are always taken.
	Words bool
}

// Bool reads a boolean field: a JSON boolean or a string true or false
// (trimmed, any case). Missing or null gives def silently; another string
// gives def (Invalid), another type def (WrongType).
func (r *Reader) Bool(field string, def bool, rule Bools) bool {
	v, ok := r.Raw(field)
	if !ok {
		return def
	}
	warn := func(reason Reason) bool {
		r.warnings = append(r.warnings, Warning{Field: field, Reason: reason, Raw: v, Used: strconv.FormatBool(def)})
		return def
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return warn(WrongType)
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true
	case "false":
		return false
	case "1", "yes", "on":
		if rule.Words {
			return true
		}
	case "0", "no", "off":
		if rule.Words {
			return false
		}
	}
	return warn(Invalid)
}

// Words is the rule of a word list.
type Words struct {
	MaxWords int // words kept; later ones are dropped (Dropped)
	MaxRunes int // a longer word is dropped (Dropped)
}

// Words reads a word list: a JSON array of strings, numbers or booleans
// (each as its text), or one such scalar as a list of one. Words are
// trimmed; blanks and repeats are dropped silently; other entries, words
// longer than MaxRunes and words past MaxWords are dropped with one
// Dropped warning. Missing or null gives an empty list; a value that is
// neither gives an empty list (WrongType).
func (r *Reader) Words(field string, rule Words) []string {
	words := []string{}
	v, ok := r.Raw(field)
	if !ok {
		return words
	}
	var items []json.RawMessage
	if v[0] == '[' {
		if json.Unmarshal(v, &items) != nil {
			r.warnings = append(r.warnings, Warning{Field: field, Reason: Invalid, Raw: v})
			return words
		}
	} else {
		items = []json.RawMessage{v}
	}
	seen := make(map[string]bool)
	dropped := false
	for _, it := range items {
		w, ok := ScalarText(it)
		if !ok {
			dropped = true
			continue
		}
		w = strings.TrimSpace(w)
		if w == "" || seen[w] {
			continue
		}
		if rule.MaxRunes > 0 && utf8.RuneCountInString(w) > rule.MaxRunes {
			dropped = true
			continue
		}
		if rule.MaxWords > 0 && len(words) == rule.MaxWords {
			dropped = true
			break
		}
		seen[w] = true
		words = append(words, w)
	}
	if dropped {
		r.warnings = append(r.warnings, Warning{Field: field, Reason: Dropped, Raw: v, Used: strconv.Itoa(len(words)) + " words"})
	}
	return words
}

// ScalarText is the text of a JSON string, number or boolean; null, objects
// and arrays give false. It is the one scalar reading every service shares.
func ScalarText(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	case 't', 'f':
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return "", false
		}
		return strconv.FormatBool(b), true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		if json.Unmarshal(v, &n) != nil {
			return "", false
		}
		return n.String(), true
	}
	return "", false
}
