package schenotify

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// nextMessage is a chat's incoming message: when the chat is marked as
// refusing proactive messages, its waiting reminders are sent in the
// background, each as a send_message of its own (the LangBot packages
// ignore reply_message_chain on message events, and the reply must not
// wait for the claims and sends).
func (d *delivery) nextMessage(ctx context.Context, sc binding.Scope, sess session) {
	marked, _, err := d.rem.chatWaiting(ctx, sc, sess)
	if err != nil {
		d.log.WarnContext(ctx, "chat mark not read", "scope", sc.String(), "err", err)
		return
	}
	if marked {
		d.flusher.start(sc, sess, d.flush)
	}
}

// flusher runs at most one background send of a chat's waiting reminders
// per chat in this replica, and stops with delivery: close lets no new
// flush start and waits for the running ones; when its ctx is done first,
// it cancels them and waits for them to return.
type flusher struct {
	bg      bus.Background
	mu      sync.Mutex
	running map[string]struct{} // the chats with a flush running
}

func newFlusher() *flusher {
	fl := &flusher{running: map[string]struct{}{}}
	fl.bg.CancelAtDeadline = true
	return fl
}

// open lets flushes run until close, under a context of ctx's.
func (fl *flusher) open(ctx context.Context) error { return fl.bg.Start(ctx) }

// close is described on flusher.
func (fl *flusher) close(ctx context.Context) error { return fl.bg.Stop(ctx) }

func (fl *flusher) start(sc binding.Scope, sess session, run func(context.Context, binding.Scope, session)) {
	key := sc.String() + "/" + sess.Token()
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if _, ok := fl.running[key]; ok {
		return
	}
	err := fl.bg.Go(func(ctx context.Context) {
		defer func() {
			fl.mu.Lock()
			delete(fl.running, key)
			fl.mu.Unlock()
		}()
		run(ctx, sc, sess)
	})
	if err == nil {
		fl.running[key] = struct{}{}
	}
}

// flushResult is what sending one waiting reminder came to.
type flushResult int

const (
	flushSkipped flushResult = iota // not waiting any more, or gone
	flushSent
	flushRefused // the chat still refuses
	flushFailed  // a transient failure: it keeps waiting
)

// flush sends the chat's waiting reminders, soonest first, and removes the
// chat's mark once one was sent. A new refusal stops it: the rest wait for
// the next message.
func (d *delivery) flush(ctx context.Context, sc binding.Scope, sess session) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	auth, err := d.authority(ctx, sc)
	if err != nil || auth == nil || !auth.Active() {
		return
	}
	_, markRev, err := d.rem.chatWaiting(ctx, sc, sess)
	if err != nil || markRev == 0 {
		return
	}
	recs, err := d.rem.sessionRecords(ctx, sc, sess)
	if err != nil {
		d.log.WarnContext(ctx, "waiting reminders not listed", "scope", sc.String(), "err", err)
		return
	}
	sent := false
	for _, r := range recs {
		if r.State != StateWaiting {
			continue
		}
		res := d.sendWaiting(ctx, sc, auth, r.ID)
		if res == flushSent {
			sent = true
		}
		if res == flushRefused {
			return
		}
	}
	if sent {
		if err := d.rem.unmark(ctx, sc, sess, markRev); err != nil && !bus.IsCASConflict(err) {
			d.log.WarnContext(ctx, "chat mark not removed", "scope", sc.String(), "err", err)
		}
	}
}

// claimWaiting claims the occurrence of the waiting reminder cl.orig,
// read at revision rev, for the send on the chat's message: the claim
// keeps replicas that got the same message from sending it twice. Its
// first attempt is now. It fills in the rest of cl.
func (d *delivery) claimWaiting(ctx context.Context, cl *claimed, rev uint64, now time.Time) error {
	nowSec := now.UTC().Truncate(time.Second)
	occ := cl.orig.NextDue
	c := cl.orig
	c.State = StateSending
	c.Claim = &claim{Occurrence: occ, Replica: d.replica, Until: nowSec.Add(d.claimFor + d.claimExtra(&c))}
	c.Attempt++
	fa := nowSec
	c.FirstAttemptAt = &fa
	crev, err := d.rem.casRecord(ctx, cl.sc, &c, rev)
	if err != nil {
		return err
	}
	cl.rec, cl.rev, cl.occ, cl.target = &c, crev, occ, cl.orig.Target()
	return nil
}

// sendWaiting claims one waiting reminder and sends it.
func (d *delivery) sendWaiting(ctx context.Context, sc binding.Scope, auth *bus.Authority, id string) flushResult {
	for range 5 {
		rec, rev, err := d.rem.loadRecord(ctx, sc, id)
		if err != nil || rec == nil || rec.State != StateWaiting {
			return flushSkipped
		}
		now := d.now()
		cl := &claimed{sc: sc, auth: auth, orig: *rec}
		err = d.claimWaiting(ctx, cl, rev, now)
		if bus.IsCASConflict(err) {
			continue
		}
		if err != nil {
			return flushFailed
		}
		cl.out = d.render(ctx, cl, now)
		// The key is the refused attempt's: one logical delivery.
		err = d.sendMessage(ctx, cl)
		return d.waitingOutcome(ctx, cl, err)
	}
	return flushFailed
}

// waitingOutcome records what the send of a waiting reminder came to.
func (d *delivery) waitingOutcome(ctx context.Context, cl *claimed, err error) flushResult {
	sc, id, occ := cl.sc, cl.rec.ID, cl.occ
	now := d.now()
	c := *cl.rec
	c.Claim = nil
	var hostErr *wire.Error
	switch {
	case err == nil:
		c.Delivered++
		o := occ
		c.LastOccurrence = &o
		_, aerr := d.advance(ctx, cl, &c, now, true)
		var fin *finished
		if errors.As(aerr, &fin) && fin.both {
			_ = d.rem.cancel(ctx, sc, id)
		} else if aerr != nil && !errors.Is(aerr, errGone) {
			d.log.WarnContext(ctx, "sent waiting reminder not recorded", "scope", sc.String(), "id", id, "err", aerr)
		}
		d.metrics.deliveries.WithLabelValues(outcomeDelivered).Inc()
		d.log.InfoContext(ctx, "reminder handled", "scope", sc.String(), "id", id, "outcome", outcomeDelivered,
			"attempt", c.Attempt, "occurrence", occ.UTC().Format(time.RFC3339), "path", "next_message")
		return flushSent
	case Refusal(err) != "":
		_ = d.refused(ctx, sc, &c, cl.rev, Refusal(err), now)
		d.metrics.deliveries.WithLabelValues(outcomeWaiting).Inc()
		return flushRefused
	case errors.As(err, &hostErr) && hostErr.Code == 403:
		c.State, c.Attempt, c.FirstAttemptAt = StatePaused, 0, nil
		if d.writeOutcome(ctx, sc, &c, cl.rev) == nil {
			d.rem.pausedByRefusal(ctx, sc, id, cl.auth.Binding)
		}
		d.metrics.deliveries.WithLabelValues(outcomePaused).Inc()
		return flushRefused
	default:
		// Still not sent proactively: it waits for the next message.
		c.State = StateWaiting
		c.LastError = &LastError{Code: errorCode(err), Detail: errorDetail(err), At: now.UTC().Truncate(time.Second)}
		_ = d.writeOutcome(ctx, sc, &c, cl.rev)
		return flushFailed
	}
}
