package plugin_test

import (
	"encoding/json"
	"testing"

	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/pkg/settings"
)

// TestTypedPrefix: the host's prefix field wins when it is a prefix; else
// the 1-3 characters before the command word in the full text; else ""
// (githubkit spec §3.1 rule 4, shared by every service).
func TestTypedPrefix(t *testing.T) {
	tests := []struct{ word, prefix, full, want string }{
		{"gh", "", "！gh x", "！"},
		{"gh", "", "/gh repo", "/"},
		{"gh", "", "  !GH repo", "!"},
		{"gh", "", "", ""},
		{"gh", "#", "!gh x", "#"},
		{"gh", "", "gh repo", ""},
		{"gh", "", "abcd gh", ""},
		{"gh", "", "a b gh", ""},
		{"gh", "", ">>>gh", ">>>"},
		{"gh", "", ">>>>gh", ""},
		{"gh", "", "! gh repo", ""},
		{"ho", "/", "/ho list", "/"},
		{"ho", "", "/ho list", "/"},
		{"sche", "", "//sche", "//"},
		{"ho", "bad prefix", "!ho list", "!"},
		{"ho", "\n", "\n", ""},
		{"dsche", "", "!dsche 1", "!"},
		{"ho", "", "1ho", ""},
	}
	for _, tc := range tests {
		if got := plugin.TypedPrefix(tc.word, tc.prefix, tc.full); got != tc.want {
			t.Errorf("TypedPrefix(%q, %q, %q) = %q, want %q", tc.word, tc.prefix, tc.full, got, tc.want)
		}
	}
}

// TestCommandPrefix: typed, else configured when valid, else `!`.
func TestCommandPrefix(t *testing.T) {
	for _, tc := range []struct{ typed, configured, want string }{
		{"/", "!", "/"}, {"", "/", "/"}, {"", "", "!"}, {"", "a b", "!"}, {"！", "", "！"},
	} {
		if got := plugin.CommandPrefix(tc.typed, tc.configured); got != tc.want {
			t.Errorf("CommandPrefix(%q, %q) = %q, want %q", tc.typed, tc.configured, got, tc.want)
		}
	}
}

// TestReadCommandPrefix: settings.Reader.CommandPrefix: the setting is trimmed, a missing or empty one is
// the default silently, an invalid one the default with a warning naming
// the field.
func TestReadCommandPrefix(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		warn      bool
	}{
		{`{}`, "!", false},
		{`{"command_prefix":""}`, "!", false},
		{`{"command_prefix":" / "}`, "/", false},
		{`{"command_prefix":"！"}`, "！", false},
		{`{"command_prefix":"go now"}`, "!", true},
		{`{"command_prefix":"abc"}`, "!", true},
		{`{"command_prefix":"123456789"}`, "!", true},
		{`{"command_prefix":7}`, "!", true},
	} {
		r := settings.Read(json.RawMessage(tc.raw))
		got := r.CommandPrefix()
		warned := len(r.Warnings()) == 1 && r.Warnings()[0].Field == settings.CommandPrefixItem
		if got != tc.want || warned != tc.warn {
			t.Errorf("%s: %q (warned %v), want %q (warn %v)", tc.raw, got, warned, tc.want, tc.warn)
		}
	}
}

// TestCommandPrefixConfig: the config item every plugin declares is
// valid in a declaration and its default is what settings.Reader.CommandPrefix gives
// for an empty config.
func TestCommandPrefixConfig(t *testing.T) {
	d := valid()
	d.Config = append(d.Config, plugin.CommandPrefixConfig())
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if c := plugin.CommandPrefixConfig(); c.Default != settings.Read(nil).CommandPrefix() {
		t.Errorf("default %v", c.Default)
	}
}
