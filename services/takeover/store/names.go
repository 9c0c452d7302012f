package store

// Names of the service's JetStream resources (spec §5.1).
const (
	Plugin        = "takeover"
	TimerStream   = "LANGBOT_TAKEOVER_TIMERS"
	BlobBucket    = "langbot_takeover_blobs"
	ExpireDurable = "takeover-expire"
	AlertDurable  = "takeover-alert"
	// EscalateDurable reads fired escalation schedules.
	EscalateDurable = "takeover-escalate"

	historyPerSubject = 2200 // largest history_limit plus the largest trim slack

	// HistoryShards is how many streams hold the chat history. A session's
	// shard is the first hex digit of its sid.
	HistoryShards = 16

	// LegacyHistoryStream held every session's history before it was
	// sharded; admin.MigrateHistory moves its contents into the shards.
	LegacyHistoryStream = "LANGBOT_TAKEOVER_HISTORY"
)

// Internal subject kinds: the token after "<prefix>.takeover." of the
// service's own subjects (DESIGN 3.1, spec §5.1). pkg/bus builds the
// subjects; the kinds are the service's.
const (
	KindTimer   = "timer"   // expiry schedules
	KindExpire  = "expire"  // fired expiries
	KindHistory = "history" // chat history, sharded
	KindLive    = "live"    // live feed (core NATS)
	KindAlert   = "alert"   // operator alerts waiting for delivery, one per session

	// escalation: one schedule per session, a waiting chat's
	// re-alert or a taken chat's idle return (the two never overlap)
	KindEscTimer = "esctimer" // escalation schedules
	KindEscalate = "escalate" // fired escalations
)

// SubjectKind is one kind of the service's internal subjects: the id
// tokens after the scope, and whether it lives on the timer stream.
type SubjectKind struct {
	Kind  string
	IDs   []string // names of the tokens after the scope: "shard", "sid"
	Timer bool     // on TimerStream (its subjects, PurgeTimers)
}

// SubjectKinds lists every internal subject kind the service builds. The
// timer stream's subjects and its per-scope purge are made from it, and
// docs/asyncapi.json documents exactly these (TestAsyncAPIDocumentsInternalSubjects
// also checks that every Kind constant is listed).
func SubjectKinds() []SubjectKind {
	sid := []string{"sid"}
	return []SubjectKind{
		{Kind: KindTimer, IDs: sid, Timer: true},
		{Kind: KindExpire, IDs: sid, Timer: true},
		{Kind: KindHistory, IDs: []string{"shard", "sid"}},
		{Kind: KindLive},
		{Kind: KindAlert, IDs: sid, Timer: true},
		{Kind: KindEscTimer, IDs: sid, Timer: true},
		{Kind: KindEscalate, IDs: sid, Timer: true},
	}
}

// KV key kinds: the token after "<scope>." of the service's keys (DESIGN 4).
const (
	KeySession = "session" // <scope>.session.<sid>
	KeyReply   = "reply"   // dedupe bucket: <scope>.reply.<hash>
	KeyAlert   = "alert"   // dedupe bucket: <scope>.alert.<sid>, a chat's alert state
	KeyNumbers = "numbers" // dedupe bucket: <scope>.numbers.<hash>, an operator chat's short numbers
	KeyClaim   = "claim"   // dedupe bucket: <scope>.claim.<sid>, a chat's last "taken by" note
	KeyCanned  = "canned"  // <scope>.canned.all, the installation's canned replies
	KeyNotes   = "notes"   // <scope>.notes.<sid>, a chat's internal notes
	KeyAIUsage = "aiuse"   // <scope>.aiuse: the day's LLM calls (bus.DailyBudget)

	// relay mode
	KeyRelay   = "relay"   // <scope>.relay.<hash>, the chat an operator chat relays (Store.Relays)
	KeyRelayTo = "relayto" // <scope>.relayto.<sid>, the operator chat a chat is relayed to
)
