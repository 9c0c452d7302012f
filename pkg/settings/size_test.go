package settings_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/settings"
)

func TestCheckSizes(t *testing.T) {
	long := strings.Repeat("v", settings.MaxStringBytes+1)
	fits := strings.Repeat("v", settings.MaxStringBytes)
	for _, c := range []struct {
		name, raw, want string // want: "" for nil, else a fragment of the error
	}{
		{"small", `{"a":"b"}`, ""},
		{"at the cap", `{"a":"` + fits + `","b":"` + fits + `"}`, ""},
		{"escapes counted as written", `{"a":"` + strings.Repeat(`\"`, settings.MaxStringBytes/2) + `x"}`, "field a has"},
		{"top level", `{"ok":1,"notice":"` + long + `"}`, "field notice has"},
		{"in a list", `{"trigger_words":["a","` + long + `"]}`, "field trigger_words has"},
		{"nested", `{"x":{"y":["` + long + `"]}}`, "field x has"},
		{"key", `{"` + long + `":1}`, "field name is longer"},
		{"odd key", `{"A-B":"` + long + `"}`, "a config string is longer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := settings.CheckSizes([]byte(c.raw))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("got %v, want nil", err)
			case c.want != "" && (!errors.Is(err, settings.ErrTooLong) || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want ErrTooLong with %q", err, c.want)
			case err != nil && strings.Contains(err.Error(), "vvv"):
				t.Fatalf("value echoed: %.80v", err)
			}
		})
	}
}

// TestCheckSizesTypedError: a refusal is a *SizeError that matches
// ErrTooLong, and its Detail is the error's text after the sentinel's, so a
// caller answers with Detail instead of cutting the text.
func TestCheckSizesTypedError(t *testing.T) {
	raw := []byte(`{"notice":"` + strings.Repeat("x", settings.MaxStringBytes+1) + `"}`)
	err := settings.CheckSizes(raw)
	var size *settings.SizeError
	if !errors.As(err, &size) || !errors.Is(err, settings.ErrTooLong) {
		t.Fatalf("got %v, want a *SizeError matching ErrTooLong", err)
	}
	if size.Field != "notice" || size.Limit != settings.MaxStringBytes || size.Key {
		t.Fatalf("got %+v, want field notice, limit %d", *size, settings.MaxStringBytes)
	}
	if want := settings.ErrTooLong.Error() + ": " + size.Detail(); err.Error() != want {
		t.Fatalf("text %q, want %q", err.Error(), want)
	}
}
