package takeover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
func (s *Service) reply(ctx context.Context, c PageCall, sid string, r *ReplyRequest) (ReplyResult, error) {
	rec, err := s.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return ReplyResult{}, err
	}
	if model.IsLegacy(rec) {
		return ReplyResult{}, legacyErr()
	}
	if len(r.Image) > s.attachmentLimit() || len(r.File) > s.attachmentLimit() {
		return ReplyResult{}, wire.Errorf(wire.ErrTooLarge, "an attachment is over the limit")
	}
	now := s.nowMS()
	dk := replyKeyID(sid, r.IdempotencyKey)

	// 1. the idempotency record
	if err := s.st.Check("dedupe", c.Scope); err != nil {
		return ReplyResult{}, err
	}
	sending, _ := json.Marshal(model.ReplyDedupe{State: model.ReplySending, At: now})
	rev, err := s.st.Dedupe().Create(ctx, c.Scope, store.KeyReply, sending, dk)
	if bus.IsCASConflict(err) {
		e, gerr := s.st.Dedupe().Get(ctx, c.Scope, store.KeyReply, dk)
		if gerr != nil {
			return ReplyResult{}, errReplyRecord
		}
		var d model.ReplyDedupe
		if json.Unmarshal(e.Value(), &d) == nil {
			switch {
			case (d.State == model.ReplyDelivered || d.State == model.ReplySaved) && len(d.Result) > 0:
				var res ReplyResult
				if json.Unmarshal(d.Result, &res) == nil {
					return res, nil
				}
			case (d.State == model.ReplySending || d.State == model.ReplyDelivered) && now-d.At < replyStaleMS:
				return ReplyResult{}, wire.WithReason(wire.ErrConflict, ReasonReplyInProgress, "this reply is still being sent")
			case d.State == model.ReplyDelivered:
				// delivered long ago and never saved: never send it again
				return ReplyResult{Delivered: true, Warning: "history_not_saved", Takeover: s.takeoverView(rec, c.Settings)}, nil
			}
		}
		// take the record over; losing the race means another attempt did
		rev, err = s.st.Dedupe().UpdateAt(ctx, c.Scope, store.KeyReply, sending, e.Revision(), dk)
		if bus.IsCASConflict(err) {
			return ReplyResult{}, wire.WithReason(wire.ErrConflict, ReasonReplyInProgress, "this reply is still being sent")
		}
	}
	if err != nil {
		return ReplyResult{}, errReplyRecord
	}
	setDedupe := func(d model.ReplyDedupe) {
		b, _ := json.Marshal(d)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if nrev, err := s.st.Dedupe().UpdateAt(wctx, c.Scope, store.KeyReply, b, rev, dk); err == nil {
			rev = nrev
		}
	}

	// 2. the takeover first, so the AI is blocked when the reply lands
	var tr model.Transition
	var claimed bool  // the reply started the takeover or changed its operator
	var refused error // the update's own refusal, answered as it is
	rec, krev, err := s.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
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
		setDedupe(model.ReplyDedupe{State: model.ReplyFailed, At: now})
		if refused != nil && errors.Is(err, refused) {
			return ReplyResult{}, err
		}
		return ReplyResult{}, wire.Errorf(wire.ErrUnavailable, "the takeover could not be stored; nothing was sent")
	}
	if tr != model.Unchanged {
		s.view.ApplyRecord(c.Scope, sid, rec, krev)
		s.afterTakeoverSync(ctx, c, sid, rec, tr)
		if claimed {
			s.noteTaken(ctx, c, sid, rec)
		}
	}

	// 3. the send
	chain := []wire.Component{}
	if r.Text != "" {
		chain = append(chain, wire.Component{Type: "Plain", Text: r.Text})
	}
	if len(r.Image) > 0 {
		chain = append(chain, wire.Component{Type: "Image", Base64: model.DataURL(r.ImageMime, r.Image)})
	}
	if len(r.File) > 0 {
		chain = append(chain, wire.Component{Type: "File", Base64: model.DataURL(r.FileMime, r.File), Name: r.FileName})
	}
	idem := "takeover:" + c.Scope.String() + ":" + sid + ":" + r.IdempotencyKey
	sctx, cancel := context.WithTimeout(ctx, s.cfg.HostTimeout)
	defer cancel()
	err = s.runner.Host().SendMessage(sctx, c.Binding, wire.SendMessage{
		BotUUID: rec.BotUUID, TargetType: rec.Type, TargetID: rec.TargetID, MessageChain: chain,
	}, idem)
	if err != nil {
		setDedupe(model.ReplyDedupe{State: model.ReplyFailed, At: now})
		if errors.Is(err, bus.ErrHostTimeout) {
			return ReplyResult{}, wire.WithReason(wire.ErrUnavailable, ReasonOutcomeUnknown, "the host did not answer; retrying with the same key is safe")
		}
		if errors.Is(err, bus.ErrNoHost) {
			// ErrNoHost stays in the chain so the chat command can say no
			// host answered; the wire carries only the fixed message.
			return ReplyResult{}, fmt.Errorf("%w: %w", wire.WithReason(wire.ErrUnavailable, ReasonSendFailed, "no host is connected to deliver the message; nothing was sent"), err)
		}
		return ReplyResult{}, wire.WithReason(wire.ErrUnavailable, ReasonSendFailed, "the host refused the message")
	}
	setDedupe(model.ReplyDedupe{State: model.ReplyDelivered, At: now})
	s.resolveAlert(ctx, c.Scope, c.Settings, sid)

	// 4. the entry
	res := ReplyResult{Delivered: true, Takeover: s.takeoverView(rec, c.Settings)}
	entry, err := s.saveReply(ctx, c, sid, rec.Gen, r, now)
	if err != nil {
		s.log.ErrorContext(ctx, "a delivered reply was not saved", "scope", c.Scope.String(), "sid", sid, "err", err)
		res.Warning = "history_not_saved"
		b, _ := json.Marshal(res)
		setDedupe(model.ReplyDedupe{State: model.ReplyDelivered, At: now, Result: b})
		return res, nil
	}
	res.Saved, res.Entry = true, entry
	b, _ := json.Marshal(res)
	setDedupe(model.ReplyDedupe{State: model.ReplySaved, EntryID: entry.ID, Result: b, At: now})
	return res, nil
}

// saveReply stores a delivered reply as one human entry and updates the
// session's metadata.
func (s *Service) saveReply(ctx context.Context, c PageCall, sid, gen string, r *ReplyRequest, now int64) (*model.Entry, error) {
	var parts []model.Part
	if r.Text != "" {
		parts = append(parts, model.Part{Type: model.PartText, Text: r.Text})
	}
	if len(r.Image) > 0 {
		parts = append(parts, model.Part{Type: model.PartImage, Mime: r.ImageMime, Size: int64(len(r.Image)), Data: r.Image})
	}
	if len(r.File) > 0 {
		parts = append(parts, model.Part{Type: model.PartFile, Name: r.FileName, Mime: r.FileMime, Size: int64(len(r.File)), Data: r.File})
	}
	e := &model.Entry{V: 1, ID: model.ReplyEntryID(c.Scope.String(), sid, r.IdempotencyKey), Gen: gen, TS: now, Role: model.RoleHuman, Operator: c.Operator}
	if err := s.storeEntry(ctx, c.Scope, sid, e, parts); err != nil {
		return nil, err
	}
	rec, rev, err := s.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
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
	s.view.ApplyRecord(c.Scope, sid, rec, rev)
	s.publishLive(c.Scope, model.Live{Type: model.LiveMessage, SID: sid, Data: map[string]any{"sid": sid, "gen": gen, "entry": e}})
	s.trims.MaybeTrim(c.Scope, sid, rec, c.Settings)
	return e, nil
}

// afterTakeoverSync is afterTakeover with the takeover notice's first try
// made before returning (a reply's notice precedes the reply, spec §3.7).
func (s *Service) afterTakeoverSync(ctx context.Context, c PageCall, sid string, rec *model.Record, tr model.Transition) {
	if err := s.st.Schedule(ctx, c.Scope, sid, rec.Takeover.ExpiresAt); err != nil {
		s.log.ErrorContext(ctx, "arming the takeover expiry failed", "scope", c.Scope.String(), "sid", sid, "err", err)
	}
	s.publishLive(c.Scope, model.Live{Type: model.LiveTakeover, SID: sid, Data: s.takeoverView(rec, c.Settings)})
	if tr == model.Started {
		s.notify(ctx, c.Scope, c.Binding, sid, rec, c.Settings.NoticeOnTakeover, true, true)
	}
}
