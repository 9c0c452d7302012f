package bus

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
)

// dedupeRecord is the value of <scope>.inv.<hash> (DESIGN 3.1).
type dedupeRecord struct {
	State     string          `json:"state"` // running or done
	StartedAt time.Time       `json:"started_at"`
	Code      int             `json:"code,omitempty"` // 200 or the error code
	Word      string          `json:"word,omitempty"` // error code word
	Body      json.RawMessage `json:"body,omitempty"`
}

func (d *dedupeRecord) header() nats.Header {
	h := nats.Header{}
	h.Set(wire.HeaderContentType, wire.ContentTypeJSON)
	if d.Code >= 400 {
		h.Set(wire.HeaderServiceError, d.Word)
		h.Set(wire.HeaderServiceCode, strconv.Itoa(d.Code))
	}
	return h
}

// claim creates the running marker for inv. It returns the stored final
// reply of an earlier attempt, ErrInProgress while another attempt runs,
// or nil, nil when this attempt should run.
func (r *Runner) claim(ctx context.Context, inv *Invocation) (*dedupeRecord, error) {
	key := InvocationKey(inv.Scope, inv.ID)
	running, _ := json.Marshal(dedupeRecord{State: "running", StartedAt: r.now().UTC()})
	ctx, end := startClientSpan(ctx, "kv claim "+r.dedupe.Bucket(), trace.SpanKindClient, kvAttrs(r.dedupe.Bucket(), "claim", inv.Scope, KeyInv)...)
	defer end(nil)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for attempt := 0; attempt < casAttempts; attempt++ {
		_, err := r.dedupe.Create(cctx, key, running)
		if err == nil {
			return nil, nil
		}
		if !IsCASConflict(err) {
			return nil, wire.Errorf(wire.ErrUnavailable, "dedupe store unavailable")
		}
		e, err := r.dedupe.Get(cctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // deleted in between: try to create again
		}
		if err != nil {
			return nil, wire.Errorf(wire.ErrUnavailable, "dedupe store unavailable")
		}
		var rec dedupeRecord
		if json.Unmarshal(e.Value(), &rec) != nil {
			return nil, wire.Errorf(wire.ErrUnavailable, "dedupe record unreadable")
		}
		if rec.State == "done" {
			return &rec, nil
		}
		if r.now().Sub(rec.StartedAt) < r.cfg.InvocationTimeout {
			return nil, wire.ErrInProgress
		}
		// the first attempt's worker died: take the marker over
		if _, err := r.dedupe.Update(cctx, key, running, e.Revision()); err == nil {
			return nil, nil
		} else if !IsCASConflict(err) {
			return nil, wire.Errorf(wire.ErrUnavailable, "dedupe store unavailable")
		}
	}
	return nil, wire.ErrInProgress
}

// settle stores a final reply for later retries, or deletes the marker
// after a reply that is not final (see final, or a reply the handler marked
// NotFinal) so that a retry runs again. It outlives the request's ctx.
func (r *Runner) settle(ctx context.Context, inv *Invocation, h nats.Header, body []byte, keep bool) {
	ctx, end := startClientSpan(context.WithoutCancel(ctx), "kv settle "+r.dedupe.Bucket(), trace.SpanKindClient, kvAttrs(r.dedupe.Bucket(), "settle", inv.Scope, KeyInv)...)
	defer end(nil)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	key := InvocationKey(inv.Scope, inv.ID)
	code := 200
	word := h.Get(wire.HeaderServiceError)
	if c, err := strconv.Atoi(h.Get(wire.HeaderServiceCode)); err == nil {
		code = c
	}
	if !final(code) || !keep {
		if err := r.dedupe.Delete(ctx, key); err != nil {
			r.log.Error("dedupe marker not deleted", "scope", inv.Scope.String(), "err", err)
		}
		return
	}
	rec, _ := json.Marshal(dedupeRecord{State: "done", StartedAt: r.now().UTC(), Code: code, Word: word, Body: body})
	if _, err := r.dedupe.Put(ctx, key, rec); err != nil {
		r.log.Error("dedupe reply not stored", "scope", inv.Scope.String(), "err", err)
	}
}

// final reports whether a reply with this code means the same on a retry
// and so is kept for it (DESIGN 3.1: 2xx and 4xx). 409 and 429 are the
// exceptions among the 4xx: they describe the moment ("something else is
// under way", "too many now"), and a kept one would answer every retry of
// the invocation with it until the dedupe record expires, long after the
// conflict or the limit is gone. Like a 5xx, they are sent and not kept.
func final(code int) bool {
	return code < 500 && code != 409 && code != 429
}
