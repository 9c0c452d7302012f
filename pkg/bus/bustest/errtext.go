package bustest

import (
	"strings"
	"testing"
)

// GoErrorFragments are texts of Go and library errors that must never reach
// a client in an error message: they name internals (packages, paths,
// positions) and often quote what was parsed.
var GoErrorFragments = []string{
	"nats:", "json:", "jetstream:", "bus:", "binding:", "context deadline", "context canceled",
	"unexpected EOF", "invalid character", "cannot unmarshal", "looking for beginning",
	"/" + "tmp", "goroutine", "runtime error", "%!",
}

// CheckErrorText fails t when msg, a client-facing error text, carries a Go
// error fragment or any of the values the request sent (ids, names).
func CheckErrorText(t testing.TB, what, msg string, sent ...string) {
	t.Helper()
	if msg == "" {
		t.Errorf("%s: empty error message", what)
	}
	for _, f := range GoErrorFragments {
		if strings.Contains(msg, f) {
			t.Errorf("%s: message %q carries the Go error fragment %q", what, msg, f)
		}
	}
	for _, v := range sent {
		if v != "" && strings.Contains(msg, v) {
			t.Errorf("%s: message %q echoes the sent value %q", what, msg, v)
		}
	}
}
