package githubkit

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Poll limits (spec §9).
const (
	brokenAfter        = 5
	SendFailuresToDrop = 10
	BackoffCap         = 3600 * time.Second
	claimFor           = 120 * time.Second
	pollDeadline       = 110 * time.Second
	eventsPerPage      = 100
	maxEventPages      = 3
	enrichmentBudget   = 5
)

// RepoKey returns the repo-key of a full name: unpadded base64url of its
// lower-cased form.
func RepoKey(fullName string) string { return binding.Token(strings.ToLower(fullName)) }

// RepoRecord is the stored state of one subscribed repository,
// <scope>.repo.<repo-key> (spec §6.2).
type RepoRecord struct {
	V        int     `json:"v"`
	FullName string  `json:"full_name"`
	RepoID   *int64  `json:"repo_id"`
	Head     *string `json:"head"`
	ETag     string  `json:"etag,omitempty"`
	// CI is the workflow-run state, absent until a subscriber asks for CI
	// alerts (records written before it decode unchanged).
	CI          *CIState      `json:"ci,omitempty"`
	Poll        PollState     `json:"poll"`
	Subscribers []*Subscriber `json:"subscribers"`
	// HookID names the repository's webhook (<scope>.hook.<id>, webhook_cmd.go);
	// empty when it has none.
	HookID string `json:"hook_id,omitempty"`
	// orgRepos is, for an organisation's poll (orgFeed), its record's
	// Repos: never stored in a repository record.
	orgRepos []string
}

// PollState is the poll bookkeeping of a record.
type PollState struct {
	IntervalS         int        `json:"interval_s"`
	XPollIntervalS    int        `json:"x_poll_interval_s,omitempty"`
	NotBefore         *time.Time `json:"not_before"`
	ClaimUntil        *time.Time `json:"claim_until"`
	TransientFailures int        `json:"transient_failures"`
	PermanentFailures int        `json:"permanent_failures"`
	LastStatus        int        `json:"last_status,omitempty"`
	Broken            *Broken    `json:"broken"`
}

// Broken marks a record whose polling stopped after repeated permanent errors.
type Broken struct {
	At     time.Time `json:"at"`
	Status int       `json:"status"`
}

// Identity is a subscriber's identity (spec §3.6).
type Identity struct {
	BotUUID    string `json:"bot_uuid"`
	TargetType string `json:"target_type"`
	TargetID   string `json:"target_id"`
}

// SID is the first 16 hex digits of SHA-256(bot_uuid|target_type|target_id).
func (id Identity) SID() string {
	sum := sha256.Sum256([]byte(id.BotUUID + "|" + id.TargetType + "|" + id.TargetID))
	return hex.EncodeToString(sum[:8])
}

// Subscriber is one chat subscribed to a repository.
type Subscriber struct {
	Identity
	Kinds []string `json:"kinds"`
	// Refine narrows Kinds (branches, labels, tags); absent in records
	// written before it existed, which then narrow nothing.
	Refine *events.Refine `json:"refine,omitempty"`
	// Prefix is the command prefix the subscriber typed at sub time, for
	// the notices pushed later; "" (an imported subscription) means the
	// installation's command_prefix.
	Prefix       string    `json:"prefix"`
	Cursor       *string   `json:"cursor"`
	SendFailures int       `json:"send_failures"`
	AddedAt      time.Time `json:"added_at"`
}

// Find returns the subscriber with identity id, or nil.
func (r *RepoRecord) Find(id Identity) *Subscriber { return findSubscriber(r.Subscribers, id) }

// Remove drops the subscriber with identity id and reports whether it was there.
func (r *RepoRecord) Remove(id Identity) bool {
	n := len(r.Subscribers)
	r.Subscribers = slices.DeleteFunc(r.Subscribers, func(s *Subscriber) bool { return s.Identity == id })
	return len(r.Subscribers) != n
}

// SortSubscribers orders subscribers by added_at, ties by identity.
func (r *RepoRecord) SortSubscribers() {
	slices.SortStableFunc(r.Subscribers, func(a, b *Subscriber) int {
		if c := a.AddedAt.Compare(b.AddedAt); c != 0 {
			return c
		}
		return strings.Compare(a.BotUUID+"|"+a.TargetType+"|"+a.TargetID, b.BotUUID+"|"+b.TargetType+"|"+b.TargetID)
	})
}

// CompareIDs compares two GitHub event ids as unsigned decimals of any
// length (spec §6.2: "99" < "100"). Non-decimal ids sort before every
// decimal one.
func CompareIDs(a, b string) int {
	da, db := isDecimal(a), isDecimal(b)
	switch {
	case !da && !db:
		return strings.Compare(a, b)
	case !da:
		return -1
	case !db:
		return 1
	}
	a = strings.TrimLeft(a, "0")
	b = strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// maxID returns the larger id.
func maxID(a, b string) string {
	if CompareIDs(a, b) >= 0 {
		return a
	}
	return b
}

// Selection is what one subscriber gets from a poll.
type Selection struct {
	Events []ghclient.Event // oldest first, after filter and cap
	More   int              // matching events dropped by the cap
}

// Select applies filter-then-cap (spec §7.2 step 10): the events (oldest
// first) newer than cursor that match kinds and have a formatter, then the
// newest max of them.
func Select(evs []ghclient.Event, cursor string, kinds []string, max int) Selection {
	return SelectRefined(evs, cursor, kinds, nil, max)
}

// SelectRefined is Select with a subscription's refinements applied after
// its kinds. A payload is decoded for refinement only when ref looks at the
// event's type, so subscriptions without refinements cost what they did.
func SelectRefined(evs []ghclient.Event, cursor string, kinds []string, ref *events.Refine, max int) Selection {
	return selectRefinedWith(evs, cursor, kinds, ref, max, nil)
}

// selectRefinedWith is SelectRefined where en (when not nil) tells what
// extra calls found out about an event the refinements read (a polled
// push's files, for path:).
func selectRefinedWith(evs []ghclient.Event, cursor string, kinds []string, ref *events.Refine, max int, en func(ghclient.Event) *events.Enrichment) Selection {
	var keep []ghclient.Event
	for _, e := range evs {
		if CompareIDs(e.ID, cursor) <= 0 || !events.Formatted(e.Type) {
			continue
		}
		rt := ""
		if e.Type == "CreateEvent" || e.Type == "DeleteEvent" {
			rt = events.RefType(e)
		}
		if !events.Matches(kinds, e.Type, rt) {
			continue
		}
		if ref.Refined(e.Type) && !ref.Allows(events.FromEvent(e, enrichOf(en, e, ref))) {
			continue
		}
		keep = append(keep, e)
	}
	if max > 0 && len(keep) > max {
		return Selection{Events: keep[len(keep)-max:], More: len(keep) - max}
	}
	return Selection{Events: keep}
}

// enrichOf asks en about e when ref reads what only extra calls know.
func enrichOf(en func(ghclient.Event) *events.Enrichment, e ghclient.Event, ref *events.Refine) *events.Enrichment {
	if en == nil || e.Type != "PushEvent" || !ref.WantsFiles() {
		return nil
	}
	return en(e)
}

// Backoff returns the not_before delay after the k-th consecutive transient
// failure: d·U(0.5, 1) with d = min(interval·2^(k−1), 3600 s) (spec §7.3).
// u is a uniform sample in [0, 1); nil uses math/rand/v2.
func Backoff(interval time.Duration, k int, u func() float64) time.Duration {
	if u == nil {
		u = rand.Float64
	}
	d := interval
	for i := 1; i < k && d < BackoffCap; i++ {
		d *= 2
	}
	d = min(d, BackoffCap)
	return time.Duration(float64(d) * (0.5 + 0.5*u()))
}

// RateJitter returns the 1-5 s jitter added to a rate-limit wait.
func RateJitter(u func() float64) time.Duration {
	if u == nil {
		u = rand.Float64
	}
	return time.Second + time.Duration(u()*float64(4*time.Second))
}

// effectiveInterval is max(config interval, X-Poll-Interval).
func effectiveInterval(config, xPoll int) int { return max(config, xPoll) }
