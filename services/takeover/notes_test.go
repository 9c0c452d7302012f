package takeover_test

import (
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

func notesOf(h *harness, b binding.Binding, cfg, sid string) []model.Note {
	h.t.Helper()
	var l takeover.NoteList
	h.mustPage(b, cfg, "GET", "/notes", map[string]any{"sid": sid}, &l)
	return l.Notes
}

// TestInternalNotes: `!ho note N text` stores a note that only operators
// see: `!ho show N`, GET /notes and the export hold it, no send reaches
// the user and the logs hold no text. Installation B, with the same bot
// and chat, sees none of A's notes; a sid of A is 404 for B. Deleting the
// session removes its notes.
func TestInternalNotes(t *testing.T) {
	var logs bustest.LogBuffer
	h := newLoggedHarness(t, &logs)
	a, b := newBinding("notes-a"), newBinding("notes-b")
	h.attach(a, cannedConfig, true)
	h.attach(b, cannedConfig, true)
	sid := sidOf("bot-a", "person", "62")
	for _, inst := range []binding.Binding{a, b} {
		h.mustEvent(inst, cannedConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "62", "62", plain("help")))
		bustest.Eventually(t, "recorded", func() bool { return h.record(inst, sid) != nil })
		h.command(inst, cannedConfig, 1, opSession, "!ho list")
	}
	alertsSettled(t, h)
	sends := len(h.host.Sends())

	if got := h.command(a, cannedConfig, 1, opSession, "!ho note 1 VIP customer,\nrefund approved by Li"); !strings.Contains(got, "Note saved on chat 1") {
		t.Fatalf("note answered %q", got)
	}
	if got := h.command(a, cannedConfig, 1, opSession, "!ho note 1"); !strings.Contains(got, "Usage") {
		t.Errorf("empty note answered %q", got)
	}
	h.mustPage(a, cannedConfig, "POST", "/notes", map[string]any{"sid": sid, "text": "second note"}, nil)
	notes := notesOf(h, a, cannedConfig, sid)
	if len(notes) != 2 || notes[0].Text != "VIP customer,\nrefund approved by Li" || notes[0].Operator != "77" || notes[1].Text != "second note" {
		t.Fatalf("A's notes %+v", notes)
	}
	show := h.command(a, cannedConfig, 1, opSession, "!ho show 1")
	if !strings.Contains(show, "Chat 1: Nick") || !strings.Contains(show, "77: VIP customer") || !strings.Contains(show, "second note") {
		t.Errorf("show answered %q", show)
	}
	var exp takeover.Export
	h.mustPage(a, cannedConfig, "GET", "/export", map[string]any{"sid": sid}, &exp)
	if len(exp.Notes) != 2 || exp.Notes[1].Text != "second note" {
		t.Errorf("export notes %+v", exp.Notes)
	}
	if got := len(h.host.Sends()); got != sends {
		t.Errorf("notes sent %d messages", got-sends)
	}
	if strings.Contains(logs.String(), "VIP customer") || strings.Contains(logs.String(), "second note") {
		t.Error("a note's text is in the logs")
	}

	// isolation: B's chat with the same key has no notes
	if got := notesOf(h, b, cannedConfig, sid); len(got) != 0 {
		t.Fatalf("B sees notes %+v", got)
	}
	if got := h.command(b, cannedConfig, 1, opSession, "!ho show 1"); strings.Contains(got, "VIP") || !strings.Contains(got, "No notes") {
		t.Errorf("B's show answered %q", got)
	}
	other := sidOf("bot-z", "person", "1")
	if err := h.page(b, cannedConfig, "GET", "/notes", map[string]any{"sid": other}, nil); !isCode(err, 404, "") {
		t.Errorf("notes of an unknown sid: %v", err)
	}

	// refusals change nothing
	if err := h.page(a, cannedConfig, "POST", "/notes", map[string]any{"sid": sid, "text": strings.Repeat("n", model.MaxNoteRunes+1)}, nil); !isCode(err, 413, "note_too_long") {
		t.Errorf("long note: %v", err)
	}
	if err := h.page(a, cannedConfig, "POST", "/notes", map[string]any{"sid": sid, "text": " "}, nil); !isCode(err, 400, "note_empty") {
		t.Errorf("empty note: %v", err)
	}
	if err := h.page(a, cannedConfig, "DELETE", "/notes", map[string]any{"sid": sid, "id": "0123456789abcdef"}, nil); !isCode(err, 404, "") {
		t.Errorf("delete unknown note: %v", err)
	}
	for range model.MaxNotes - 2 {
		h.mustPage(a, cannedConfig, "POST", "/notes", map[string]any{"sid": sid, "text": "n"}, nil)
	}
	if err := h.page(a, cannedConfig, "POST", "/notes", map[string]any{"sid": sid, "text": "one more"}, nil); !isCode(err, 409, "notes_full") {
		t.Errorf("51st note: %v", err)
	}
	if got := h.command(a, cannedConfig, 1, opSession, "!ho note 1 one more"); !strings.Contains(got, "50 notes") {
		t.Errorf("51st note by command answered %q", got)
	}
	notes = notesOf(h, a, cannedConfig, sid)
	if len(notes) != model.MaxNotes {
		t.Fatalf("%d notes", len(notes))
	}
	h.mustPage(a, cannedConfig, "DELETE", "/notes", map[string]any{"sid": sid, "id": notes[0].ID}, nil)
	if got := notesOf(h, a, cannedConfig, sid); len(got) != model.MaxNotes-1 || got[0].Text != "second note" {
		t.Errorf("after delete: %d notes, first %+v", len(got), got[0])
	}

	// deleting the session removes its notes; B's chat is untouched
	h.mustPage(a, cannedConfig, "DELETE", "/session", map[string]any{"sid": sid}, nil)
	for _, k := range h.keys("langbot_takeover") {
		if strings.Contains(k, ".notes.") {
			t.Errorf("key %s left after the delete", k)
		}
	}
	if h.record(b, sid) == nil {
		t.Error("B's session went with A's")
	}
}

// TestNotesClearedWithInstallation: DELETE /clear removes every note of
// the installation and none of another's.
func TestNotesClearedWithInstallation(t *testing.T) {
	h := newHarness(t)
	a, b := newBinding("notes-clear-a"), newBinding("notes-clear-b")
	h.attach(a, cannedConfig, true)
	h.attach(b, cannedConfig, true)
	sid := sidOf("bot-a", "person", "63")
	for _, inst := range []binding.Binding{a, b} {
		h.mustEvent(inst, cannedConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "63", "63", plain("hello")))
		bustest.Eventually(t, "recorded", func() bool { return h.record(inst, sid) != nil })
		h.mustPage(inst, cannedConfig, "POST", "/notes", map[string]any{"sid": sid, "text": "kept?"}, nil)
	}
	h.mustPage(a, cannedConfig, "DELETE", "/clear", map[string]any{"confirm": true}, nil)
	scA, _ := a.Scope()
	scB, _ := b.Scope()
	var left, other int
	for _, k := range h.keys("langbot_takeover") {
		if strings.HasPrefix(k, scA.String()+".notes.") {
			left++
		}
		if strings.HasPrefix(k, scB.String()+".notes.") {
			other++
		}
	}
	if left != 0 || other != 1 {
		t.Errorf("after A's clear: A %d note keys, B %d", left, other)
	}
	if got := notesOf(h, b, cannedConfig, sid); len(got) != 1 {
		t.Errorf("B's notes %+v", got)
	}
}
