package takeover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// replyStaleMS is how long a "sending" reply record blocks a retry.
const replyStaleMS = 30_000

// ReplyResult is the result of POST /reply (spec §7.3, §7.4).
type ReplyResult struct {
	Delivered bool         `json:"delivered"`
	Saved     bool         `json:"saved"`
	Entry     *model.Entry `json:"entry,omitempty"`
	Takeover  TakeoverView `json:"takeover"`
	Warning   string       `json:"warning,omitempty"`
}

// errReplyRecord answers a reply whose idempotency record could not be
// read or written: nothing was sent, and a retry with the same key is safe.
var errReplyRecord = wire.Errorf(wire.ErrUnavailable, "the reply could not be recorded; nothing was sent")

func replyKeyID(sid, idem string) string {
	sum := sha256.Sum256([]byte(sid + ":" + idem))
	return hex.EncodeToString(sum[:])
}

// reply delivers an operator reply (spec §7.4): idempotency record, the
// takeover first, the send, then the entry.
func (o *ops) reply(ctx context.Context, c pageCall, sid string, r *replyRequest) (ReplyResult, error) {
	rec, err := o.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return ReplyResult{}, err
	}
	if model.IsLegacy(rec) {
		return ReplyResult{}, legacyErr()
	}
	if len(r.Image) > o.attachmentLimit() || len(r.File) > o.attachmentLimit() {
		return ReplyResult{}, wire.Errorf(wire.ErrTooLarge, "an attachment is over the limit")
	}
	now := o.now.ms()

	// 1. the idempotency record
	d, done, err := o.claimReply(ctx, c, sid, r.IdempotencyKey, rec, now)
	if err != nil {
		return ReplyResult{}, err
	}
	if done != nil {
		return *done, nil
	}

	// 2. the takeover first, so the AI is blocked when the reply lands
	rec, err = o.takeForReply(ctx, c, sid, now)
	if err != nil {
		d.set(ctx, model.ReplyDedupe{State: model.ReplyFailed, At: now})
		return ReplyResult{}, err
	}

	// 3. the send
	if err := o.sendReply(ctx, c, sid, rec, r); err != nil {
		d.set(ctx, model.ReplyDedupe{State: model.ReplyFailed, At: now})
		return ReplyResult{}, err
	}
	d.set(ctx, model.ReplyDedupe{State: model.ReplyDelivered, At: now})
	o.notices.resolveAlert(ctx, c.Scope, c.Settings, sid)
	o.relayReply(ctx, c, sid, r) // relay.go: the other operator chats relaying the chat see it

	// 4. the entry
	res := ReplyResult{Delivered: true, Takeover: o.notices.takeoverView(rec, c.Settings)}
	entry, err := o.saveReply(ctx, c, sid, rec.Gen, r, now)
	if err != nil {
		o.log.ErrorContext(ctx, "a delivered reply was not saved", "scope", c.Scope.String(), "sid", sid, "err", err)
		res.Warning = "history_not_saved"
		b, _ := json.Marshal(res)
		d.set(ctx, model.ReplyDedupe{State: model.ReplyDelivered, At: now, Result: b})
		return res, nil
	}
	res.Saved, res.Entry = true, entry
	b, _ := json.Marshal(res)
	d.set(ctx, model.ReplyDedupe{State: model.ReplySaved, EntryID: entry.ID, Result: b, At: now})
	return res, nil
}

// replyRecord is a reply's idempotency record once this attempt holds it.
type replyRecord struct {
	st  *store.Store
	sc  binding.Scope
	key string // replyKeyID
	rev uint64
}

// set writes the record's next state, at the revision this attempt wrote
// last; a failed write leaves the record as it was (a retry finds it stale
// after replyStaleMS).
func (d *replyRecord) set(ctx context.Context, v model.ReplyDedupe) {
	b, _ := json.Marshal(v)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if nrev, err := d.st.Dedupe().UpdateAt(wctx, d.sc, store.KeyReply, b, d.rev, d.key); err == nil {
		d.rev = nrev
	}
}

// claimReply creates the reply's idempotency record in state sending, or
// takes over a stale or failed one. A reply already answered returns its
// result (done); one still being sent, or a record that cannot be read or
// written, returns an error and nothing is sent.
func (o *ops) claimReply(ctx context.Context, c pageCall, sid, idem string, rec *model.Record, now int64) (d *replyRecord, done *ReplyResult, err error) {
	dk := replyKeyID(sid, idem)
	if err := o.st.Check("dedupe", c.Scope); err != nil {
		return nil, nil, err
	}
	sending, _ := json.Marshal(model.ReplyDedupe{State: model.ReplySending, At: now})
	rev, err := o.st.Dedupe().Create(ctx, c.Scope, store.KeyReply, sending, dk)
	if bus.IsCASConflict(err) {
		e, gerr := o.st.Dedupe().Get(ctx, c.Scope, store.KeyReply, dk)
		if gerr != nil {
			return nil, nil, errReplyRecord
		}
		var d model.ReplyDedupe
		if json.Unmarshal(e.Value(), &d) == nil {
			switch {
			case (d.State == model.ReplyDelivered || d.State == model.ReplySaved) && len(d.Result) > 0:
				var res ReplyResult
				if json.Unmarshal(d.Result, &res) == nil {
					return nil, &res, nil
				}
			case (d.State == model.ReplySending || d.State == model.ReplyDelivered) && now-d.At < replyStaleMS:
				return nil, nil, wire.WithReason(wire.ErrConflict, reasonReplyInProgress, "this reply is still being sent")
			case d.State == model.ReplyDelivered:
				// delivered long ago and never saved: never send it again
				return nil, &ReplyResult{Delivered: true, Warning: "history_not_saved", Takeover: o.notices.takeoverView(rec, c.Settings)}, nil
			}
		}
		// take the record over; losing the race means another attempt did
		rev, err = o.st.Dedupe().UpdateAt(ctx, c.Scope, store.KeyReply, sending, e.Revision(), dk)
		if bus.IsCASConflict(err) {
			return nil, nil, wire.WithReason(wire.ErrConflict, reasonReplyInProgress, "this reply is still being sent")
		}
	}
	if err != nil {
		return nil, nil, errReplyRecord
	}
	return &replyRecord{st: o.st, sc: c.Scope, key: dk, rev: rev}, nil, nil
}

// takeForReply starts or extends the takeover a reply holds (by
// takeover_on_reply) and returns the session's record; a start or a new
// operator is followed by the notices (the takeover notice before the
// reply, the "taken by" note).
func (o *ops) takeForReply(ctx context.Context, c pageCall, sid string, now int64) (*model.Record, error) {
	var tr model.Transition
	var claimed bool  // the reply started the takeover or changed its operator
	var refused error // the update's own refusal, answered as it is
	rec, krev, err := o.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
		tr, claimed = model.Unchanged, false
		if cur == nil {
			refused = wire.Errorf(wire.ErrNotFound, "no such session")
			return nil, refused
		}
		if model.IsLegacy(cur) {
			refused = legacyErr()
			return nil, refused
		}
		r := cur.Clone()
		if c.Settings.TakeoverOnReply {
			tr = r.Takeover.TakeOver(now, c.Settings.TimeoutMillis(), model.ViaReply, c.Operator)
		} else {
			tr = r.Takeover.Extend(now, c.Settings.TimeoutMillis(), c.Operator)
		}
		if tr == model.Unchanged {
			return nil, store.ErrNoChange
		}
		claimed = tr == model.Started || cur.Takeover.Operator != c.Operator
		r.UpdatedAt = now
		return r, nil
	})
	if err != nil {
		if refused != nil && errors.Is(err, refused) {
			return nil, err
		}
		return nil, wire.Errorf(wire.ErrUnavailable, "the takeover could not be stored; nothing was sent")
	}
	if tr != model.Unchanged {
		o.view.ApplyRecord(c.Scope, sid, rec, krev)
		o.notices.afterTakeover(ctx, c.session(sid, rec), tr, true)
		if claimed {
			o.notices.noteTaken(ctx, c, sid, rec)
		}
	}
	return rec, nil
}

// sendReply sends the reply to the session's chat through the host, under
// an idempotency key of the reply's, so a retry is delivered once.
func (o *ops) sendReply(ctx context.Context, c pageCall, sid string, rec *model.Record, r *replyRequest) error {
	chain := []wire.Component{}
	if r.Text != "" {
		chain = append(chain, wire.Component{Type: "Plain", Text: r.Text})
	}
	if len(r.Image) > 0 {
		chain = append(chain, wire.Component{Type: "Image", Base64: model.DataURL(r.ImageMime, r.Image)})
	}
	if r.ImageURL != "" {
		chain = append(chain, wire.Component{Type: "Image", URL: r.ImageURL})
	}
	if len(r.File) > 0 {
		chain = append(chain, wire.Component{Type: "File", Base64: model.DataURL(r.FileMime, r.File), Name: r.FileName})
	}
	idem := sendKey(c.Scope, sid, r.IdempotencyKey)
	sctx, cancel := context.WithTimeout(ctx, o.hostTimeout)
	defer cancel()
	err := o.runner.Host().SendMessage(sctx, c.Binding, wire.SendMessage{
		BotUUID: rec.BotUUID, TargetType: rec.Type, TargetID: rec.TargetID, MessageChain: chain,
	}, idem)
	if err == nil {
		return nil
	}
	if errors.Is(err, bus.ErrHostTimeout) {
		return wire.WithReason(wire.ErrUnavailable, reasonOutcomeUnknown, "the host did not answer; retrying with the same key is safe")
	}
	if errors.Is(err, bus.ErrNoHost) {
		// ErrNoHost stays in the chain so the chat command can say no
		// host answered; the wire carries only the fixed message.
		return fmt.Errorf("%w: %w", wire.WithReason(wire.ErrUnavailable, reasonSendFailed, "no host is connected to deliver the message; nothing was sent"), err)
	}
	return wire.WithReason(wire.ErrUnavailable, reasonSendFailed, "the host refused the message")
}

// saveReply stores a delivered reply as one human entry and updates the
// session's metadata.
func (o *ops) saveReply(ctx context.Context, c pageCall, sid, gen string, r *replyRequest, now int64) (*model.Entry, error) {
	var parts []model.Part
	if r.Text != "" {
		parts = append(parts, model.Part{Type: model.PartText, Text: r.Text})
	}
	if len(r.Image) > 0 {
		parts = append(parts, model.Part{Type: model.PartImage, Mime: r.ImageMime, Size: int64(len(r.Image)), Data: r.Image})
	}
	if r.ImageURL != "" {
		parts = append(parts, model.Part{Type: model.PartImage, URL: r.ImageURL})
	}
	if len(r.File) > 0 {
		parts = append(parts, model.Part{Type: model.PartFile, Name: r.FileName, Mime: r.FileMime, Size: int64(len(r.File)), Data: r.File})
	}
	e := &model.Entry{V: 1, ID: model.ReplyEntryID(c.Scope.String(), sid, r.IdempotencyKey), Gen: gen, TS: now, Role: model.RoleHuman, Operator: c.Operator}
	if err := storeEntry(ctx, o.st, c.Scope, sid, e, parts); err != nil {
		return nil, err
	}
	rec, rev, err := o.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil {
			return nil, wire.Errorf(wire.ErrNotFound, "no such session")
		}
		r := cur.Clone()
		r.LastMsgAt = max(r.LastMsgAt, now)
		r.LastPreview = model.PreviewOf(e.Parts)
		r.HistoryCount++
		r.UpdatedAt = now
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	o.view.ApplyRecord(c.Scope, sid, rec, rev)
	o.notices.publishLive(c.Scope, model.Live{Type: model.LiveMessage, SID: sid, Data: map[string]any{"sid": sid, "gen": gen, "entry": e}})
	o.trims.MaybeTrim(c.Scope, sid, rec, c.Settings)
	return e, nil
}
