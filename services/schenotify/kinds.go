package schenotify

// The kinds of schenotify's own subjects and keys (spec 7): the token
// after "<prefix>.schenotify." of an internal subject, or after "<scope>."
// of a key. pkg/bus builds the subject or key from them (Subjects.Internal,
// bus.Key); nothing else spells them.
const (
	// KindSched is the schedule of one reminder:
	// <prefix>.schenotify.sched.<scope>.<id>.
	KindSched = "sched"
	// KindDue is the subject a reminder's schedule fires on:
	// <prefix>.schenotify.due.<scope>.<id>.
	KindDue = "due"
	// keyReminder is the key kind of reminder records: <scope>.reminder.<id>.
	keyReminder = "reminder"
	// keyIndex is the key of a scope's reminder index: <scope>.index.
	keyIndex = "index"
)

// keyLast is the key kind of the reminder delivered last in a chat:
// <scope>.last.<session token>, read by "!sche snooze" without an id.
const keyLast = "last"

// keyAIBudget is the key of a scope's budget of AI-written deliveries:
// <scope>.aibudget (ai.go).
const keyAIBudget = "aibudget"
