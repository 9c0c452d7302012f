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
// command_prefix setting (CommandPrefixConfig), whose default is
// DefaultCommandPrefix.
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
	// maxTypedPrefixRunes bounds the prefix read out of a message's text
	// when the host does not send it (githubkit spec §3.1 rule 4).
	maxTypedPrefixRunes = 3
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

// TypedPrefix returns the prefix the user typed before the command word:
// the host's prefix field (DESIGN 3.1 command.prefix) when it is a valid
// prefix, else the part of fullText (leading space trimmed) before the
// first case-insensitive word when that part is 1 to 3 code points
// without space, else "" (not known).
func TypedPrefix(word, prefix, fullText string) string {
	if ValidCommandPrefix(prefix) {
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
			if p := s[:i]; ValidCommandPrefix(p) {
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
// installation's command_prefix) when valid, else DefaultCommandPrefix.
func CommandPrefix(typed, configured string) string {
	switch {
	case typed != "":
		return typed
	case ValidCommandPrefix(configured):
		return configured
	}
	return DefaultCommandPrefix
}

// ReadCommandPrefix reads the command_prefix setting: trimmed; missing or
// empty gives DefaultCommandPrefix silently, an invalid one gives it with
// a warning in r.
func ReadCommandPrefix(r *settings.Reader) string {
	return r.String(CommandPrefixItem, DefaultCommandPrefix, settings.Strings{Trim: true, EmptyIsDefault: true, Valid: ValidCommandPrefix})
}

// CommandPrefixConfig is the command_prefix item of an installation's
// config form; every plugin with chat commands declares it, so the
// operator sets the bot's prefix once per installation.
func CommandPrefixConfig() ConfigItem {
	return ConfigItem{
		Name: CommandPrefixItem, Type: "string", Default: DefaultCommandPrefix,
		Label: Text{EnUS: "Command prefix", ZhHans: "命令前缀"},
		Description: Text{
			EnUS:   "The command prefix of the bots this plugin runs on (LangBot: ! by default, / for bots created on 4.12). Messages the plugin sends on its own (alerts, tool results, notices) name commands with it; an answer to a command uses the prefix the user typed. 1 to 8 characters without letters, digits or spaces.",
			ZhHans: "本插件所在机器人的命令前缀（LangBot 默认为 !，4.12 新建的机器人为 /）。插件主动发送的消息（提醒、工具结果、通知）用它书写命令；回复命令时使用用户输入的前缀。1 到 8 个字符，不含字母、数字或空格。",
		},
	}
}
