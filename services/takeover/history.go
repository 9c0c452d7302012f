package takeover

import (
	"context"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// visible returns the entries the console may see (spec §5.3 rule 5): the
// record's gen only, the newest limit of them, oldest first.
func visible(entries []storedEntry, gen string, limit int) []Entry {
	out := make([]Entry, 0, min(len(entries), limit))
	for _, e := range entries {
		if !e.corrupt && e.Gen == gen {
			out = append(out, e.Entry)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// maybeTrim trims a session's history once it holds history_limit plus the
// slack (spec §5.3 rule 6).
func (s *Service) maybeTrim(ctx context.Context, sc binding.Scope, sid string, rec *Record, set Settings) {
	if rec.HistoryCount < set.HistoryLimit+set.HistorySlack() {
		return
	}
	if err := s.trim(ctx, sc, sid, set.HistoryLimit); err != nil {
		s.log.WarnContext(ctx, "history trim failed", "scope", sc.String(), "sid", sid, "err", err)
	}
}

// trim keeps the newest limit entries of a session: it notes the blobs of
// the older ones, purges the subject below the first kept sequence (never
// with keep, which would count racing appends), deletes the noted blobs and
// corrects the count hint.
func (s *Service) trim(ctx context.Context, sc binding.Scope, sid string, limit int) error {
	entries, _, err := s.st.readHistory(ctx, sc, sid)
	if err != nil {
		return err
	}
	drop := max(len(entries)-limit, 0)
	if drop > 0 {
		var blobs []string
		for _, e := range entries[:drop] {
			blobs = append(blobs, e.Blobs()...)
		}
		if err := s.st.purgeHistory(ctx, sc, sid, entries[drop].Seq); err != nil {
			return err
		}
		if err := s.st.deleteBlobs(ctx, sc, blobs); err != nil {
			return err
		}
	}
	kept := len(entries) - drop
	rec, rev, err := s.st.updateRecord(ctx, sc, sid, func(cur *Record) (*Record, error) {
		if cur == nil {
			return nil, errNoChange
		}
		r := cur.Clone()
		// appends that raced the read are counted on top of what was kept
		r.HistoryCount = max(r.HistoryCount-drop, kept)
		if r.HistoryCount == cur.HistoryCount {
			return nil, errNoChange
		}
		return r, nil
	})
	if err == nil {
		s.view.applyRecord(sc, sid, rec, rev)
	}
	return err
}
