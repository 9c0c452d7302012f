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

// CheckSizes reports ErrTooLong when a string anywhere in raw, a JSON
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
				return fmt.Errorf("%w: a config field name is longer than %d bytes", ErrTooLong, limit)
			case plainName(field):
				return fmt.Errorf("%w: config field %s has a string longer than %d bytes", ErrTooLong, field, limit)
			default:
				return fmt.Errorf("%w: a config string is longer than %d bytes", ErrTooLong, limit)
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
