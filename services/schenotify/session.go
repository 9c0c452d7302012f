package schenotify

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// sessionIn is the session of an invocation as the host sends it; ids may
// be JSON strings or numbers.
type sessionIn struct {
	LauncherType string          `json:"launcher_type"`
	LauncherID   json.RawMessage `json:"launcher_id"`
	SenderID     json.RawMessage `json:"sender_id"`
	BotUUID      string          `json:"bot_uuid"`
}

// session is the trusted identity of a chat: the exact triple decides
// which reminders a caller sees (spec 6.2).
type session struct {
	BotUUID    string `json:"bot_uuid"`
	TargetType string `json:"target_type"`
	TargetID   string `json:"target_id"`
}

// resolve returns the session triple and the creator's sender id, or ok
// false when any part of the triple is missing (err.no_session).
func (in sessionIn) resolve() (s session, sender string, ok bool) {
	s.BotUUID = strings.TrimSpace(in.BotUUID)
	s.TargetType = in.LauncherType
	s.TargetID = idText(in.LauncherID)
	sender = idText(in.SenderID)
	if s.BotUUID == "" || s.TargetID == "" || (s.TargetType != "person" && s.TargetType != "group") {
		return session{}, "", false
	}
	return s, sender, true
}

// idText is a string id as is, or the literal digits of a JSON number.
func idText(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || bytes.Equal(v, []byte("null")) {
		return ""
	}
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return ""
		}
		return s
	}
	var n json.Number
	if json.Unmarshal(v, &n) != nil {
		return ""
	}
	return n.String()
}

// Token is the key-safe session token of the index: unpadded base64url of
// the first 16 bytes of SHA-256 over the triple joined by U+0000.
func (s session) Token() string {
	h := sha256.Sum256([]byte(s.BotUUID + "\x00" + s.TargetType + "\x00" + s.TargetID))
	return base64.RawURLEncoding.EncodeToString(h[:16])
}
