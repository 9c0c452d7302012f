package githubkit

// Events seen by both paths. A repository with a webhook gets each event
// twice: from the delivery and, later, from the Events API. Both paths
// claim an event's identity in the repo record's recent set,
// <scope>.seen.<repo-key>, by compare-and-set before they push it, and
// skip what the other path claimed. Repositories without a webhook never
// read or write the set, so their polls cost what they did.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Recent-set bounds.
const (
	// seenMax bounds the entries of one repo record's set.
	seenMax = 256
	// seenKeep is how long a poll's entry is kept: GitHub documents that
	// an event can take up to 6 h to appear in the Events API.
	seenKeep = 7 * time.Hour
	// deliveryKeep is how long a delivery's entry is kept: a repository
	// admin can redeliver a delivery of the past 3 days on github.com (7
	// on GitHub Enterprise Server), with the same body, so its body hash
	// must still be known then. seenMax still bounds the set: in a
	// repository with more than seenMax events in that time, a redelivery
	// older than the newest seenMax is pushed again.
	deliveryKeep = 7 * 24 * time.Hour
	// seenMatch is how far apart the two paths' times of one event may be:
	// the poller knows the event's created_at, the receiver its receipt.
	// The same identity further apart is a new event (a PR closed again).
	seenMatch = 10 * time.Minute
	// byPoll marks the poller's claims.
	byPoll = "poll"
)

// seenEntry is one claimed event.
type seenEntry struct {
	ID string    `json:"id"` // eventIdentity
	At time.Time `json:"at"`
	// By is byPoll or the delivery id that claimed it; Msg the nonce of
	// that delivery's recording, Body its body hash.
	By   string `json:"by"`
	Msg  string `json:"msg,omitempty"`
	Body string `json:"body,omitempty"`
}

// seenSet is the recent set of one repo record.
type seenSet struct {
	V       int         `json:"v"`
	Entries []seenEntry `json:"entries"`
}

func seenStore(kv *bus.KV) *bus.Records[seenSet] {
	return bus.NewRecords[seenSet](kv, kindSeen, bus.RecordsConfig[seenSet]{})
}

// prune drops entries older than they are kept (seenKeep for the
// poller's, deliveryKeep for a delivery's) and then the oldest beyond
// room free slots under seenMax.
func (s *seenSet) prune(now time.Time, room int) {
	keep := s.Entries[:0]
	for _, e := range s.Entries {
		ttl := deliveryKeep
		if e.By == byPoll {
			ttl = seenKeep
		}
		if now.Sub(e.At) < ttl {
			keep = append(keep, e)
		}
	}
	if n := len(keep) + room - seenMax; n > 0 {
		keep = keep[min(n, len(keep)):]
	}
	s.Entries = keep
}

// match returns the entry claiming identity id at time at, or nil.
func (s *seenSet) match(id string, at time.Time) *seenEntry {
	for i := range s.Entries {
		e := &s.Entries[i]
		if e.ID == id && e.At.Sub(at).Abs() <= seenMatch {
			return e
		}
	}
	return nil
}

// eventIdentity names an event by its kind and natural ids, the same for
// its Events API item and its webhook delivery.
func eventIdentity(e ghclient.Event) string {
	a := events.FromEvent(e, nil)
	n := strconv.Itoa(a.Number)
	var parts []string
	switch a.Type {
	case "PushEvent":
		parts = []string{a.Ref, a.Head}
	case "PullRequestEvent", "IssuesEvent", "DiscussionEvent":
		parts = []string{n, a.Action, a.Label, a.Assignee, a.Reviewer}
	case "IssueCommentEvent", "PullRequestReviewCommentEvent", "CommitCommentEvent":
		parts = []string{strconv.FormatInt(a.CommentID, 10)}
	case "PullRequestReviewEvent":
		parts = []string{strconv.FormatInt(a.ReviewID, 10), a.ReviewState}
	case "ReleaseEvent":
		parts = []string{a.Tag, a.Action}
	case "CreateEvent", "DeleteEvent":
		parts = []string{a.RefType, a.Ref}
	case "ForkEvent":
		parts = []string{a.Forkee}
	case "MemberEvent":
		parts = []string{a.Member, a.Action}
	case "GollumEvent":
		parts = []string{a.Actor}
		for _, p := range a.Pages {
			parts = append(parts, p.Name, p.Action)
		}
	default: // watch, public: the actor is all there is
		parts = []string{a.Actor}
	}
	sum := sha256.Sum256([]byte(a.Type + "\x00" + strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// eventTime is when GitHub created an Events API item (zero if unknown).
func eventTime(e ghclient.Event) time.Time {
	t, _ := time.Parse(time.RFC3339, e.CreatedAt)
	return t
}

// claimPolled claims the poller's new events and returns those the
// webhook has not claimed, in order. When the set cannot be read or
// written it returns events unchanged: a second push is better than a
// lost one.
func (s *shared) claimPolled(ctx context.Context, sc binding.Scope, key string, events []ghclient.Event, now time.Time) []ghclient.Event {
	if len(events) == 0 {
		return events
	}
	var keep []ghclient.Event
	_, _, err := seenStore(s.runner.KV()).Update(ctx, sc, func(cur *seenSet) (*seenSet, error) {
		if cur == nil {
			cur = &seenSet{}
		}
		cur.prune(now, len(events))
		keep = keep[:0]
		changed := false
		for _, e := range events {
			id, at := eventIdentity(e), eventTime(e)
			if at.IsZero() {
				at = now
			}
			m := cur.match(id, at)
			switch {
			case m == nil:
				cur.Entries = append(cur.Entries, seenEntry{ID: id, At: at, By: byPoll})
				changed = true
				keep = append(keep, e)
			case m.By == byPoll:
				keep = append(keep, e) // an earlier poll's send that failed: its cursor retries
			}
		}
		if !changed {
			return nil, bus.ErrNoChange
		}
		cur.V = 1
		return cur, nil
	}, key)
	if err != nil {
		s.log.WarnContext(ctx, "poll: recent events not checked", "scope", sc.String(), "err", err)
		return events
	}
	return keep
}

// runIdentity names a workflow run attempt in the recent set.
func runIdentity(r ghclient.WorkflowRun) string {
	sum := sha256.Sum256([]byte("WorkflowRun\x00" + r.Key()))
	return hex.EncodeToString(sum[:12])
}

// claimDelivery claims a recorded delivery's event (its identity id); it
// reports whether this recording may push it (false: the poller or
// another delivery of the same event or body did), and own when this
// recording claimed it on an earlier attempt.
func (s *shared) claimDelivery(ctx context.Context, sc binding.Scope, key, id string, m hookMessage) (mine, own bool, err error) {
	_, _, err = seenStore(s.runner.KV()).Update(ctx, sc, func(cur *seenSet) (*seenSet, error) {
		if cur == nil {
			cur = &seenSet{}
		}
		mine, own = false, false
		for _, x := range cur.Entries {
			if x.By != byPoll && x.Msg == m.Nonce {
				mine, own = true, true // our own redelivery
				return nil, bus.ErrNoChange
			}
		}
		for _, x := range cur.Entries {
			if x.Body == m.BodyHash && m.BodyHash != "" {
				return nil, bus.ErrNoChange // the same body recorded again
			}
		}
		if cur.match(id, m.At) != nil {
			return nil, bus.ErrNoChange
		}
		cur.prune(s.now(), 1)
		cur.Entries = append(cur.Entries, seenEntry{ID: id, At: m.At, By: m.Delivery, Msg: m.Nonce, Body: m.BodyHash})
		cur.V = 1
		mine = true
		return cur, nil
	}, key)
	return mine, own, err
}

// bodyRecorded returns the delivery id whose entry in the recent set of
// repo record key holds the body hash bodyHash and is younger than
// deliveryKeep by the service clock, or "" when there is none.
func (s *shared) bodyRecorded(ctx context.Context, sc binding.Scope, key, bodyHash string) (string, error) {
	set, _, err := seenStore(s.runner.KV()).Get(ctx, sc, key)
	if err != nil || set == nil {
		return "", err
	}
	now := s.now()
	for _, e := range set.Entries {
		if e.By != byPoll && e.Body == bodyHash && now.Sub(e.At) < deliveryKeep {
			return e.By, nil
		}
	}
	return "", nil
}
