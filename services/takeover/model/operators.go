package model

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of the operator-chat setting and of what an alert shows.
const (
	MaxOperatorChats  = 20  // entries of operator_chats; the rest are ignored
	MaxOperatorIDLen  = 256 // like a launcher id
	MaxAlertPreview   = 80  // runes of the waiting chat's message an alert quotes
	MaxHandoffReason  = 200 // runes of request_human's reason
	LanguageEnUS      = "en_US"
	LanguageZhHans    = "zh_Hans"
	operatorChatParts = 3
)

// OperatorChat is one chat where operators are alerted and may answer:
// the bot that serves it, person or group, and the chat's id.
type OperatorChat struct {
	BotUUID string `json:"bot_uuid"`
	Type    string `json:"type"`
	ID      string `json:"id"`
}

// Key is the chat's session key (the same form as a chat's, spec §4).
func (o OperatorChat) Key() string { return SessionKey(o.BotUUID, o.Type, o.ID) }

// ParseOperatorChat reads one entry "<bot_uuid>:<person|group>:<id>". The
// bot uuid obeys the event rules (no ':' or control characters, at most 128
// characters); the id is the rest of the entry (1–256 characters, no
// control characters), so an id may itself contain ':'.
func ParseOperatorChat(s string) (OperatorChat, bool) {
	parts := strings.SplitN(strings.TrimSpace(s), ":", operatorChatParts)
	if len(parts) != operatorChatParts {
		return OperatorChat{}, false
	}
	bot, typ, id := strings.TrimSpace(parts[0]), strings.ToLower(strings.TrimSpace(parts[1])), strings.TrimSpace(parts[2])
	if bot == "" || len(bot) > 128 || hasControl(bot) {
		return OperatorChat{}, false
	}
	if typ != LauncherPerson && typ != LauncherGroup {
		return OperatorChat{}, false
	}
	if id == "" || utf8.RuneCountInString(id) > MaxOperatorIDLen || hasControl(id) {
		return OperatorChat{}, false
	}
	return OperatorChat{BotUUID: bot, Type: typ, ID: id}, true
}

// parseOperatorChats reads operator_chats: a list of entries (a bare
// string is one entry); bad entries and duplicates are dropped, at most
// MaxOperatorChats are kept. clean is false when anything was dropped.
func parseOperatorChats(v json.RawMessage) (out []OperatorChat, clean bool) {
	out, clean = []OperatorChat{}, true
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		var one string
		if json.Unmarshal(v, &one) != nil {
			return out, IsNull(v)
		}
		list = []json.RawMessage{v}
	}
	seen := map[string]bool{}
	for _, item := range list {
		var str string
		if json.Unmarshal(item, &str) != nil {
			clean = false
			continue
		}
		o, ok := ParseOperatorChat(str)
		if !ok {
			clean = false
			continue
		}
		if seen[o.Key()] {
			continue
		}
		if len(out) == MaxOperatorChats {
			clean = false
			break
		}
		seen[o.Key()] = true
		out = append(out, o)
	}
	return out, clean
}

// IsOperatorChat reports whether (bot, type, id) is one of the settings'
// operator chats.
func (s Settings) IsOperatorChat(bot, typ, id string) bool {
	for _, o := range s.OperatorChats {
		if o.BotUUID == bot && o.Type == typ && o.ID == id {
			return true
		}
	}
	return false
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// IsOperatorCommand reports whether a message's text is the service's own
// chat command (`!ho ...`), which a taken-over chat lets through so that
// an admin can resume it there. The prefix may be LangBot's default (`!`
// or full-width `！`), 4.12's default `/`, or the installation's
// command_prefix (configured): the service cannot read the bot's prefix
// list, and a message spelled like the command is one in practice.
func IsOperatorCommand(text, configured string) bool {
	t := strings.TrimSpace(text)
	for _, p := range [...]string{"!", "！", "/", configured} {
		if p == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(t, p); ok {
			if rest, ok = strings.CutPrefix(rest, "ho"); ok && (rest == "" || unicode.IsSpace([]rune(rest)[0])) {
				return true
			}
		}
	}
	return false
}

// String is the entry form "<bot_uuid>:<type>:<id>" that ParseOperatorChat reads.
func (o OperatorChat) String() string { return o.BotUUID + ":" + o.Type + ":" + o.ID }

// MarshalText writes the entry form, so marshalled Settings parse back to
// the same value.
func (o OperatorChat) MarshalText() ([]byte, error) { return []byte(o.String()), nil }
