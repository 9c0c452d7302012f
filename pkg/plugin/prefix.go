package plugin

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/settings"
)

// The command prefix. LangBot answers a message as a command when it
// starts with one of the bot's prefixes: `!` or `！` by default, `/` for
// bots created on LangBot 4.12. A text that names a command (help, usage,
// errors, alerts, tool results) writes it as "{prefix}<word>" (i18n
// PrefixArg) and gets the prefix from CommandPrefix: the one the user
// typed when the text answers a command, otherwise the installation's
// command_prefix setting (CommandPrefixConfig, read by
// settings.Reader.CommandPrefix), whose default is
// settings.DefaultCommandPrefix.
const (
	// maxTypedPrefixRunes bounds the prefix read out of a message's text
	// when the host does not send it (githubkit spec §3.1 rule 4).
	maxTypedPrefixRunes = 3
)

// TypedPrefix returns the prefix the user typed before the command word:
// the host's prefix field (DESIGN 3.1 command.prefix) when it is a valid
// prefix, else the part of fullText (leading space trimmed) before the
// first case-insensitive word when that part is 1 to 3 code points
// without space, else "" (not known).
func TypedPrefix(word, prefix, fullText string) string {
	if settings.ValidCommandPrefix(prefix) {
		return prefix
	}
	s := strings.TrimLeftFunc(fullText, unicode.IsSpace)
	if word == "" || !utf8.ValidString(s) {
		return ""
	}
	n := 0
	for i := range s {
		if n > maxTypedPrefixRunes {
			break
		}
		if i > 0 && len(s)-i >= len(word) && strings.EqualFold(s[i:i+len(word)], word) {
			if p := s[:i]; settings.ValidCommandPrefix(p) {
				return p
			}
			return ""
		}
		n++
	}
	return ""
}

// CommandPrefix is the prefix a text names commands with: typed (the
// user's, from TypedPrefix) when known, else configured (the
// installation's command_prefix) when valid, else settings.DefaultCommandPrefix.
func CommandPrefix(typed, configured string) string {
	switch {
	case typed != "":
		return typed
	case settings.ValidCommandPrefix(configured):
		return configured
	}
	return settings.DefaultCommandPrefix
}

// CommandPrefixConfig is the command_prefix item of an installation's
// config form; every plugin with chat commands declares it, so the
// operator sets the bot's prefix once per installation. Its texts are
// short: LangBot's runtime sends every manifest with every chat message's
// event answer (lbpkg.DumpBudget).
func CommandPrefixConfig() ConfigItem {
	return ConfigItem{
		Name: settings.CommandPrefixItem, Type: "string", Default: settings.DefaultCommandPrefix,
		Label: Text{EnUS: "Command prefix", ZhHans: "命令前缀"},
		Description: Text{
			EnUS:   "The bots' prefix: ! (/ for bots made on LangBot 4.12); 1-8 symbols.",
			ZhHans: "机器人的命令前缀：!（LangBot 4.12 新建的为 /），1-8 个符号。",
		},
	}
}
