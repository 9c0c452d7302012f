package githubkit

// The kinds of githubkit's own subjects and keys (spec §6): the token
// after "<prefix>.githubkit." of an internal subject, or after "<scope>."
// of a key. pkg/bus builds the subject or key from them (Subjects.Internal,
// bus.Key); nothing else spells them.
const (
	// KindSched is the schedule of one repo's poll:
	// <prefix>.githubkit.sched.<scope>.<repo-key>.
	KindSched = "sched"
	// KindPoll is the subject a poll's schedule fires on:
	// <prefix>.githubkit.poll.<scope>.<repo-key>.
	KindPoll = "poll"
	// KindRepo is the key kind of repo records: <scope>.repo.<repo-key>.
	KindRepo = "repo"
	// kindCards is the key kind of a chat's link-card choice:
	// <scope>.cards.<chat sid> (cards_cmd.go).
	kindCards = "cards"
)

// Webhook kinds (webhook_cmd.go, webhook_http.go, webhook_consume.go).
const (
	// KindHook is both the key kind of a webhook, <scope>.hook.<hook-id>
	// (its sealed secret and liveness), and the subject kind of its
	// recorded deliveries, <prefix>.githubkit.hook.<scope>.<hook-id>.
	KindHook = "hook"
	// KindHookBody is the dedupe-bucket marker of one delivery body,
	// <scope>.hookbody.<hash>: GitHub signs only the body, so a replayed
	// body under a new delivery id is refused by it.
	KindHookBody = "hookbody"
	// kindSeen is the recent event identities of one repo record, read by
	// the poller and the webhook consumer: <scope>.seen.<repo-key>.
	kindSeen = "seen"
)
