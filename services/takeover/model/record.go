package model

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/langbot-nats/plugins/pkg/settings"
)

// Record limits (spec §5.2, §11).
const (
	MaxMembers         = 500
	MaxMemberNameRunes = 64
	MaxPreviewRunes    = 50
	MaxNameRunes       = 256
)

// Roles of history entries.
const (
	RoleUser   = "user"
	RoleAI     = "ai"
	RoleHuman  = "human"
	RoleNotice = "notice"
)

// Takeover causes (via) and release reasons.
const (
	ViaConsole    = "console"
	ViaTrigger    = "trigger"
	ViaReply      = "reply"
	ReasonManual  = "manual"
	ReasonTimeout = "timeout"
)

// Record is a session's metadata, stored at <scope>.session.<sid> (spec §5.2).
type Record struct {
	V             int           `json:"v"`
	Gen           string        `json:"gen"`
	SessionKey    string        `json:"session_key"`
	Type          string        `json:"type"`
	TargetID      string        `json:"target_id"`
	BotUUID       string        `json:"bot_uuid"`
	Adapter       string        `json:"adapter"`
	Name          string        `json:"name"`
	Legacy        bool          `json:"legacy"`
	Members       []Member      `json:"members"`
	Unread        bool          `json:"unread"`
	TriggeredWord string        `json:"triggered_word"`
	TriggeredAt   int64         `json:"triggered_at"`
	Takeover      TakeoverState `json:"takeover"`
	LastMsgAt     int64         `json:"last_msg_at"`
	LastPreview   Preview       `json:"last_msg_preview"`
	HistoryCount  int           `json:"history_count"`
	CreatedAt     int64         `json:"created_at"`
	UpdatedAt     int64         `json:"updated_at"`
	Import        *ImportState  `json:"import"`
	// Satisfaction is the question asked after the last release, when the
	// installation asks one (omitted otherwise, so older records read
	// and write unchanged).
	Satisfaction *Satisfaction `json:"satisfaction,omitempty"`
}

// Member is a group speaker, most recent first in Record.Members.
type Member struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	At   int64  `json:"at"`
}

// Preview is the list preview of the last message.
type Preview struct {
	Kind string `json:"kind"` // text, image, file, other, or "" when none
	Text string `json:"text"`
}

// ImportState marks a record created by `lbctl import takeover` (spec §10).
type ImportState struct {
	State string                     `json:"state"` // running, done
	At    int64                      `json:"at"`
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// TakeoverState is the takeover block of a record (spec §6).
type TakeoverState struct {
	Active        bool   `json:"active"`
	StartedAt     int64  `json:"started_at"`
	LastHumanAt   int64  `json:"last_human_at"`
	ExpiresAt     int64  `json:"expires_at"`
	Operator      string `json:"operator"`
	Via           string `json:"via"`
	ReleasedAt    int64  `json:"released_at"`
	ReleasedBy    string `json:"released_by"`
	ReleaseReason string `json:"release_reason"`
}

// NewRecord returns a fresh record for a session seen at now (ms) with a new
// random gen.
func NewRecord(bot, launcherType, launcherID, name string, now int64) *Record {
	key := SessionKey(bot, launcherType, launcherID)
	if name == "" {
		name = launcherID
	}
	return &Record{
		V: 1, Gen: NewGen(), SessionKey: key, Type: launcherType, TargetID: launcherID,
		BotUUID: bot, Name: settings.CutRunes(name, MaxNameRunes), Members: []Member{},
		CreatedAt: now, UpdatedAt: now,
	}
}

// NewGen returns a random 16-hex-digit generation.
func NewGen() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DecodeRecord parses a stored record.
func DecodeRecord(b []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.Members == nil {
		r.Members = []Member{}
	}
	return &r, nil
}

// Clone returns a deep copy of r.
func (r *Record) Clone() *Record {
	c := *r
	c.Members = append([]Member(nil), r.Members...)
	if r.Import != nil {
		imp := *r.Import
		c.Import = &imp
	}
	if r.Satisfaction != nil {
		sat := *r.Satisfaction
		c.Satisfaction = &sat
	}
	return &c
}

// ChatName is how operators' messages name the chat: its name, else its
// target id.
func (r *Record) ChatName() string {
	if r.Name != "" {
		return r.Name
	}
	return r.TargetID
}

// AddMember moves or inserts a speaker at the front of the members list and
// keeps at most MaxMembers.
func (r *Record) AddMember(id, name string, at int64) {
	if id == "" {
		return
	}
	if name == "" {
		name = id
	}
	name = settings.CutRunes(name, MaxMemberNameRunes)
	out := make([]Member, 0, min(len(r.Members)+1, MaxMembers))
	out = append(out, Member{ID: id, Name: name, At: at})
	for _, m := range r.Members {
		if m.ID != id && len(out) < MaxMembers {
			out = append(out, m)
		}
	}
	r.Members = out
}

// Entry is one history message (spec §5.3), one stream message on the
// session's history subject.
type Entry struct {
	V          int    `json:"v"`
	ID         string `json:"id"`
	Gen        string `json:"gen"`
	TS         int64  `json:"ts"`
	Role       string `json:"role"`
	SenderID   string `json:"sender_id"`
	SenderName string `json:"sender_name"`
	Operator   string `json:"operator"`
	Truncated  bool   `json:"truncated"`
	Parts      []Part `json:"parts"`
	Seq        uint64 `json:"seq,omitempty"` // set on reads only
}

// Part is one part of an entry: text, image, file or other.
type Part struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	URL       string `json:"url,omitempty"`
	Blob      string `json:"blob,omitempty"`
	Name      string `json:"name,omitempty"`
	Mime      string `json:"mime,omitempty"`
	Size      int64  `json:"size,omitempty"`
	Omitted   string `json:"omitted,omitempty"`   // too_large, invalid
	Component string `json:"component,omitempty"` // for type other

	// Data holds decoded attachment bytes between extraction and the blob
	// put; it is never stored in the entry.
	Data []byte `json:"-"`
}

// Part types.
const (
	PartText  = "text"
	PartImage = "image"
	PartFile  = "file"
	PartOther = "other"
)

// Blobs returns the blob names an entry holds.
func (e *Entry) Blobs() []string {
	var out []string
	for _, p := range e.Parts {
		if p.Blob != "" {
			out = append(out, p.Blob)
		}
	}
	return out
}

// PreviewOf is the list preview of a message with these parts.
func PreviewOf(parts []Part) Preview {
	if len(parts) == 0 {
		return Preview{}
	}
	p := parts[0]
	switch p.Type {
	case PartText:
		return Preview{Kind: PartText, Text: settings.CutRunes(p.Text, MaxPreviewRunes)}
	case PartFile:
		return Preview{Kind: PartFile, Text: settings.CutRunes(p.Name, MaxPreviewRunes)}
	case PartImage:
		return Preview{Kind: PartImage}
	}
	return Preview{Kind: PartOther}
}

// EntryID derives an entry id from its parts (spec §5.3 rule 4): the first 32
// hex digits of sha256 over "scope|sid|" and the rest.
func EntryID(scope, sid string, rest ...string) string {
	h := sha256.New()
	h.Write([]byte(scope + "|" + sid + "|"))
	h.Write([]byte(strings.Join(rest, "")))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// EventEntryID is the id of the entry an event records.
func EventEntryID(scope, sid, invocationID, eventName string) string {
	return EntryID(scope, sid, invocationID, eventName)
}

// ReplyEntryID is the id of an operator reply's entry.
func ReplyEntryID(scope, sid, idempotencyKey string) string {
	return EntryID(scope, sid, "reply|", idempotencyKey)
}

// NoticeEntryID is the id of a notice entry; on tells the takeover notice
// from the release notice.
func NoticeEntryID(scope, sid string, startedAt int64, on bool) string {
	return EntryID(scope, sid, "notice|", strconv.FormatInt(startedAt, 10), OnOff(on))
}

// ImportEntryID is the id of the i-th imported entry of a session.
func ImportEntryID(scope, sid string, i int) string {
	return EntryID(scope, sid, "import|", strconv.Itoa(i))
}

// OnOff is the word of a notice's direction in ids and idempotency keys.
func OnOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// TimerBody is the body of an expiry schedule (spec §5.4).
type TimerBody struct {
	SID       string `json:"sid"`
	ExpiresAt int64  `json:"expires_at"`
}

// Reply dedupe states (spec §7.4).
const (
	ReplySending   = "sending"
	ReplyDelivered = "delivered"
	ReplySaved     = "saved"
	ReplyFailed    = "failed"
)

// ReplyDedupe is the record of one operator reply by idempotency key.
type ReplyDedupe struct {
	State   string          `json:"state"`
	EntryID string          `json:"entry_id"`
	Result  json.RawMessage `json:"result,omitempty"`
	At      int64           `json:"at"`
}

// Live event types (spec §5.4, §7.5).
const (
	LiveMessage  = "message"
	LiveSession  = "session"
	LiveTakeover = "takeover"
	LiveTrigger  = "trigger"
	LiveDeleted  = "deleted"
	LiveCleared  = "cleared"
	// LiveRelay is the operator chats relaying a chat, after each change
	// (data {sid, relayed_to}; takeover relay mode).
	LiveRelay = "relay"
)

// Live is a message on the scope's live subject.
type Live struct {
	Type string `json:"type"`
	SID  string `json:"sid,omitempty"`
	Data any    `json:"data,omitempty"`
}
