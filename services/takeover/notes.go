package takeover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// Internal notes: operators' notes on a chat, one KV value per
// chat at <scope>.notes.<sid> (store.Notes), at most 50 of 1000
// characters. They are never sent to the user; `!ho show N`, the console
// and the export show them. Deleting a session or clearing the
// installation removes them.

// Refusal reasons of notes (error.<reason> in the catalogue).
const (
	reasonNoteTooLong = "note_too_long"
	reasonNoteEmpty   = "note_empty"
	reasonNotesFull   = "notes_full"
)

// validNoteID: a note id is 12 to 32 lowercase hex digits.
func validNoteID(id string) bool {
	if len(id) < 12 || len(id) > 32 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// NoteList is the result of the notes operations: a chat's notes, oldest
// first.
type NoteList struct {
	Notes []model.Note `json:"notes"`
}

// parseNotesRequest validates GET, POST and DELETE /notes: a sid, a text
// for POST, an id for DELETE.
func parseNotesRequest(p params, req *PageRequest) error {
	var err error
	if req.SID, err = p.sid(); err != nil {
		return err
	}
	switch req.Op {
	case opNoteAdd:
		t, _, err := p.str("text")
		if err != nil {
			return err
		}
		req.Text, err = noteText(t)
		return err
	case opNoteDel:
		id, _, err := p.str("id")
		if err != nil {
			return err
		}
		if !validNoteID(id) {
			return wire.Errorf(wire.ErrBadRequest, "id is missing or malformed")
		}
		req.NoteID = id
	}
	return nil
}

// noteText validates a note's text.
func noteText(s string) (string, error) {
	return checkText(s, model.MaxNoteRunes, reasonNoteEmpty, reasonNoteTooLong, "a note")
}

// notesOp runs GET, POST and DELETE /notes on a session of the scope
// (an unknown sid is 404, as everywhere in the console).
func (o *ops) notesOp(ctx context.Context, c pageCall, req PageRequest) (NoteList, error) {
	if _, err := o.mustRecord(ctx, c.Scope, req.SID); err != nil {
		return NoteList{}, err
	}
	var n model.Notes
	var err error
	switch req.Op {
	case opNotesList:
		n, err = o.st.Notes(ctx, c.Scope, req.SID)
	case opNoteAdd:
		id := req.NoteID
		if id == "" {
			id = model.NewGen()
		}
		n, err = o.addNote(ctx, c, req.SID, id, req.Text)
	case opNoteDel:
		n, err = o.st.UpdateNotes(ctx, c.Scope, req.SID, func(ns *model.Notes) error {
			i := slices.IndexFunc(ns.Notes, func(x model.Note) bool { return x.ID == req.NoteID })
			if i < 0 {
				return wire.Errorf(wire.ErrNotFound, "no such note")
			}
			ns.Notes = slices.Delete(ns.Notes, i, i+1)
			return nil
		})
	}
	if err != nil {
		return NoteList{}, err
	}
	if n.Notes == nil {
		n.Notes = []model.Note{}
	}
	return NoteList{Notes: n.Notes}, nil
}

// addNote appends a note with id; a note of that id already there (a
// retried command) is not added twice.
func (o *ops) addNote(ctx context.Context, c pageCall, sid, id, text string) (model.Notes, error) {
	now := o.now.ms()
	return o.st.UpdateNotes(ctx, c.Scope, sid, func(ns *model.Notes) error {
		if slices.ContainsFunc(ns.Notes, func(x model.Note) bool { return x.ID == id }) {
			return bus.ErrNoChange
		}
		if len(ns.Notes) >= model.MaxNotes {
			return wire.WithReason(wire.ErrConflict, reasonNotesFull, "the chat has the most notes it may keep")
		}
		ns.Notes = append(ns.Notes, model.Note{ID: id, At: now, Operator: c.Operator, Text: text})
		return nil
	})
}

// noteCommand serves `!ho note N <text>`; the note's id derives from the
// invocation, so a redelivered command adds it once.
func (o *ops) noteCommand(ctx context.Context, c pageCall, inv *bus.Invocation, sid string, args map[string]string, say func(string, map[string]string) (any, error)) (any, error) {
	cmd := inv.Command
	t := restAfter(cmd.FullText, cmd.Params[0], cmd.Params[1])
	if t == "" {
		return say("cmd.usage.note", nil)
	}
	t, err := noteText(t)
	if err != nil {
		return o.sayError(c.Settings, err)
	}
	sum := sha256.Sum256([]byte("note|" + inv.ID))
	if _, err := o.operate(ctx, c, PageRequest{Op: opNoteAdd, SID: sid, Text: t, NoteID: hex.EncodeToString(sum[:12])}); err != nil {
		return o.sayError(c.Settings, err)
	}
	return say("cmd.note.added", args)
}

// showNotes is how many of a chat's newest notes `!ho show` lists, and
// showNoteRunes how much of each.
const (
	showNotes     = 10
	showNoteRunes = 300
)

// showCommand serves `!ho show N`: the chat, its state, last message,
// rating and newest notes.
func (o *ops) showCommand(ctx context.Context, c pageCall, sid string, args map[string]string) (any, error) {
	rec, err := o.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return o.sayError(c.Settings, err)
	}
	notes, err := o.st.Notes(ctx, c.Scope, sid)
	if err != nil {
		return o.sayError(c.Settings, err)
	}
	lang, now := c.Settings.Language, o.now.ms()
	name := rec.ChatName()
	t := func(key string, a map[string]string) string { return text(o.catalog, c.Settings, key, a) }
	lines := []string{t("cmd.show.head", map[string]string{"n": args["n"], "chat": settings.CutRunes(name, 64),
		"kind": o.catalog.Text(lang, "chat.type."+rec.Type, nil), "state": o.listState(lang, rec.Takeover, now)})}
	if rec.LastPreview.Text != "" {
		lines = append(lines, t("cmd.show.preview", map[string]string{"preview": capPreview(rec.LastPreview.Text)}))
	}
	if ts := o.relayedTo(ctx, c.Scope, c.Settings, sid); len(ts) > 0 {
		lines = append(lines, t("cmd.show.relay", map[string]string{"where": relayPlaces(o.catalog, lang, ts)}))
	}
	if s := rec.Satisfaction; s != nil {
		switch {
		case s.Score > 0:
			lines = append(lines, t("cmd.show.rating", map[string]string{"score": string(rune('0' + s.Score))}))
		case s.Waiting(now):
			lines = append(lines, t("cmd.show.rating_waiting", nil))
		}
	}
	if len(notes.Notes) == 0 {
		lines = append(lines, t("cmd.show.no_notes", nil))
	} else {
		lines = append(lines, t("cmd.show.notes", nil))
		for _, n := range notes.Notes[max(len(notes.Notes)-showNotes, 0):] {
			lines = append(lines, t("cmd.show.note", map[string]string{"when": noteTime(n.At, now),
				"operator": n.Operator, "text": settings.CutRunes(n.Text, showNoteRunes)}))
		}
	}
	return wire.CommandReply{Returns: []wire.Return{{Text: strings.Join(lines, "\n")}}}, nil
}

// noteTime is when a note was written, in UTC: the time of day for
// today's, the date and time before.
func noteTime(at, now int64) string {
	t, n := time.UnixMilli(at).UTC(), time.UnixMilli(now).UTC()
	if t.YearDay() == n.YearDay() && t.Year() == n.Year() {
		return t.Format("15:04")
	}
	return t.Format("01-02 15:04")
}
