package settings

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The command prefix setting. LangBot answers a message as a command when
// it starts with one of the bot's prefixes: `!` or `！` by default, `/`
// for bots created on LangBot 4.12. Texts a plugin sends on its own
// (alerts, notices, tool results) name commands with the installation's
// command_prefix; pkg/plugin declares the item and chooses between it and
// the prefix a user typed.
const (
	// CommandPrefixItem is the installation setting naming the bot's
	// command prefix, for the texts a plugin writes on its own.
	CommandPrefixItem = "command_prefix"
	// DefaultCommandPrefix is the prefix of texts that answer no command
	// when the installation sets none: LangBot's default before 4.12.
	DefaultCommandPrefix = "!"
	// MaxCommandPrefixRunes bounds a prefix (LangBot's are one character;
	// a few more are allowed, never a sentence).
	MaxCommandPrefixRunes = 8
)

// ValidCommandPrefix reports whether p can be a command prefix: 1 to
// MaxCommandPrefixRunes code points of valid UTF-8 with no space, control
// character, letter or digit (a letter would run into the command word).
func ValidCommandPrefix(p string) bool {
	if p == "" || !utf8.ValidString(p) || utf8.RuneCountInString(p) > MaxCommandPrefixRunes {
		return false
	}
	return !strings.ContainsFunc(p, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.IsLetter(r) || unicode.IsDigit(r)
	})
}

// CommandPrefix reads the command_prefix setting: trimmed; missing or
// empty gives DefaultCommandPrefix silently, an invalid one gives it with
// a warning.
func (r *Reader) CommandPrefix() string {
	return r.String(CommandPrefixItem, DefaultCommandPrefix, Strings{Trim: true, EmptyIsDefault: true, Valid: ValidCommandPrefix})
}
