package console_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestCannedAndNotesOverHTTP: the HTTP console serves the canned replies
// and the notes of its token's installation only: B's token sees none of
// A's, and A's sid is 404 for B; refusals carry their reason.
func TestCannedAndNotesOverHTTP(t *testing.T) {
	h := newHarness(t)
	a, scA := h.install("http-a", cfgReply)
	_, scB := h.install("http-b", cfgReply)
	h.say(a, cfgReply, "person", "2001", "2001", "Ann", "hello")
	sid := sidOf("person", "2001")
	tokA, tokB := h.token(scA, "alice", time.Hour), h.token(scB, "bob", time.Hour)

	if st, body := h.do(tokA, http.MethodPost, "/canned", map[string]any{"name": "hi", "text": "Hello!"}); st != 200 || !strings.Contains(string(body), `"name":"hi"`) {
		t.Fatalf("POST /canned: %d %s", st, body)
	}
	if st, body := h.do(tokA, http.MethodPost, "/canned", map[string]any{"name": "a b", "text": "x"}); st != 400 || !strings.Contains(string(body), "canned_bad_name") {
		t.Errorf("bad name: %d %s", st, body)
	}
	if st, body := h.do(tokB, http.MethodGet, "/canned", nil); st != 200 || strings.TrimSpace(string(body)) != `{"replies":[]}` {
		t.Errorf("B's canned: %d %s", st, body)
	}
	if st, body := h.do(tokA, http.MethodPost, "/notes", map[string]any{"sid": sid, "text": "call back at 5"}); st != 200 || !strings.Contains(string(body), "call back at 5") {
		t.Fatalf("POST /notes: %d %s", st, body)
	}
	var l struct {
		Notes []struct{ ID, Text, Operator string }
	}
	st, body := h.do(tokA, http.MethodGet, "/notes", map[string]any{"sid": sid})
	if json.Unmarshal(body, &l) != nil || st != 200 || len(l.Notes) != 1 || l.Notes[0].Operator != "alice" {
		t.Fatalf("GET /notes: %d %s", st, body)
	}
	if st, _ := h.do(tokB, http.MethodGet, "/notes", map[string]any{"sid": sid}); st != 404 {
		t.Errorf("B reads A's notes: %d", st)
	}
	if st, _ := h.do(tokB, http.MethodPost, "/notes", map[string]any{"sid": sid, "text": "x"}); st != 404 {
		t.Errorf("B writes A's notes: %d", st)
	}
	if st, _ := h.do(tokA, http.MethodDelete, "/notes", map[string]any{"sid": sid, "id": l.Notes[0].ID}); st != 200 {
		t.Errorf("DELETE /notes: %d", st)
	}
	if st, body := h.do(tokA, http.MethodGet, "/notes", map[string]any{"sid": sid}); st != 200 || !strings.Contains(string(body), `"notes":[]`) {
		t.Errorf("after delete: %d %s", st, body)
	}
}

// TestConsoleCannedAndNotes: in the page, an operator saves a canned reply,
// picks it into the composer and sends it; adds a note in the info panel,
// which shows it after a reload, and deletes it. The user receives the
// canned text and never the note.
func TestConsoleCannedAndNotes(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])

	b.run(chromedpClick(`[data-testid=canned-btn]`))
	b.until("the canned dialog", `document.querySelector('[data-testid=canned-dialog]') && !document.getElementById('cardOverlay').hidden`)
	b.setInput(`[data-testid=canned-name]`, "thanks")
	b.setInput(`[data-testid=canned-text]`, "Thank you for waiting!")
	b.run(chromedpClick(`[data-testid=canned-save]`))
	b.until("the saved reply listed", `document.querySelector('[data-testid=canned-item][data-name=thanks]')`)
	b.run(chromedpClick(`[data-testid=canned-item][data-name=thanks]`))
	b.until("the dialog closed", `document.getElementById('cardOverlay').hidden`)
	if got := b.snap().Text; got != "Thank you for waiting!" {
		t.Fatalf("composer holds %q", got)
	}
	sends := w.sends()
	b.send()
	b.until("the reply sent", `TakeoverConsole.snapshot().settled['POST /reply'] >= 1`)
	if got := w.h.host.Sends(); len(got) != sends+1 || got[len(got)-1].SendMessage().MessageChain[0].Text != "Thank you for waiting!" {
		t.Fatalf("host sends %d, want %d with the canned text", len(got), sends+1)
	}

	b.run(clickID("infoBtn"))
	b.until("the notes box", `document.querySelector('[data-testid=note-list]') && TakeoverConsole.snapshot().settled['GET /notes'] >= 1`)
	b.setInput(`[data-testid=note-input]`, "Prefers email")
	b.run(chromedpClick(`[data-testid=note-add]`))
	b.until("the note listed", `Array.from(document.querySelectorAll('[data-testid=note]')).some((n) => n.textContent.includes('Prefers email') && n.textContent.includes('alice'))`)
	if b.snap().Text != "" || w.sends() != sends+1 {
		t.Fatal("a note touched the composer or was sent")
	}
	// another conversation has no notes; back in A after a reload it is there
	b.show(w.sid["B"])
	b.until("B's notes loaded", `TakeoverConsole.snapshot().settled['GET /notes'] >= 2`)
	if n := b.count(`[data-testid=note]`); n != 0 {
		t.Fatalf("B shows %d notes", n)
	}
	b.open(w.h.token(w.sc, "alice", time.Hour))
	b.show(w.sid["A"])
	b.run(clickID("infoBtn"))
	b.until("the note after a reload", `Array.from(document.querySelectorAll('[data-testid=note]')).some((n) => n.textContent.includes('Prefers email'))`)
	b.run(chromedpClick(`[data-testid=note-del]`))
	b.until("the note deleted", `document.querySelectorAll('[data-testid=note]').length === 0`)
}
