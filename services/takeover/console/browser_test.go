package console_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/testskip"
)

var screenshots = flag.Bool("screenshots", false, "write light and dark screenshots of the console to docs/images")

// chromiumPath finds Debian's chromium.
func chromiumPath() string {
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// browser is one isolated browser context (its own storage and cookies)
// in the package's shared headless Chromium, driven over CDP.
type browser struct {
	loads int
	t     *testing.T
	h     *harness
	ctx   context.Context
}

// shared is the one Chromium process of the package's tests, started on
// first use and stopped by TestMain.
var shared struct {
	once sync.Once
	ctx  context.Context
	stop func()
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if shared.stop != nil {
		shared.stop()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func startChromium(path string) (context.Context, error) {
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "console-chromium-"); shared.err != nil {
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.Flag("headless", true),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.Flag("disable-quic", true),
			// the remote-image test serves its tracker over TLS with a test certificate
			chromedp.Flag("ignore-certificate-errors", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("lang", "en-US"),
			chromedp.UserDataDir(shared.dir),
			chromedp.WindowSize(1360, 820),
		}
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		shared.ctx, shared.stop = ctx, func() { cancel(); acancel() }
		shared.err = chromedp.Do(ctx)
	})
	return shared.ctx, shared.err
}

func newBrowser(t *testing.T, h *harness) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		testskip.Browser().Skip(t, "chromium is not installed: the console's browser tests need Debian's chromium")
	}
	root, err := startChromium(path)
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatalf("open a browser context: %v", err)
	}
	t.Cleanup(cancel)
	return &browser{t: t, h: h, ctx: ctx}
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates js (awaiting a promise) and decodes its JSON value into
// out (unless out is nil).
func (b *browser) eval(js string, out any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("browser: evaluate %.80s: %v", js, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("browser: decode %.80s: %v", js, err)
		}
	}
}

// until polls a JS condition until it holds.
func (b *browser) until(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		b.eval("!!("+js+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			s := b.snap()
			b.t.Fatalf("timed out waiting for %s (%s); page state %+v", what, js, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// open loads the console with a token and waits for the page to settle.
func (b *browser) open(tok string) {
	b.t.Helper()
	// a fresh query forces a load even when only the fragment changes
	b.loads++
	b.run(chromedp.Navigate(fmt.Sprintf("%s/console/?load=%d#token=%s", b.h.http.URL, b.loads, tok)))
	b.until("the page to start", `window.TakeoverConsole && (!document.getElementById('app').hidden || !document.getElementById('auth').hidden)`)
	var dead bool
	b.eval(`TakeoverConsole.snapshot().dead`, &dead)
	if !dead {
		b.until("the list and the live feed", `TakeoverConsole.snapshot().settled['GET /sessions'] >= 1 && TakeoverConsole.snapshot().live`)
	}
}

type snapshot struct {
	Current, Displayed, Text string
	Loading, Sending         bool
	Live, Dead               bool
	Drafts                   map[string]struct {
		Text        string
		Image, File string
	}
	Staged, Owners struct{ Image, File string }
	Settled        map[string]int
}

func (b *browser) snap() snapshot {
	b.t.Helper()
	var s snapshot
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](`window.TakeoverConsole ? TakeoverConsole.snapshot() : {}`))
	if err == nil {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

func (b *browser) settled(key string) int { return b.snap().Settled[key] }

func item(sid string) string { return fmt.Sprintf(`[data-testid=session-item][data-sid="%s"]`, sid) }

// pick clicks a session in the list.
func (b *browser) pick(sid string) {
	b.t.Helper()
	// a DOM click: the list re-renders its items on live updates, which can
	// replace a node between a CDP query and its mouse event
	var ok bool
	b.eval(fmt.Sprintf(`(() => { const e = document.querySelector('%s'); if (!e) return false; e.click(); return true; })()`, item(sid)), &ok)
	if !ok {
		b.t.Fatalf("no list item for %.8s", sid)
	}
}

// show opens a session and waits until it is displayed.
func (b *browser) show(sid string) {
	b.t.Helper()
	b.pick(sid)
	b.until("session displayed", fmt.Sprintf(`TakeoverConsole.snapshot().displayed === %q && !TakeoverConsole.snapshot().loading`, sid))
}

// setText replaces the composer's text as typing would.
func (b *browser) setText(text string) {
	b.t.Helper()
	js, _ := json.Marshal(text)
	b.eval(fmt.Sprintf(`(() => { const i = document.getElementById('msgInput'); i.value = %s; i.dispatchEvent(new Event('input')); return true; })()`, js), nil)
}

// typeText types at the end of the composer's text.
func (b *browser) typeText(text string) {
	b.t.Helper()
	b.run(chromedp.SendKeys(chromedp.CSS(`#msgInput`), text))
}

// pressEnter presses Enter in the composer. It dispatches the keydown only:
// CDP's key events also send a "char" event that types a newline even when
// the page cancels the keydown, which a real keyboard does not.
func (b *browser) pressEnter() {
	b.t.Helper()
	b.eval(`document.getElementById('msgInput').dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true, cancelable: true}))`, nil)
}

func (b *browser) send() { b.run(chromedp.Click(chromedp.CSS(`[data-testid=send-btn]`))) }

// upload picks a file (named name, holding content) in the image or file input.
func (b *browser) upload(input, name string, content []byte) {
	b.t.Helper()
	dir := b.t.TempDir()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		b.t.Fatal(err)
	}
	b.run(chromedp.SetUploadFiles(chromedp.CSS(input), []string{p}, chromedp.NodeReady))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	js, _ := json.Marshal(sel)
	b.eval(fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ''`, js), &s)
	return s
}

func (b *browser) attr(sel, name string) string {
	b.t.Helper()
	var s string
	js, _ := json.Marshal(sel)
	b.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return '<none>'; return e.hasAttribute(%q) ? e.getAttribute(%q) : '<absent>'; })()`, js, name, name), &s)
	return s
}

func (b *browser) count(sel string) int {
	b.t.Helper()
	var n int
	js, _ := json.Marshal(sel)
	b.eval(fmt.Sprintf(`document.querySelectorAll(%s).length`, js), &n)
	return n
}

// takeoverOff asserts the conversation's takeover controls are off.
func (b *browser) takeoverOff(who string) {
	b.t.Helper()
	if st := b.attr(`[data-testid=takeover-btn]`, "data-state"); st != "off" {
		b.t.Fatalf("%s: takeover button %q, want off", who, st)
	}
	if b.attr(`[data-testid=countdown]`, "hidden") != "" {
		b.t.Fatalf("%s: countdown visible", who)
	}
}

// world is an installation with person sessions A, B, C and Z, opened in a
// browser with a token of its scope.
type world struct {
	h    *harness
	b    *browser
	bind binding.Binding
	sc   binding.Scope
	cfg  string
	sid  map[string]string
}

func newWorld(t *testing.T, config string) *world {
	t.Helper()
	h := newHarness(t)
	w := &world{h: h, cfg: config, sid: map[string]string{}}
	w.bind, w.sc = h.install("web", config)
	for i, n := range []string{"A", "B", "C", "Z"} {
		lid := fmt.Sprint(1001 + i)
		h.say(w.bind, config, "person", lid, lid, "name-"+n, "hello from "+n)
		w.sid[n] = sidOf("person", lid)
	}
	w.b = newBrowser(t, h)
	w.b.open(h.token(w.sc, "alice", time.Hour))
	w.b.until("four sessions listed", `document.querySelectorAll('[data-testid=session-item]').length === 4`)
	return w
}

// lastSend is the chain of the newest send_message the host received.
func (w *world) sends() int { return len(w.h.host.Sends()) }

func clickTakeover() chromedp.Action[chromedp.Void] {
	return chromedp.Click(chromedp.CSS(`[data-testid=takeover-btn]`))
}

type chromedpAction = chromedp.Action[chromedp.Void]

func clickID(id string) chromedpAction { return chromedp.Click(chromedp.CSS("#" + id)) }

func chromedpClick(sel string) chromedpAction { return chromedp.Click(chromedp.CSS(sel)) }

// typeInto types into an input as a user would.
func (b *browser) typeInto(sel, text string) {
	b.t.Helper()
	b.run(chromedp.SendKeys(chromedp.CSS(sel), text))
}

// setInput replaces an input's value and fires its input event.
func (b *browser) setInput(sel, text string) {
	b.t.Helper()
	js, _ := json.Marshal(text)
	b.eval(fmt.Sprintf(`(() => { const i = document.querySelector(%q); i.value = %s; i.dispatchEvent(new Event('input')); return true; })()`, sel, js), nil)
}
