package schenotify

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Platforms that refuse proactive messages. A host answers a
// send_message the platform refused for good with a 4xx error whose reason
// is one of the Reason* words below. After such a refusal the reminder is
// not retried: it waits (StateWaiting), the chat is marked (a scoped key
// <scope>.waiting.<session token>), and every reminder of that chat that
// falls due while the mark stands waits too. The chat's next incoming
// message (the event endpoint) sends them, through send_message, which is
// the reply path those platforms allow right after a user's message; the
// first send that succeeds removes the mark, so the chat's later
// reminders go out proactively again.

// Reasons of a permanent refusal of send_message (the host's error
// reason), as pkg/bus names them.
const (
	ReasonNotPermitted       = wire.RefusalNotPermitted
	ReasonOutsideReplyWindow = wire.RefusalOutsideReplyWindow
	ReasonUnsupportedTarget  = wire.RefusalUnsupportedTarget
)

// StateWaiting is a reminder whose chat refused a proactive message: it is
// sent on the chat's next incoming message.
const StateWaiting = "waiting"

// ErrCodeRefused is the last_error code of a permanent refusal; its detail
// is the reason.
const errCodeRefused = "refused"

// OutcomeWaiting counts deliveries parked until the chat's next message.
const outcomeWaiting = "waiting"

// keyWaiting is the key kind of a chat's mark: <scope>.waiting.<token>.
const keyWaiting = "waiting"

// Refusal classifies a failed send: the reason of a permanent refusal, or
// "" for an error that is retried as before (5xx, timeouts, 429, 404 for a
// bot that is not running, anything without one of the reasons). A 403 is
// binding_refused (DESIGN 3.4) whatever its reason.
func Refusal(err error) string {
	var e *wire.Error
	if !errors.As(err, &e) || e.Code < 400 || e.Code >= 500 || e.Code == 403 || e.Code == 429 {
		return ""
	}
	switch e.Reason {
	case ReasonNotPermitted, ReasonOutsideReplyWindow, ReasonUnsupportedTarget:
		return e.Reason
	}
	return ""
}

// waitMark is the stored mark of a chat that refused a proactive message.
type waitMark struct {
	V       int       `json:"v"`
	Session session   `json:"session"`
	Reason  string    `json:"reason"`
	Since   time.Time `json:"since"`
}

// markWaiting marks sess as refusing proactive messages; an existing mark
// stays as it is.
func (rm *reminders) markWaiting(ctx context.Context, sc binding.Scope, sess session, reason string, now time.Time) error {
	b, _ := json.Marshal(waitMark{V: 1, Session: sess, Reason: reason, Since: now.UTC().Truncate(time.Second)})
	rm.writes.Add(1)
	_, err := rm.runner.KV().Create(ctx, sc, keyWaiting, b, sess.Token())
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return storeErr("mark chat", err)
	}
	return nil
}

// chatWaiting reports whether sess is marked, with the mark's revision.
func (rm *reminders) chatWaiting(ctx context.Context, sc binding.Scope, sess session) (bool, uint64, error) {
	e, err := rm.runner.KV().Get(ctx, sc, keyWaiting, sess.Token())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, storeErr("read chat mark", err)
	}
	return true, e.Revision(), nil
}

// unmark removes sess's mark if it is still at rev: a send went through.
func (rm *reminders) unmark(ctx context.Context, sc binding.Scope, sess session, rev uint64) error {
	rm.writes.Add(1)
	return rm.runner.KV().Delete(ctx, sc, keyWaiting, rev, sess.Token())
}

// park puts a fired reminder of a marked chat into StateWaiting instead of
// sending it. conflict asks the caller to reload the record.
func (d *delivery) park(ctx context.Context, sc binding.Scope, rec *Record, rev uint64) (conflict bool, err error) {
	c := *rec
	c.State, c.Claim, c.NextAttemptAt = StateWaiting, nil, nil
	if _, err := d.rem.casRecord(ctx, sc, &c, rev); err != nil {
		if bus.IsCASConflict(err) {
			return true, nil
		}
		return false, storeErr("park", err)
	}
	d.log.InfoContext(ctx, "reminder waits for the chat's next message", "scope", sc.String(), "id", rec.ID)
	return false, nil
}

// refused records a permanent refusal of a claimed send: the chat is
// marked and the reminder waits, without a retry.
func (d *delivery) refused(ctx context.Context, sc binding.Scope, c *Record, rev uint64, reason string, now time.Time) error {
	if err := d.rem.markWaiting(ctx, sc, c.Session, reason, now); err != nil {
		return err
	}
	c.State, c.Claim, c.NextAttemptAt = StateWaiting, nil, nil
	c.Attempt, c.FirstAttemptAt = 0, nil
	c.LastError = &LastError{Code: errCodeRefused, Detail: reason, At: now.UTC().Truncate(time.Second)}
	return d.writeOutcome(ctx, sc, c, rev)
}
