package settings

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzCheckSizes checks the string scan against encoding/json with a cap
// of 8 bytes: an accepted value decodes to strings and keys of at most 8
// bytes, and a refused one holds a string or key of more than 8/6 bytes
// decoded (an escape is at most 6 bytes of JSON text for at least one
// decoded byte), so the scan neither misses a string nor invents one.
func FuzzCheckSizes(f *testing.F) {
	for _, s := range []string{
		`{"a":"b"}`, `{"abcdefghij":1}`, `{"a":["xx","0123456789"]}`,
		`{"a":"\"\"\"\"\"\""}`, `{"a":{"b":"\u00e9\u00e9\u00e9\u00e9\u00e9"}}`, `["x", 1, true, null]`,
	} {
		f.Add([]byte(s))
	}
	const limit = 8
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v any
		if !utf8.Valid(raw) || json.Unmarshal(raw, &v) != nil {
			return // CheckSizes reads well-formed JSON only (the envelope refuses invalid UTF-8 first)
		}
		longest := 0
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				longest = max(longest, len(x))
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for k, e := range x {
					longest = max(longest, len(k))
					walk(e)
				}
			}
		}
		walk(v)
		err := checkSizes(raw, limit)
		switch {
		case err == nil && longest > limit:
			t.Fatalf("accepted a %d-byte string with a cap of %d: %q", longest, limit, raw)
		case err != nil && !errors.Is(err, ErrTooLong):
			t.Fatalf("error %v is not ErrTooLong", err)
		case err != nil && longest*6 <= limit:
			t.Fatalf("refused %q: its longest string is %d bytes: %v", raw, longest, err)
		}
	})
}
