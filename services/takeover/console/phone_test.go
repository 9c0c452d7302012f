package console_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsolePhoneWidth: at 360 px the list and the conversation are two
// views with a back button, nothing overflows horizontally, and the empty
// reply box does not scroll its hint. With
// TAKEOVER_SCREENSHOTS=1 (or -screenshots) the two views go to docs/images.
func TestConsolePhoneWidth(t *testing.T) {
	h := newHarness(t)
	config := `{"takeover_timeout":900,"trigger_words":["human"]}`
	bnd, sc := h.install("phone", config)
	h.say(bnd, config, "person", "1001", "1001", "Alice Chen", "Hi, my order #5120 still has not arrived.")
	h.ai(bnd, config, "person", "1001", "Sorry about that! The tracking shows it left the warehouse nine days ago.")
	h.say(bnd, config, "person", "1001", "1001", "Alice Chen", "That is too long. Can I talk to a human, please?")
	h.say(bnd, config, "person", "7788", "7788", "Wang Xiaoming", "Where can I change my delivery address?")
	alice := sidOf("person", "1001")
	tok := h.token(sc, "dana", time.Hour)
	dir := t.TempDir()
	if *screenshots || os.Getenv("TAKEOVER_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "..", "..", "docs", "images")
	}
	b := newBrowser(t, h)
	b.run(chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
	b.open(tok)
	b.until("two sessions", `document.querySelectorAll('[data-testid=session-item]').length === 2`)
	fits := func(view string) {
		t.Helper()
		var w int
		b.eval(`document.scrollingElement.scrollWidth`, &w)
		if w > 360 {
			t.Fatalf("%s: the page is %d px wide at 360 px", view, w)
		}
	}
	fits("list")
	b.until("the chat view hidden", `getComputedStyle(document.querySelector('.chat')).display === 'none'`)
	shot(t, b.ctx, filepath.Join(dir, "console-phone-list.png"))
	b.show(alice)
	b.until("the list hidden", `getComputedStyle(document.querySelector('.sidebar')).display === 'none' && document.querySelector('[data-testid=takeover-btn]').getBoundingClientRect().right <= 360`)
	fits("conversation")
	// the empty reply box shows its hint on one line, without a scroll bar
	var scroll bool
	b.eval(`(() => { const ta = document.querySelector('[data-testid=msg-input]'); return ta.value === '' && ta.scrollHeight > ta.clientHeight; })()`, &scroll)
	if scroll {
		t.Fatal("the empty reply box scrolls its hint at 360 px")
	}
	shot(t, b.ctx, filepath.Join(dir, "console-phone-chat.png"))
	b.run(chromedp.Click(chromedp.CSS(`[data-testid=back-btn]`)))
	b.until("back at the list", `getComputedStyle(document.querySelector('.sidebar')).display !== 'none' && document.querySelectorAll('[data-testid=session-item]').length === 2`)
}

// TestConsoleNotifyOptIn: notifications and sound are off by default, the
// permission is asked only on the click that turns them on, and the choice
// toggles back off.
func TestConsoleNotifyOptIn(t *testing.T) {
	h := newHarness(t)
	_, sc := h.install("notify", `{}`)
	tok := h.token(sc, "dana", time.Hour)
	b := newBrowser(t, h)
	b.open(tok)
	b.eval(`(window.__asked = 0, window.Notification && (Notification.requestPermission = () => { window.__asked++; return Promise.resolve('denied'); }), true)`, nil)
	var on bool
	b.eval(`TakeoverConsole.snapshot().notify || document.querySelector('[data-testid=notify-btn]').getAttribute('aria-pressed') === 'true'`, &on)
	var asked int
	b.eval(`window.__asked`, &asked)
	if on || asked != 0 {
		t.Fatalf("before a click: on %v, permission asked %d times", on, asked)
	}
	b.run(chromedp.Click(chromedp.CSS(`[data-testid=notify-btn]`)))
	b.until("notifications on", `TakeoverConsole.snapshot().notify && document.querySelector('[data-testid=notify-btn]').getAttribute('aria-pressed') === 'true'`)
	b.eval(`window.__asked`, &asked)
	if asked != 1 {
		t.Fatalf("the click asked for the permission %d times, want 1", asked)
	}
	b.until("the confirming beep", `TakeoverConsole.snapshot().beeps >= 1`)
	b.run(chromedp.Click(chromedp.CSS(`[data-testid=notify-btn]`)))
	b.until("notifications off", `!TakeoverConsole.snapshot().notify && document.querySelector('[data-testid=notify-btn]').getAttribute('aria-pressed') === 'false'`)
}

func shot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	buf, err := chromedp.Run(cctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}
