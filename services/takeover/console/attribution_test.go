package console_test

// The twelve attribution scenarios of spec §8.2 (C1-C12) in a real browser.

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"
)

const cfgReply = `{"takeover_timeout":600,"trigger_words":["human"],"takeover_on_reply":true}`

var pngDataURL = "data:image/png;base64," + base64.StdEncoding.EncodeToString(tinyPNG())

// interleave opens A and then B, answers B's load and then A's (C1).
func interleave(t *testing.T, w *world) {
	t.Helper()
	b := w.b
	ha := w.h.gate.Hold("GET", "/messages", w.sid["A"])
	hb := w.h.gate.Hold("GET", "/messages", w.sid["B"])
	b.pick(w.sid["A"])
	ha.Wait(t)
	b.pick(w.sid["B"])
	hb.Wait(t)
	hb.Release(t)
	b.until("B displayed", `TakeoverConsole.snapshot().displayed === '`+w.sid["B"]+`'`)
	n := b.settled("GET /messages")
	ha.Release(t)
	b.until("A's late answer handled", `TakeoverConsole.snapshot().settled['GET /messages'] > `+strconv.Itoa(n))
	s := b.snap()
	if s.Current != w.sid["B"] || s.Displayed != w.sid["B"] {
		t.Fatalf("after a late answer for A: current %.8s displayed %.8s, want B", s.Current, s.Displayed)
	}
	if got := b.text(`[data-testid=chat-title]`); got != "name-B" {
		t.Fatalf("title %q, want name-B", got)
	}
}

func TestConsoleC1(t *testing.T) {
	w := newWorld(t, cfgReply)
	interleave(t, w)
}

func TestConsoleC2(t *testing.T) {
	w := newWorld(t, cfgReply)
	interleave(t, w)
	w.b.typeText("reply for B")
	w.b.pressEnter()
	sends := w.h.host.WaitSends(t, 1, 15*time.Second)
	m := sends[len(sends)-1].SendMessage()
	if m.TargetID != "1002" || len(m.MessageChain) != 1 || m.MessageChain[0].Text != "reply for B" {
		t.Fatalf("reply went to %s with %+v, want B (1002)", m.TargetID, m.MessageChain)
	}
}

func TestConsoleC3(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	hb := w.h.gate.Hold("GET", "/messages", w.sid["B"])
	b.pick(w.sid["B"])
	hb.Wait(t)
	s := b.snap()
	if s.Current != w.sid["B"] || s.Displayed != "" || !s.Loading {
		t.Fatalf("while B loads: %+v", s)
	}
	if b.text(`[data-testid=chat-title]`) != "" || b.count(`[data-testid=messages] > *`) != 0 || b.count(`[data-testid=info-panel] > *`) != 0 {
		t.Fatal("A's title, history or info stayed on screen while B loads")
	}
	if b.attr(`[data-testid=send-btn]`, "disabled") != "" {
		t.Fatal("Send is enabled while B loads")
	}
	b.typeText("too early")
	b.pressEnter()
	b.until("the not-ready toast", `document.querySelector('[data-testid=toast]')`)
	if n := w.h.gate.Seen("POST", "/reply"); n != 0 {
		t.Fatalf("%d replies posted while loading", n)
	}
	hb.Release(t)
	b.until("B displayed", `TakeoverConsole.snapshot().displayed === '`+w.sid["B"]+`'`)
	b.until("Send enabled", `!document.querySelector('[data-testid=send-btn]').disabled`)
}

func TestConsoleC4(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	hs := w.h.gate.Hold("GET", "/takeover_status", w.sid["A"])
	b.eval(`(TakeoverConsole.resync(), true)`, nil)
	hs.Wait(t)
	b.show(w.sid["B"])
	n := b.settled("GET /takeover_status")
	hs.ReleaseWith(t, &fake{200, map[string]any{"active": true, "remaining": 300, "expires_at": time.Now().Add(5 * time.Minute).UnixMilli(), "timeout": 600}})
	b.until("A's status handled", `TakeoverConsole.snapshot().settled['GET /takeover_status'] > `+strconv.Itoa(n))
	// a real takeover of A publishes a live takeover event for A
	w.h.page(w.bind, w.cfg, "POST", "/takeover", map[string]any{"sid": w.sid["A"]}, nil)
	b.until("A marked taken over in the list", `document.querySelector('`+item(w.sid["A"])+`').dataset.active === 'true'`)
	b.takeoverOff("B after A's status and live event")
}

func TestConsoleC5(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	ht := w.h.gate.Hold("POST", "/takeover", w.sid["A"])
	b.run(clickTakeover())
	ht.Wait(t)
	b.show(w.sid["B"])
	n := b.settled("POST /takeover")
	ht.Release(t)
	b.until("A's takeover answer handled", `TakeoverConsole.snapshot().settled['POST /takeover'] > `+strconv.Itoa(n))
	b.takeoverOff("B after A's takeover answer")
	if s := b.snap(); s.Displayed != w.sid["B"] {
		t.Fatalf("displayed %.8s, want B", s.Displayed)
	}
}

func TestConsoleC6(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	w.h.page(w.bind, w.cfg, "POST", "/takeover", map[string]any{"sid": w.sid["Z"]}, nil)
	b.show(w.sid["Z"])
	b.until("Z taken over", `document.querySelector('[data-testid=takeover-btn]').dataset.state === 'on' && !document.querySelector('[data-testid=countdown]').hidden`)
	hr := w.h.gate.Hold("POST", "/reply", w.sid["Z"])
	b.typeText("closing words")
	b.send()
	hr.Wait(t)
	n := b.settled("POST /reply")
	hr.ReleaseWith(t, &fake{200, map[string]any{"delivered": true, "saved": true, "takeover": map[string]any{"active": false, "remaining": 0, "timeout": 600}}})
	b.until("Z's reply handled", `TakeoverConsole.snapshot().settled['POST /reply'] > `+strconv.Itoa(n))
	b.takeoverOff("Z after its own reply said inactive")
	// the refresh: the real state is released too, and Z stays displayed and off
	w.h.page(w.bind, w.cfg, "DELETE", "/takeover", map[string]any{"sid": w.sid["Z"]}, nil)
	b.eval(`TakeoverConsole.resync().then(() => true)`, nil)
	if s := b.snap(); s.Displayed != w.sid["Z"] {
		t.Fatalf("displayed %.8s after the refresh, want Z", s.Displayed)
	}
	b.takeoverOff("Z after the refresh")
}

func TestConsoleC7(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	b.eval(`(() => { window.__reads = []; TakeoverConsole.hooks.readFile = (f) => new Promise((r) => window.__reads.push(() => r('`+pngDataURL+`'))); return true; })()`, nil)
	b.upload(`#imageInput`, "a.png", tinyPNG())
	b.until("the read started", `window.__reads.length === 1`)
	b.show(w.sid["B"])
	b.eval(`(window.__reads[0](), new Promise((r) => setTimeout(() => r(true), 0)))`, nil)
	if s := b.snap(); s.Staged.Image != "" || s.Staged.File != "" {
		t.Fatalf("B has staged %+v after A's late read", s.Staged)
	}
	if n := b.count(`[data-testid=preview-strip] > *`); n != 0 {
		t.Fatalf("B's preview strip has %d children", n)
	}
	b.typeText("hello from B")
	b.send()
	m := w.h.host.WaitSends(t, 1, 15*time.Second)[0].SendMessage()
	if m.TargetID != "1002" || len(m.MessageChain) != 1 || m.MessageChain[0].Type != "Plain" {
		t.Fatalf("B's reply: %s %+v", m.TargetID, m.MessageChain)
	}
}

func TestConsoleC8(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	b.upload(`#fileInput`, "A-doc.txt", []byte("A-DOC"))
	b.until("A's file staged", `TakeoverConsole.snapshot().staged.file === 'A-doc.txt'`)
	b.show(w.sid["B"])
	if s := b.snap(); s.Staged.File != "" || b.count(`[data-testid=preview-strip] > *`) != 0 {
		t.Fatalf("B shows A's file: %+v", s.Staged)
	}
	b.typeText("text only")
	b.send()
	m := w.h.host.WaitSends(t, 1, 15*time.Second)[0].SendMessage()
	if m.TargetID != "1002" || len(m.MessageChain) != 1 {
		t.Fatalf("B's reply carried %+v", m.MessageChain)
	}
	ha := w.h.gate.Hold("GET", "/messages", w.sid["A"])
	b.pick(w.sid["A"])
	ha.Wait(t)
	if s := b.snap(); s.Staged.File != "A-doc.txt" || s.Owners.File != w.sid["A"] || b.attr(`[data-testid=preview-strip] > [data-kind=file]`, "data-name") != "A-doc.txt" {
		t.Fatalf("A's file not restored while A loads: %+v", s)
	}
	ha.Release(t)
	b.until("A displayed", `TakeoverConsole.snapshot().displayed === '`+w.sid["A"]+`'`)
	b.send()
	sends := w.h.host.WaitSends(t, 2, 15*time.Second)
	m = sends[1].SendMessage()
	if m.TargetID != "1001" || len(m.MessageChain) != 1 || m.MessageChain[0].Type != "File" || m.MessageChain[0].Name != "A-doc.txt" ||
		!strings.HasSuffix(m.MessageChain[0].Base64, base64.StdEncoding.EncodeToString([]byte("A-DOC"))) {
		t.Fatalf("A's file send: %s %+v", m.TargetID, m.MessageChain)
	}
}

func TestConsoleC9(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	b.typeText("private draft for A")
	b.show(w.sid["B"])
	if s := b.snap(); s.Text != "" {
		t.Fatalf("B's box holds %q", s.Text)
	}
	b.pressEnter()
	b.send()
	if n := w.h.gate.Seen("POST", "/reply"); n != 0 {
		t.Fatalf("an empty B posted %d replies", n)
	}
	b.show(w.sid["A"])
	if s := b.snap(); s.Text != "private draft for A" {
		t.Fatalf("A's draft came back as %q", s.Text)
	}
}

func TestConsoleC10(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	hr := w.h.gate.Hold("POST", "/reply", w.sid["A"])
	b.typeText("answer for A")
	b.send()
	hr.Wait(t)
	b.show(w.sid["B"])
	b.typeText("B draft typed while A replied")
	b.upload(`#fileInput`, "B-doc.txt", []byte("B-DOC"))
	b.until("B's file staged", `TakeoverConsole.snapshot().staged.file === 'B-doc.txt'`)
	n := b.settled("POST /reply")
	hr.Release(t) // the real answer: A is taken over by the reply
	b.until("A's reply handled", `TakeoverConsole.snapshot().settled['POST /reply'] > `+strconv.Itoa(n))
	b.until("A taken over in the list", `document.querySelector('`+item(w.sid["A"])+`').dataset.active === 'true'`)
	b.takeoverOff("B after A's reply")
	s := b.snap()
	if s.Text != "B draft typed while A replied" || s.Staged.File != "B-doc.txt" {
		t.Fatalf("B's draft changed: %q %+v", s.Text, s.Staged)
	}
	if d := s.Drafts[w.sid["A"]]; d.Text != "" {
		t.Fatalf("A's sent text stayed in its draft: %q", d.Text)
	}
}

func TestConsoleC11(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["B"])
	b.eval(`(TakeoverConsole.stage('`+w.sid["A"]+`', 'image', 'a.png', '`+pngDataURL+`'), TakeoverConsole.stage('`+w.sid["A"]+`', 'file', 'a.txt', 'data:text/plain;base64,QQ=='), true)`, nil)
	b.typeText("text for B")
	b.send()
	m := w.h.host.WaitSends(t, 1, 15*time.Second)[0].SendMessage()
	if m.TargetID != "1002" || len(m.MessageChain) != 1 || m.MessageChain[0].Text != "text for B" {
		t.Fatalf("B's reply carried %+v", m.MessageChain)
	}
}

func TestConsoleC12(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["C"])
	hr := w.h.gate.Hold("POST", "/reply", w.sid["C"])
	b.typeText("first message")
	b.send()
	hr.Wait(t)
	b.setText("second message typed while sending")
	b.upload(`#fileInput`, "late.txt", []byte("late"))
	b.until("late.txt staged", `TakeoverConsole.snapshot().staged.file === 'late.txt'`)
	n := b.settled("POST /reply")
	hr.Release(t)
	b.until("the reply handled", `TakeoverConsole.snapshot().settled['POST /reply'] > `+strconv.Itoa(n))
	s := b.snap()
	if s.Text != "second message typed while sending" || s.Staged.File != "late.txt" {
		t.Fatalf("after the send: %q %+v", s.Text, s.Staged)
	}
	b.eval(`TakeoverConsole.resync().then(() => true)`, nil)
	if s := b.snap(); s.Displayed != w.sid["C"] || s.Text != "second message typed while sending" {
		t.Fatalf("after the refresh: %+v", s)
	}
	m := w.h.host.WaitSends(t, 1, 15*time.Second)[0].SendMessage()
	if len(m.MessageChain) != 1 || m.MessageChain[0].Text != "first message" {
		t.Fatalf("sent %+v", m.MessageChain)
	}
}
