package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Launcher types.
const (
	LauncherPerson = "person"
	LauncherGroup  = "group"
)

// Identity bounds (spec §3.2).
const (
	maxBotUUIDLen    = 128
	maxLauncherIDLen = 256
)

// SessionKey is the original plugin's session key:
// "<bot_uuid>:<launcher_type>_<launcher_id>" (spec §4 rule 1).
func SessionKey(bot, launcherType, launcherID string) string {
	return bot + ":" + launcherType + "_" + launcherID
}

// SID is the lowercase hex SHA-256 of a session key (spec §4 rule 2). It
// carries no scope.
func SID(sessionKey string) string {
	sum := sha256.Sum256([]byte(sessionKey))
	return hex.EncodeToString(sum[:])
}

// ValidSID reports whether s has the form of a sid: 64 lowercase hex digits.
func ValidSID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ValidBotUUID reports whether a host-resolved bot uuid can key a session:
// non-empty, at most 128 bytes, no ':' and no control character (spec §3.2
// step 2).
func ValidBotUUID(bot string) bool {
	if bot == "" || len(bot) > maxBotUUIDLen || !utf8.ValidString(bot) {
		return false
	}
	return !strings.ContainsFunc(bot, func(r rune) bool { return r == ':' || unicode.IsControl(r) })
}

// LauncherID returns the literal text of a launcher id given as a JSON string
// or number: 1-256 characters without control characters (spec §3.2 step 3).
func LauncherID(raw json.RawMessage) (string, bool) {
	id, ok := IDText(raw)
	if !ok || id == "" || utf8.RuneCountInString(id) > maxLauncherIDLen {
		return "", false
	}
	if strings.ContainsFunc(id, unicode.IsControl) {
		return "", false
	}
	return id, true
}

// IDText is the literal text of a JSON string or number id.
func IDText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil || !utf8.ValidString(s) {
			return "", false
		}
		return s, true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return "", false
		}
		return string(raw), true
	}
	return "", false
}

// IsLegacy reports whether a record is legacy (spec §4 rule 5): its bot is
// empty, or its key is not the one rebuilt from its own identity fields.
func IsLegacy(r *Record) bool {
	return r.BotUUID == "" || r.SessionKey != SessionKey(r.BotUUID, r.Type, r.TargetID)
}

// IdentityConflict reports whether a recording by bot (with adapter, "" when
// unknown) must be refused by the record (spec §4 rule 4).
func IdentityConflict(r *Record, bot, adapter string) bool {
	if r.BotUUID != "" && r.BotUUID != bot {
		return true
	}
	return r.Adapter != "" && adapter != "" && r.Adapter != adapter
}
