package schenotify

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Events schenotify listens to: a chat's incoming message is when a chat
// that refused proactive messages can be answered (waiting.go).
const (
	EventPersonMessage = "PersonMessageReceived"
	EventGroupMessage  = "GroupMessageReceived"
)

// eventData is what the event handler reads of a message event.
type eventData struct {
	LauncherType string          `json:"launcher_type"`
	LauncherID   json.RawMessage `json:"launcher_id"`
}

// handleEvent answers every event at once with both prevent flags false:
// reminders never block a message. When the event's chat is marked as
// refusing proactive messages, its waiting reminders are sent in the
// background, each as a send_message of its own (the LangBot packages
// ignore reply_message_chain on message events, and the reply must not
// wait for the claims and sends).
func (s *Service) handleEvent(ctx context.Context, inv *bus.Invocation) (any, error) {
	reply := wire.EventReply{}
	ev := inv.Event
	if ev == nil || (ev.Name != EventPersonMessage && ev.Name != EventGroupMessage) {
		return reply, nil
	}
	var d eventData
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return reply, nil
	}
	sess, _, ok := SessionIn{LauncherType: d.LauncherType, LauncherID: d.LauncherID, BotUUID: ev.BotUUID}.Resolve()
	if !ok {
		return reply, nil
	}
	marked, _, err := s.chatWaiting(ctx, inv.Scope, sess)
	if err != nil {
		s.log.WarnContext(ctx, "chat mark not read", "scope", inv.Scope.String(), "err", err)
		return reply, nil
	}
	if marked {
		s.flusher.start(inv.Scope, sess, s.flush)
	}
	return reply, nil
}

// flusher runs at most one background send of a chat's waiting reminders
// per chat in this replica, and stops with the service.
type flusher struct {
	mu      sync.Mutex
	ctx     context.Context
	running map[string]bool
	wg      sync.WaitGroup
}

func newFlusher() *flusher { return &flusher{running: map[string]bool{}} }

// open lets flushes run under ctx until close.
func (fl *flusher) open(ctx context.Context) {
	fl.mu.Lock()
	fl.ctx = ctx
	fl.mu.Unlock()
}

// close waits for the running flushes (their ctx is already done).
func (fl *flusher) close() {
	fl.mu.Lock()
	fl.ctx = nil
	fl.mu.Unlock()
	fl.wg.Wait()
}

func (fl *flusher) start(sc binding.Scope, sess Session, run func(context.Context, binding.Scope, Session)) {
	key := sc.String() + "/" + sess.Token()
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.ctx == nil || fl.running[key] {
		return
	}
	fl.running[key] = true
	fl.wg.Add(1)
	ctx := fl.ctx
	go func() {
		defer fl.wg.Done()
		defer func() {
			fl.mu.Lock()
			delete(fl.running, key)
			fl.mu.Unlock()
		}()
		run(ctx, sc, sess)
	}()
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
func (s *Service) flush(ctx context.Context, sc binding.Scope, sess Session) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	auth, err := s.authority(ctx, sc)
	if err != nil || auth == nil || !auth.Active() {
		return
	}
	_, markRev, err := s.chatWaiting(ctx, sc, sess)
	if err != nil || markRev == 0 {
		return
	}
	recs, err := s.sessionRecords(ctx, sc, sess)
	if err != nil {
		s.log.WarnContext(ctx, "waiting reminders not listed", "scope", sc.String(), "err", err)
		return
	}
	sent := false
	for _, r := range recs {
		if r.State != StateWaiting {
			continue
		}
		res := s.sendWaiting(ctx, sc, auth, r.ID)
		if res == flushSent {
			sent = true
		}
		if res == flushRefused {
			return
		}
	}
	if sent {
		s.writes.Add(1)
		if err := s.runner.KV().Delete(ctx, sc, keyWaiting, markRev, sess.Token()); err != nil && !bus.IsCASConflict(err) {
			s.log.WarnContext(ctx, "chat mark not removed", "scope", sc.String(), "err", err)
		}
	}
}

// sendWaiting claims one waiting reminder and sends it: the claim keeps
// replicas that got the same message from sending it twice.
func (s *Service) sendWaiting(ctx context.Context, sc binding.Scope, auth *bus.Authority, id string) flushResult {
	for range 5 {
		rec, rev, err := s.loadRecord(ctx, sc, id)
		if err != nil || rec == nil || rec.State != StateWaiting {
			return flushSkipped
		}
		now := s.now()
		nowSec := now.UTC().Truncate(time.Second)
		occ := rec.NextDue
		c := *rec
		c.State = StateSending
		c.Claim = &Claim{Occurrence: occ, Replica: s.cfg.Replica, Until: nowSec.Add(s.cfg.Claim)}
		c.Attempt++
		fa := nowSec
		c.FirstAttemptAt = &fa
		crev, err := s.casRecord(ctx, sc, &c, rev)
		if bus.IsCASConflict(err) {
			continue
		}
		if err != nil {
			return flushFailed
		}
		out := s.prepare(sc, auth, &c, occ, now)
		sctx, cancel := context.WithTimeout(ctx, s.cfg.HostTimeout)
		// The key is the refused attempt's: one logical delivery.
		err = s.runner.Host().SendMessage(sctx, auth.Binding, out.msg, IdempotencyKey(sc, id, occ))
		cancel()
		now = s.now()
		c.Claim = nil
		var hostErr *wire.Error
		switch {
		case err == nil:
			c.Delivered++
			o := occ
			c.LastOccurrence = &o
			_, aerr := s.advance(ctx, sc, &c, out.rule, out.loc, occ, now, crev, true)
			var fin *finished
			if errors.As(aerr, &fin) && fin.both {
				_ = s.cancel(ctx, sc, id)
			} else if aerr != nil && !errors.Is(aerr, errGone) {
				s.log.WarnContext(ctx, "sent waiting reminder not recorded", "scope", sc.String(), "id", id, "err", aerr)
			}
			s.metrics.deliveries.WithLabelValues(OutcomeDelivered).Inc()
			s.log.InfoContext(ctx, "reminder handled", "scope", sc.String(), "id", id, "outcome", OutcomeDelivered,
				"attempt", c.Attempt, "occurrence", occ.UTC().Format(time.RFC3339), "path", "next_message")
			return flushSent
		case Refusal(err) != "":
			_ = s.refused(ctx, sc, &c, crev, Refusal(err), now)
			s.metrics.deliveries.WithLabelValues(OutcomeWaiting).Inc()
			return flushRefused
		case errors.As(err, &hostErr) && hostErr.Code == 403:
			c.State, c.Attempt, c.FirstAttemptAt = StatePaused, 0, nil
			if s.writeOutcome(ctx, sc, &c, crev) == nil {
				s.pausedByRefusal(ctx, sc, id, auth.Binding)
			}
			s.metrics.deliveries.WithLabelValues(OutcomePaused).Inc()
			return flushRefused
		default:
			// Still not sent proactively: it waits for the next message.
			c.State = StateWaiting
			c.LastError = &LastError{Code: errorCode(err), Detail: errorDetail(err), At: now.UTC().Truncate(time.Second)}
			_ = s.writeOutcome(ctx, sc, &c, crev)
			return flushFailed
		}
	}
	return flushFailed
}
