package schenotify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// errCap is returned by the index update when a cap is reached.
type capError struct{ code string }

func (e *capError) Error() string { return "schenotify: " + e.code }

// orphanGrace is how old an index entry without a record must be before an
// add that found a cap reached drops it; the recovery sweep uses 60 s.
const (
	orphanGrace = 10 * time.Second
	sweepGrace  = 60 * time.Second
)

func storeErr(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", errStore, op, err)
}

// loadRecord reads a reminder; nil with revision 0 when absent.
func (rm *reminders) loadRecord(ctx context.Context, sc binding.Scope, id string) (*Record, uint64, error) {
	r, rev, err := rm.records.Get(ctx, sc, id)
	if errors.Is(err, bus.ErrCorruptRecord) {
		return nil, 0, fmt.Errorf("schenotify: decode reminder: %w", err)
	}
	if err != nil {
		return nil, 0, storeErr("read reminder", err)
	}
	return r, rev, nil
}

// casRecord writes rec if the key is still at rev.
func (rm *reminders) casRecord(ctx context.Context, sc binding.Scope, rec *Record, rev uint64) (uint64, error) {
	rm.writes.Add(1)
	return rm.records.UpdateAt(ctx, sc, rec, rev, rec.ID)
}

// deleteRecord places a delete marker on the record if it is still at rev.
func (rm *reminders) deleteRecord(ctx context.Context, sc binding.Scope, id string, rev uint64) error {
	rm.writes.Add(1)
	return rm.records.Delete(ctx, sc, rev, id)
}

// loadIndex reads the scope index (empty when absent).
func (rm *reminders) loadIndex(ctx context.Context, sc binding.Scope) (*Index, error) {
	ix, _, err := rm.indexes.Get(ctx, sc)
	if errors.Is(err, bus.ErrCorruptRecord) {
		return nil, fmt.Errorf("schenotify: decode index: %w", err)
	}
	if err != nil {
		return nil, storeErr("read index", err)
	}
	if ix == nil {
		ix = newIndex()
	}
	return ix, nil
}

func newIndex() *Index { return &Index{V: 1, Entries: map[string]indexEntry{}} }

// decodeIndex parses a stored index; an empty value is an empty index.
func decodeIndex(b []byte) (*Index, error) {
	ix := newIndex()
	if len(b) == 0 {
		return ix, nil
	}
	if err := json.Unmarshal(b, ix); err != nil {
		return nil, err
	}
	if ix.Entries == nil {
		ix.Entries = map[string]indexEntry{}
	}
	return ix, nil
}

// updateIndex applies fn to the index by compare-and-set (bus.Records:
// retried on contention, an ambiguous write re-read), and again up to five
// times when the retries run out. fn returns bus.ErrNoChange to skip the
// write. The updates of one installation's index take turns in this
// replica (locks), so its compare-and-set contends only with other
// replicas: 64 adds of one installation at once, each racing the others
// on the one record, made some run out of retries and answer unavailable.
func (rm *reminders) updateIndex(ctx context.Context, sc binding.Scope, fn func(ix *Index) error) error {
	unlock, err := rm.locks.Lock(ctx, sc)
	if err != nil {
		return storeErr("update index", err)
	}
	defer unlock()
	for range 5 {
		_, _, err = rm.indexes.Update(ctx, sc, func(ix *Index) (*Index, error) {
			if ix == nil {
				ix = newIndex()
			}
			if err := fn(ix); err != nil {
				return nil, err
			}
			rm.writes.Add(1)
			return ix, nil
		})
		if !errors.Is(err, bus.ErrCASExhausted) {
			break
		}
	}
	var ce *capError
	if err != nil && !errors.As(err, &ce) {
		return storeErr("update index", err)
	}
	return err
}

// dropIndexEntry removes id from the index.
func (rm *reminders) dropIndexEntry(ctx context.Context, sc binding.Scope, id string) error {
	return rm.updateIndex(ctx, sc, func(ix *Index) error {
		if _, ok := ix.Entries[id]; !ok {
			return bus.ErrNoChange
		}
		delete(ix.Entries, id)
		return nil
	})
}

// sessionRecords returns the session's reminders in list order (spec 4.2),
// skipping index entries whose record is gone.
func (rm *reminders) sessionRecords(ctx context.Context, sc binding.Scope, sess session) ([]*Record, error) {
	ix, err := rm.loadIndex(ctx, sc)
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, id := range ix.sessionIDs(sess.Token()) {
		r, _, err := rm.loadRecord(ctx, sc, id)
		if err != nil {
			return nil, err
		}
		if r == nil || r.Session != sess {
			continue
		}
		out = append(out, r)
	}
	sortRecords(out)
	return out, nil
}

// subjects returns a reminder's schedule and due subjects.
func (rm *reminders) subjects(sc binding.Scope, id string) (sched, due string, err error) {
	if sched, err = rm.subj.Internal(Plugin, KindSched, sc, id); err != nil {
		return "", "", err
	}
	due, err = rm.subj.Internal(Plugin, KindDue, sc, id)
	return sched, due, err
}

// scheduleBody is the body of a schedule message: the id only.
type scheduleBody struct {
	ID string `json:"id"`
}

// arm publishes the reminder's @at schedule for at (spec 7.2), replacing
// any schedule on its subject. The schedule fires the lead ahead of at, and
// the handler holds the claimed delivery until at (hold.go).
func (rm *reminders) arm(ctx context.Context, sc binding.Scope, id string, at time.Time) error {
	at = at.Add(-rm.lead)
	sched, due, err := rm.subjects(sc, id)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(scheduleBody{ID: id})
	rm.writes.Add(1)
	if err := bus.ScheduleAt(ctx, rm.runner.JetStream(), sched, due, at, body); err != nil {
		return storeErr("arm", err)
	}
	return nil
}

// cancel removes a reminder's schedule. Its due subject is left alone: a
// purge of a due subject would empty the due consumer's redelivery queue
// (bus.Fired.Remove), so a fired message is removed only once handled,
// by its sequence (ack), and one that fired before the cancel finds no
// record (or a changed one) and is removed by its handler.
func (rm *reminders) cancel(ctx context.Context, sc binding.Scope, id string) error {
	sched, _, err := rm.subjects(sc, id)
	if err != nil {
		return err
	}
	rm.writes.Add(1)
	if err := bus.PurgeSubjects(ctx, rm.runner.Stream(StreamName), sched); err != nil {
		return storeErr("cancel schedule", err)
	}
	return nil
}

// purgeScope is the runner's removal hook: it cancels every schedule and
// drops every fired message of the scope; the runner then purges the keys.
// Its purge of the scope's due subjects empties the due consumer's
// redelivery queue (bus.Fired.Remove): an uninstall is rare enough to pay
// that (messages due for redelivery then wait one AckWait).
func (rm *reminders) purgeScope(ctx context.Context, sc binding.Scope) error {
	return bus.PurgeSubjects(ctx, rm.runner.Stream(StreamName),
		rm.subj.InternalScope(Plugin, KindSched, sc), rm.subj.InternalScope(Plugin, KindDue, sc))
}

// purgeReminder drops whatever an add that raced the scope's removal left:
// the reminder's schedule, its record and the scope's index.
func (rm *reminders) purgeReminder(ctx context.Context, sc binding.Scope, id string) {
	_ = rm.cancel(ctx, sc, id)
	_ = rm.records.Purge(ctx, sc, id)
	_ = rm.indexes.Purge(ctx, sc)
}
