package settings

import (
	"errors"
	"fmt"
)

// MaxStringBytes caps every string of a config, keys included, as its
// JSON text (escapes counted as written). No setting of any service needs
// more: the longest, takeover's notices, is at most 2000 code points. It is
// checked once, where a config enters a service (CheckSizes in pkg/bus's
// envelope), so a config with a longer string is refused before anything
// reads or stores it.
const MaxStringBytes = 32 << 10

// ErrTooLong reports a config string over MaxStringBytes. Its text names
// the top-level field (when it is a plain name) and the cap, never the
// value.
var ErrTooLong = errors.New("settings: string too long")

// SizeError is CheckSizes' refusal: which string is over the cap, named
// by the top-level field that holds it, never by its value. It matches
// ErrTooLong (errors.Is); callers that answer a client read Detail with
// errors.As rather than cutting the error's text.
type SizeError struct {
	// Field is the top-level field holding the string, "" when that is
	// not a plain name (or the string is a field name itself).
	Field string
	// Key reports that the string is a field name.
	Key bool
	// Limit is the cap in bytes.
	Limit int
}

// Detail is the refusal without the sentinel's words, safe to show to the
// caller: "config field notice has a string longer than 32768 bytes".
func (e *SizeError) Detail() string {
	switch {
	case e.Key:
		return fmt.Sprintf("a config field name is longer than %d bytes", e.Limit)
	case e.Field != "":
		return fmt.Sprintf("config field %s has a string longer than %d bytes", e.Field, e.Limit)
	}
	return fmt.Sprintf("a config string is longer than %d bytes", e.Limit)
}

func (e *SizeError) Error() string { return ErrTooLong.Error() + ": " + e.Detail() }

// Is makes a SizeError match ErrTooLong.
func (e *SizeError) Is(target error) bool { return target == ErrTooLong }

// CheckSizes reports a *SizeError (ErrTooLong) when a string anywhere in raw, a JSON
// value already known to be well formed, is longer than MaxStringBytes.
// A config no longer than the cap is not scanned.
func CheckSizes(raw []byte) error { return checkSizes(raw, MaxStringBytes) }

// checkSizes is CheckSizes with the cap as a parameter (the fuzz target
// uses a small one).
func checkSizes(raw []byte, limit int) error {
	if len(raw) <= limit {
		return nil
	}
	depth, field := 0, ""
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			j := i + 1
			for j < len(raw) && raw[j] != '"' {
				if raw[j] == '\\' {
					j++
				}
				j++
			}
			key := isKey(raw, j+1)
			switch {
			case j-i-1 <= limit:
			case key:
				return &SizeError{Key: true, Limit: limit}
			case plainName(field):
				return &SizeError{Field: field, Limit: limit}
			default:
				return &SizeError{Limit: limit}
			}
			if depth == 1 && key {
				field = string(raw[i+1 : j])
			}
			i = j
		}
	}
	return nil
}

// isKey reports whether the string that ended before raw[i] is followed by
// a colon: an object key.
func isKey(raw []byte, i int) bool {
	for ; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\r', '\n':
		case ':':
			return true
		default:
			return false
		}
	}
	return false
}

// plainName reports whether s is a short field name of lower-case letters,
// digits and underscores, safe to repeat in an error.
func plainName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
