package schenotify

import (
	"sort"
	"time"

	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// Reminder states (spec 6.1).
const (
	StateScheduled = "scheduled"
	StateSending   = "sending"
	StateRetrying  = "retrying"
	StatePaused    = "paused"
	StateFailed    = "failed"
)

// Error codes stored in last_error.
const (
	ErrCodeHost        = "host_error"
	ErrCodeTimeout     = "timeout"
	errCodeUnavailable = "unavailable"
)

// claim marks the occurrence a replica is sending, until it expires.
type claim struct {
	Occurrence time.Time `json:"occurrence"`
	Replica    string    `json:"replica"`
	Until      time.Time `json:"until"`
}

// LastError is the last failed attempt; Detail never holds message text.
type LastError struct {
	Code   string    `json:"code"`
	Detail string    `json:"detail"`
	At     time.Time `json:"at"`
}

// Record is the stored reminder, key <scope>.reminder.<id>. Instants are
// UTC to the second.
type Record struct {
	V                   int              `json:"v"`
	ID                  string           `json:"id"`
	Session             session          `json:"session"`
	CreatorSenderID     string           `json:"creator_sender_id"`
	CreatedAt           time.Time        `json:"created_at"`
	CreatedVia          string           `json:"created_via"`
	InvocationID        string           `json:"invocation_id"`
	Message             string           `json:"message"`
	OriginalLength      int              `json:"original_length"`
	Zone                string           `json:"zone"`
	Recurrence          *when.Recurrence `json:"recurrence"`
	Until               *time.Time       `json:"until"`
	NextDue             time.Time        `json:"next_due"`
	State               string           `json:"state"`
	Claim               *claim           `json:"claim"`
	Attempt             int              `json:"attempt"`
	FirstAttemptAt      *time.Time       `json:"first_attempt_at"`
	NextAttemptAt       *time.Time       `json:"next_attempt_at"`
	LastError           *LastError       `json:"last_error"`
	Delivered           int              `json:"delivered"`
	LastOccurrence      *time.Time       `json:"last_occurrence"`
	ConsecutiveFailures int              `json:"consecutive_failures"`
	// Mentions are the member ids named at creation ("@id" words, the
	// tool's mentions), at most MaxMentions of at most MaxMentionRunes each;
	// a group delivery mentions them after the creator.
	Mentions []string `json:"mentions,omitempty"`
	// Held marks a reminder paused by a user (!sche pause): its state is
	// paused, and only !sche resume brings it back, not an attach.
	Held bool `json:"held,omitempty"`
	// Kind is kindText (absent: every record stored before kinds) or
	// kindAI, whose Message is the prompt (ai.go).
	Kind string `json:"kind,omitempty"`
	// AIAnswer is an AI-written reminder's LLM answer for one occurrence,
	// kept so that every retry of that occurrence sends the same text
	// under the same idempotency key (ai.go); at most maxAIAnswerRunes.
	AIAnswer *aiAnswer `json:"ai_answer,omitempty"`
	// Pause is why an unheld paused reminder waits for something other
	// than an attach (pauseCalendarEnd); empty for an installation's
	// pause.
	Pause string `json:"pause,omitempty"`
}

// aiAnswer is the LLM's answer for one occurrence of an AI-written
// reminder.
type aiAnswer struct {
	Occurrence time.Time `json:"occurrence"`
	Text       string    `json:"text"`
}

// lastDelivered is <scope>.last.<session token>: what a chat was sent
// last, enough to snooze it after a one-shot's record is gone. Its
// strings are a record's, within the same caps.
type lastDelivered struct {
	V          int       `json:"v"`
	ID         string    `json:"id"`
	Message    string    `json:"message"`
	Mentions   []string  `json:"mentions,omitempty"`
	Occurrence time.Time `json:"occurrence"`
	At         time.Time `json:"at"`
	// Kind is the reminder's (Record.Kind): a snoozed AI-written reminder
	// is written by the AI again.
	Kind string `json:"kind,omitempty"`
}

// Created via.
const (
	viaTool    = "tool"
	viaCommand = "command"
)

// Target is the instant the record's schedule is armed for: the retry time
// while retrying, otherwise next_due (spec 7.2).
func (r *Record) Target() time.Time {
	if r.State == StateRetrying && r.NextAttemptAt != nil {
		return *r.NextAttemptAt
	}
	return r.NextDue
}

// indexEntry is one reminder in the scope index.
type indexEntry struct {
	Session   string    `json:"s"`
	CreatedAt time.Time `json:"c"`
}

// Index is <scope>.index: every reminder of the scope by id.
type Index struct {
	V       int                   `json:"v"`
	Entries map[string]indexEntry `json:"entries"`
}

// sessionIDs returns the ids of token's entries.
func (ix *Index) sessionIDs(token string) []string {
	var ids []string
	for id, e := range ix.Entries {
		if e.Session == token {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Count returns the number of entries of token, or all entries when token
// is empty.
func (ix *Index) Count(token string) int {
	if token == "" {
		return len(ix.Entries)
	}
	n := 0
	for _, e := range ix.Entries {
		if e.Session == token {
			n++
		}
	}
	return n
}

// sortRecords orders reminders as lists show them (spec 4.2): by next_due,
// then created_at, then id.
func sortRecords(rs []*Record) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if !a.NextDue.Equal(b.NextDue) {
			return a.NextDue.Before(b.NextDue)
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	})
}
