package i18n

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PrefixArg is the placeholder every catalogue names a chat command's
// prefix with: templates write "{prefix}sche add ...", never "!sche add",
// because the prefix is the bot's (LangBot's `!` by default, `/` for bots
// created on 4.12) and a text must name a command the way its reader types
// it. A service passes the prefix as this argument; package plugin decides
// which prefix that is (CommandPrefix).
const PrefixArg = "prefix"

// PrefixedText is Text with the command prefix as the PrefixArg
// argument, so every "{prefix}<word>" of the template names the command as
// its reader types it; args may not override it.
func (c *Catalog) PrefixedText(lang, key, prefix string, args map[string]string) string {
	full := make(map[string]string, len(args)+1)
	for k, v := range args {
		full[k] = v
	}
	full[PrefixArg] = prefix
	return c.Text(lang, key, full)
}

// PrefixRunes are the characters a command prefix is made of in practice
// (LangBot's `!` and `！`, 4.12's `/`): a command word right after one of
// them, outside a {prefix} placeholder, is a hard-coded prefix.
const PrefixRunes = "!！/"

// CommandMention is one command named in a text: the prefix rune right
// before it and the word.
type CommandMention struct {
	Prefix string
	Word   string
}

// CommandMentions returns, in order, every place text names one of words
// as a command: a prefix rune (PrefixRunes) followed by the word, the word
// ending at a non-letter, non-digit (or the end) and the prefix rune not
// following a letter, digit or '/' (so "owner/sche" and "a/b/ho" are
// paths, not commands). Words match case-insensitively.
func CommandMentions(text string, words ...string) []CommandMention {
	var out []CommandMention
	var prev rune
	for i, r := range text {
		if strings.ContainsRune(PrefixRunes, r) && !isWordRune(prev) && prev != '/' {
			rest := text[i+utf8.RuneLen(r):]
			for _, w := range words {
				if len(rest) < len(w) || !strings.EqualFold(rest[:len(w)], w) {
					continue
				}
				next, _ := utf8.DecodeRuneInString(rest[len(w):])
				if len(rest) == len(w) || !isWordRune(next) {
					out = append(out, CommandMention{Prefix: string(r), Word: w})
				}
			}
		}
		prev = r
	}
	return out
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// CheckCommandPrefix reports every template of c that names one of the
// command words with a prefix of its own rather than through {prefix}:
// each template of each language is rendered with the prefix `/` and with
// `!` (every other placeholder filled with each command word in turn, so
// that "!{command}" is caught too), and each command it names must carry
// exactly the prefix it was rendered with. Services run it in their tests
// over every catalogue they write into chats.
func (c *Catalog) CheckCommandPrefix(words ...string) error {
	var problems []string
	for _, lang := range c.Languages() {
		for key, tmpl := range c.langs[lang] {
			if p := templatePrefixProblem(tmpl, words); p != "" {
				problems = append(problems, fmt.Sprintf("%s %q: %s", lang, key, p))
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%w: commands named with a fixed prefix: %s", ErrCatalog, strings.Join(problems, "; "))
	}
	return nil
}

// templatePrefixProblem renders tmpl with each test prefix and each filler
// and describes the first command it names with another prefix.
func templatePrefixProblem(tmpl string, words []string) string {
	names := Placeholders(tmpl)
	for _, prefix := range [...]string{"/", "!"} {
		for _, fill := range append([]string{"x"}, words...) {
			args := map[string]string{}
			for _, n := range names {
				args[n] = fill
			}
			args[PrefixArg] = prefix
			text := placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string { return args[m[1:len(m)-1]] })
			for _, m := range CommandMentions(text, words...) {
				if m.Prefix != prefix {
					return fmt.Sprintf("rendered with prefix %q it names %s%s", prefix, m.Prefix, m.Word)
				}
			}
		}
	}
	return ""
}
