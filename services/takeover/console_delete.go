package takeover

import (
	"cmp"
	"context"
	"errors"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// Export is the result of GET /export (spec §7.3).
type Export struct {
	Format     string              `json:"format"`
	Version    int                 `json:"version"`
	ExportedAt int64               `json:"exported_at"`
	ExportedBy string              `json:"exported_by"`
	Session    *model.Record       `json:"session"`
	Messages   []model.Entry       `json:"messages"`
	Blobs      map[string]BlobData `json:"blobs"`
	// Notes are the chat's internal notes, oldest first.
	Notes []model.Note `json:"notes"`
}

func (o *ops) export(ctx context.Context, c pageCall, req PageRequest) (Export, error) {
	rec, err := o.mustRecord(ctx, c.Scope, req.SID)
	if err != nil {
		return Export{}, err
	}
	entries, _, err := o.st.ReadHistory(ctx, c.Scope, req.SID)
	if err != nil {
		return Export{}, err
	}
	out := Export{Format: "langbot.takeover.export", Version: 1, ExportedAt: o.now.ms(), ExportedBy: c.Operator,
		Session: rec, Messages: visible(entries, rec.Gen, c.Settings.HistoryLimit, o.recordBudget), Blobs: map[string]BlobData{}}
	notes, err := o.st.Notes(ctx, c.Scope, req.SID)
	if err != nil {
		return Export{}, err
	}
	out.Notes = notes.Notes
	if out.Notes == nil {
		out.Notes = []model.Note{}
	}
	total := 0
	for _, e := range out.Messages {
		for _, p := range e.Parts {
			if p.Blob == "" {
				continue
			}
			bd := BlobData{Mime: p.Mime, Size: int(p.Size)}
			if req.InlineBlobs {
				// a blob past what is left of the inline limit is not read
				data, mime, err := o.st.GetBlob(ctx, c.Scope, p.Blob, maxExportInline-total)
				if errors.Is(err, store.ErrBlobTooLarge) {
					return Export{}, wire.Errorf(wire.ErrTooLarge, "inline attachments exceed 64 MiB")
				}
				if err == nil {
					total += len(data)
					bd.Size, bd.DataURL = len(data), model.DataURL(cmp.Or(mime, p.Mime, model.SniffMime(data)), data)
				}
			}
			out.Blobs[p.Blob] = bd
		}
	}
	return out, nil
}

// deleteSession removes a session: the record first (a purge marker that
// every view sees), then its blobs, history and timer (spec §5.5 rule 5).
// A repeated call finishes what a failed one left.
func (o *ops) deleteSession(ctx context.Context, c pageCall, sid string) (map[string]bool, error) {
	rec, _, err := o.st.GetRecord(ctx, c.Scope, sid)
	existed := rec != nil || errors.Is(err, store.ErrCorrupt)
	if err != nil && !errors.Is(err, store.ErrCorrupt) {
		return nil, err
	}
	left, err := o.st.RemoveSession(ctx, c.Scope, sid, existed)
	if err != nil {
		return nil, err
	}
	if err := o.st.PurgeNotes(ctx, c.Scope, sid); err != nil {
		return nil, err
	}
	if err := o.st.PurgeRelays(ctx, c.Scope, sid); err != nil {
		return nil, err
	}
	if !existed && !left {
		return nil, wire.Errorf(wire.ErrNotFound, "no such session")
	}
	o.notices.publishLive(c.Scope, model.Live{Type: model.LiveDeleted, SID: sid, Data: map[string]string{"sid": sid}})
	return map[string]bool{"deleted": true}, nil
}

func (o *ops) clear(ctx context.Context, c pageCall) (map[string]int, error) {
	sids, err := o.st.SessionIDs(ctx, c.Scope)
	if err != nil {
		return nil, err
	}
	if err := o.st.PurgeRecords(ctx, c.Scope, sids); err != nil {
		return nil, err
	}
	if err := o.st.SweepScope(ctx, c.Scope); err != nil {
		return nil, err
	}
	noted, err := o.st.NoteSIDs(ctx, c.Scope)
	if err != nil {
		return nil, err
	}
	if err := o.st.PurgeNotes(ctx, c.Scope, noted...); err != nil {
		return nil, err
	}
	if err := o.st.PurgeRelays(ctx, c.Scope); err != nil {
		return nil, err
	}
	o.notices.publishLive(c.Scope, model.Live{Type: model.LiveCleared})
	return map[string]int{"cleared": len(sids)}, nil
}

// maxExportInline bounds the inline blobs of an export (spec §11).
const maxExportInline = 64 << 20
