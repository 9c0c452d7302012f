package console_test

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/services/takeover/console"
)

// TestCatalogCoversThePage: both languages have the same keys and
// placeholders (Catalog checks it), every key the page uses exists, and
// the HTML holds no literal text.
func TestCatalogCoversThePage(t *testing.T) {
	cat, err := console.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if got := cat.Languages(); !slices.Equal(got, []string{i18n.EnUS, i18n.ZhHans}) {
		t.Fatalf("languages %v", got)
	}
	keys := cat.Keys()
	html, _ := fs.ReadFile(console.Assets(), "web/index.html")
	js, _ := fs.ReadFile(console.Assets(), "web/app.js")
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`data-i18n(?:-title|-placeholder|-aria)?="([^"]+)"`).FindAllStringSubmatch(string(html), -1) {
		used[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`\bt\('([a-zA-Z]+\.[a-zA-Z]+)'`).FindAllStringSubmatch(string(js), -1) {
		used[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`'((?:chat|composer|card|info|toast|error|msg|list)\.[a-zA-Z]+)'`).FindAllStringSubmatch(string(js), -1) {
		used[m[1]] = true
	}
	if len(used) < 60 {
		t.Fatalf("only %d keys found in the page; the scan is broken", len(used))
	}
	for k := range used {
		if !slices.Contains(keys, k) {
			t.Errorf("the page uses %q, which the catalogue lacks", k)
		}
	}
	// the spec's required keys are all present (spec §8.3)
	for _, k := range []string{"app.title", "auth.expired", "live.reconnecting", "list.unhandled", "chat.countdown", "msg.operator",
		"composer.tipWillTakeOver", "confirm.delete", "toast.trigger", "toast.autoReleased", "error.inactive"} {
		if !slices.Contains(keys, k) {
			t.Errorf("catalogue lacks %q", k)
		}
	}
	for _, m := range regexp.MustCompile(`>([^<]*)<`).FindAllStringSubmatch(string(html), -1) {
		if strings.TrimSpace(m[1]) != "" {
			t.Errorf("literal text in index.html: %q", m[1])
		}
	}
	for _, lang := range []string{i18n.EnUS, i18n.ZhHans} {
		for _, k := range keys {
			if cat.Text(lang, k, nil) == "" {
				t.Errorf("%s %s is empty", lang, k)
			}
		}
	}
}

// TestConsoleC19PseudoLocale: with every string replaced by its key
// marker, each visible text, title, placeholder and aria label of the page
// is a marker or chat data.
func TestConsoleC19PseudoLocale(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	w.h.say(w.bind, w.cfg, "group", "g-1", "u-1", "Gina", "group hello")
	b.eval(`(localStorage.setItem('takeover.console.pseudo', '1'), true)`, nil)
	b.open(w.h.token(w.sc, "alice", time.Hour))
	b.until("the group listed", `document.querySelector('`+item(sidOf("group", "g-1"))+`')`)
	b.show(sidOf("group", "g-1"))
	b.run(clickID("infoBtn"))
	var bad []string
	b.eval(`(() => {
		const data = '.s-name,.s-time,.s-preview,.s-bot,.bubble,.time,.who,.info-head h3,.info-rows span:last-child,.chat-title,.avatar,.count,#countdownText,.members li span,.alert-panel li';
		const out = [];
		const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			const text = n.textContent.trim();
			const el = n.parentElement;
			if (!text || !el.checkVisibility() || el.closest(data)) continue;
			if (el.tagName === 'OPTION' || el.tagName === 'SCRIPT') { if (!text.includes('⟦')) out.push(text); continue; }
			if (!text.includes('⟦')) out.push(text);
		}
		for (const el of document.querySelectorAll('[title],[placeholder],[aria-label]')) {
			for (const a of ['title', 'placeholder', 'aria-label']) {
				const v = el.getAttribute(a);
				if (v !== null && v !== '' && !v.includes('⟦') && !el.closest(data)) out.push(a + '=' + v);
			}
		}
		if (!document.title.includes('⟦')) out.push('title=' + document.title);
		return out;
	})()`, &bad)
	if len(bad) > 0 {
		t.Fatalf("texts that are neither key markers nor chat data: %q", bad)
	}
}
