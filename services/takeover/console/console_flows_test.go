package console_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestConsoleLiveFeedReconnects(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	he := w.h.gate.Hold("GET", "/events", "")
	w.h.gate.DropStreams()
	b.until("the reconnecting banner", `!document.getElementById('liveBanner').hidden`)
	he.Wait(t)
	w.h.say(w.bind, w.cfg, "person", "1001", "1001", "name-A", "said while the feed was down")
	he.Let()
	b.until("the banner gone", `document.getElementById('liveBanner').hidden`)
	b.until("the missed message after the resync", `Array.from(document.querySelectorAll('[data-testid=message]')).some((m) => m.textContent.includes('said while the feed was down'))`)
	// and the feed works again
	w.h.say(w.bind, w.cfg, "person", "1001", "1001", "name-A", "after the reconnect")
	b.until("a live message after the reconnect", `Array.from(document.querySelectorAll('[data-testid=message]')).some((m) => m.textContent.includes('after the reconnect'))`)
}

func TestConsolePagedHistory(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	for i := 1; i <= 69; i++ {
		w.h.say(w.bind, w.cfg, "person", "1001", "1001", "name-A", fmt.Sprintf("message %02d", i))
	}
	b.show(w.sid["A"])
	if n := b.count(`[data-testid=message]`); n != 50 {
		t.Fatalf("first page shows %d entries, want 50", n)
	}
	if b.text(`#histNote`) != "" {
		t.Fatal("the first page claims to be the start of history")
	}
	b.eval(`(() => { const m = document.getElementById('messages'); m.scrollTop = 0; m.dispatchEvent(new Event('scroll')); return true; })()`, nil)
	b.until("the older page", `document.querySelectorAll('[data-testid=message]').length === 70`)
	b.until("the start of history", `document.getElementById('histNote').textContent !== ''`)
	var first string
	b.eval(`document.querySelector('[data-testid=message]').textContent`, &first)
	if want := "hello from A"; !contains(first, want) {
		t.Fatalf("oldest entry %q, want %q", first, want)
	}
}

func contains(s, sub string) bool { return len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0) }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestConsoleTabsSearchAndCards(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	w.h.groupNames = map[string]string{"g-5": "Trail crew"}
	w.h.say(w.bind, w.cfg, "group", "g-5", "u-1", "Ben", "first")
	w.h.say(w.bind, w.cfg, "group", "g-5", "u-2", "Chloe", "second")
	g := sidOf("group", "g-5")
	b.until("the group listed", `document.querySelector('`+item(g)+`')`)
	b.run(chromedpClick(`.tab[data-tab=group]`))
	if n := b.count(`[data-testid=session-item]`); n != 1 {
		t.Fatalf("group tab lists %d", n)
	}
	b.run(chromedpClick(`.tab[data-tab=person]`))
	if n := b.count(`[data-testid=session-item]`); n != 4 {
		t.Fatalf("private tab lists %d", n)
	}
	b.run(chromedpClick(`.tab[data-tab=all]`))
	b.typeInto(`#searchInput`, "name-b")
	if n := b.count(`[data-testid=session-item]`); n != 1 || b.count(item(w.sid["B"])) != 1 {
		t.Fatalf("search lists %d", n)
	}
	b.setInput(`#searchInput`, "test bot") // the bot name matches every session
	if n := b.count(`[data-testid=session-item]`); n != 5 {
		t.Fatalf("bot-name search lists %d", n)
	}
	b.setInput(`#searchInput`, "")
	b.show(g)
	b.run(clickID("chatTitle"))
	b.until("the group card", `!document.getElementById('cardOverlay').hidden && document.getElementById('card').textContent.includes('Trail crew')`)
	if txt := b.text(`#card`); !contains(txt, "g-5") || !contains(txt, "Test Bot") || !contains(txt, "2") {
		t.Fatalf("group card %q", txt)
	}
	b.run(chromedpClick(`#card .card-actions button`))
	b.run(clickID("infoBtn"))
	b.until("members listed", `document.querySelectorAll('.members li').length === 2`)
	b.run(chromedpClick(`.members li`))
	b.until("a member card", `!document.getElementById('cardOverlay').hidden && document.getElementById('card').textContent.includes('Chloe')`)
	if txt := b.text(`#card`); !contains(txt, "u-2") || !contains(txt, "Trail crew") {
		t.Fatalf("member card %q", txt)
	}
}

func TestConsoleDeleteExportClear(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	b.run(clickID("exportBtn"))
	b.until("the export fetched", `TakeoverConsole.snapshot().settled['GET /export'] === 1`)
	if b.count(`[data-testid=toast][data-kind=error]`) != 0 {
		t.Fatal("export failed")
	}
	b.run(clickID("deleteBtn"))
	b.until("the confirm dialog", `!document.getElementById('confirmOverlay').hidden`)
	if !contains(b.text(`#confirmMsg`), "name-A") {
		t.Fatalf("confirm text %q", b.text(`#confirmMsg`))
	}
	b.run(clickID("confirmOk"))
	b.until("A gone", `!document.querySelector('`+item(w.sid["A"])+`') && !document.getElementById('chatEmpty').hidden`)
	tok := w.h.token(w.sc, "alice", time.Hour)
	if status, _ := w.h.do(tok, "GET", "/messages", map[string]any{"sid": w.sid["A"]}); status != http.StatusNotFound {
		t.Fatalf("deleted session reads %d", status)
	}
	// cancel keeps everything
	b.run(clickID("clearBtn"))
	b.until("the confirm dialog", `!document.getElementById('confirmOverlay').hidden`)
	b.run(clickID("confirmCancel"))
	if n := b.count(`[data-testid=session-item]`); n != 3 {
		t.Fatalf("cancelled clear left %d", n)
	}
	b.run(clickID("clearBtn"))
	b.until("the confirm dialog", `!document.getElementById('confirmOverlay').hidden`)
	b.run(clickID("confirmOk"))
	b.until("the list empty", `document.querySelectorAll('[data-testid=session-item]').length === 0 && !document.getElementById('listEmpty').hidden`)
	if _, body := w.h.do(tok, "GET", "/sessions", nil); !contains(string(body), `"sessions":[]`) {
		t.Fatalf("after clear: %s", body)
	}
}
