package acceptance_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/domstorage"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/pkg/testskip"
	"github.com/langbot-nats/plugins/services/takeover"
)

// parentPage plays LangBot 4.10.8's plugin-page host (page.tsx): it loads
// the page's HTML into an iframe with sandbox="allow-scripts allow-forms"
// from a blob: URL, answers langbot:api by POSTing to /api (LangBot's
// /page-api), and sends langbot:context. frameEval runs a test expression
// inside the frame through the test instrumentation (see instrument).
const parentPage = `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><style>html,body{margin:0;height:100%}iframe{border:0;width:100%;height:100%;display:block}</style></head><body><script>
window.calls = []; window.violations = []; window.results = new Map();
let frame = null, seq = 0;
window.loadPage = async (theme, language) => {
  if (frame) frame.remove();
  const html = await (await fetch('/page.html')).text();
  const url = URL.createObjectURL(new Blob([html], { type: 'text/html' }));
  frame = document.createElement('iframe');
  frame.setAttribute('sandbox', 'allow-scripts allow-forms');
  frame.onload = () => window.sendContext(theme, language);
  frame.src = url;
  document.body.append(frame);
  return true;
};
window.sendContext = (theme, language) => { frame.contentWindow.postMessage({ type: 'langbot:context', theme, language }, '*'); return true; };
window.frameEval = (js) => new Promise((resolve) => { const id = ++seq; window.results.set(id, resolve);
  setTimeout(() => { if (window.results.delete(id)) resolve({ error: 'the frame did not answer' }); }, 5000); frame.contentWindow.postMessage({ type: 'test:eval', id, js }, '*'); });
window.addEventListener('message', async (ev) => {
  if (!frame || ev.source !== frame.contentWindow) return;
  const m = ev.data || {};
  if (m.type === 'langbot:api') {
    window.calls.push(m.method + ' ' + m.endpoint);
    let out;
    try {
      const r = await fetch('/api', { method: 'POST', body: JSON.stringify({ endpoint: m.endpoint, method: m.method, body: m.body }) });
      out = await r.json();
    } catch (e) { out = { error: String(e) }; }
    frame.contentWindow.postMessage(Object.assign({ type: 'langbot:api:response', requestId: m.requestId }, out), '*');
  } else if (m.type === 'test:violation') window.violations.push(m.what);
  else if (m.type === 'test:result') { const r = window.results.get(m.id); window.results.delete(m.id); if (r) r(m.value); }
});
</script></body></html>`

// instrument runs in every document before its own scripts. In the page's
// frame it reports every use of storage, cookies, the network, pop-ups,
// dialogs and downloads to the parent (so the test sees what the page
// tried, even where the sandbox would block it), and answers test:eval.
const instrument = `(() => {
  if (window === window.top) return;
  const report = (what) => { try { window.parent.postMessage({ type: 'test:violation', what }, '*'); } catch (e) {} };
  for (const name of ['localStorage', 'sessionStorage', 'indexedDB', 'caches']) {
    try { Object.defineProperty(window, name, { configurable: true, get() { report(name); throw new DOMException('blocked', 'SecurityError'); } }); } catch (e) { report('cannot wrap ' + name); }
  }
  try {
    Object.defineProperty(Document.prototype, 'cookie', { configurable: true, get() { report('cookie'); return ''; }, set() { report('cookie'); } });
  } catch (e) { report('cannot wrap cookie'); }
  const wrap = (obj, name) => { const f = obj[name]; obj[name] = function () { report(name); return f ? f.apply(this, arguments) : undefined; }; };
  ['fetch', 'open', 'alert', 'confirm', 'prompt', 'EventSource', 'WebSocket'].forEach((n) => wrap(window, n));
  wrap(XMLHttpRequest.prototype, 'open');
  wrap(navigator, 'sendBeacon');
  const click = HTMLAnchorElement.prototype.click;
  HTMLAnchorElement.prototype.click = function () { if (this.hasAttribute('download')) report('download'); return click.apply(this, arguments); };
  window.addEventListener('message', async (ev) => {
    const m = ev.data || {};
    if (m.type !== 'test:eval') return;
    let value;
    try { value = await (0, eval)(m.js); } catch (e) { value = { error: String(e) }; }
    window.parent.postMessage({ type: 'test:result', id: m.id, value: JSON.parse(JSON.stringify(value === undefined ? null : value)) }, '*');
  });
})();`

func chromium(t *testing.T) string {
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
	testskip.Browser().Skip(t, "chromium is not installed")
	return ""
}

// packageFile reads one file of a built package.
func packageFile(t *testing.T, data []byte, name string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == name {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("the package has no %s", name)
	return nil
}

func slipPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 160, 90))
	for y := 0; y < 90; y++ {
		for x := 0; x < 160; x++ {
			img.Set(x, y, color.RGBA{R: uint8(40 + x), G: uint8(120 + y), B: 200, A: 255})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// TestConsolePageInLangBot drives the generated console page the way
// LangBot 4.10.8 hosts it: sandboxed iframe from a blob: URL, langbot:api
// answered through page_api of the real SDK runtime, the HumanTakeover
// package and NATS to the takeover service. It covers list, open, take
// over, reply with text and with an image, export shown in-page, release,
// a new message shown by polling, theme and language from langbot:context, and checks that the frame made
// no network request and touched no storage. At 360 px the list and the
// conversation fit; TAKEOVER_SCREENSHOTS=1 writes them to docs/images.
func TestConsolePageInLangBot(t *testing.T) {
	path := chromium(t)
	e := newEnv(t, takeover.Plugin)
	tk := e.ins[takeover.Plugin]
	ctx := ctxT(t, 5*time.Minute)
	for _, ev := range []runtimetest.Event{
		{Name: "GroupMessageReceived", Session: group, Text: "Is the Saturday route still open?"},
		{Name: "NormalMessageResponded", Session: group, Text: "The northern trail reopened on Thursday."},
	} {
		if _, err := e.rt.Emit(ctx, tk, ev); err != nil {
			t.Fatalf("emit: %v", err)
		}
	}
	html := packageFile(t, e.pkgs[takeover.Plugin].Data, "components/pages/console.html")
	if bytes.Contains(html, []byte(`src="app.js"`)) || !bytes.Contains(html, []byte(`data-transport="langbot"`)) {
		t.Fatal("the package's page is not the self-contained console")
	}

	var mu sync.Mutex
	var pageCalls []string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, parentPage)
	})
	mux.HandleFunc("GET /page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(html)
	})
	// /api is LangBot's POST /page-api: page_api to the runtime, {data} or {error}
	mux.HandleFunc("POST /api", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Endpoint, Method string
			Body             json.RawMessage
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		pageCalls = append(pageCalls, in.Method+" "+in.Endpoint)
		mu.Unlock()
		var body any = map[string]any{}
		if len(in.Body) > 0 && string(in.Body) != "null" {
			body = in.Body
		}
		cctx, cancel := context.WithTimeout(r.Context(), 40*time.Second)
		defer cancel()
		res, err := e.rt.Page(cctx, tk, takeover.ConsolePageID, in.Endpoint, in.Method, body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case err != nil:
			_ = json.NewEncoder(w).Encode(map[string]any{"error": err.Error()})
		case res.Error != "":
			_ = json.NewEncoder(w).Encode(map[string]any{"error": res.Error})
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"data": res.Data})
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	actx, acancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		// the sandboxed frame stays in the tab's process, so the
		// instrumentation script and the network and storage events of the
		// tab reach it; with Chromium's defaults the frame is a target of
		// its own (TestConsolePageWithSiteIsolation, docs/langbot.md).
		// "site-per-process" is a switch, not a feature: it was a no-op
		chromedp.Flag("disable-site-isolation-trials", true),
		chromedp.Flag("disable-features", "IsolateSandboxedIframes"),
		chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 800))
	t.Cleanup(acancel)
	var netMu sync.Mutex
	type req struct{ frame, url string }
	var reqs []req
	var storageEvents []string
	listener := func(ev any) {
		netMu.Lock()
		defer netMu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			reqs = append(reqs, req{string(ev.FrameID), ev.Request.URL})
		case *domstorage.EventDomStorageItemAdded:
			storageEvents = append(storageEvents, "added "+ev.Key)
		case *domstorage.EventDomStorageItemUpdated:
			storageEvents = append(storageEvents, "updated "+ev.Key)
		case *domstorage.EventDomStorageItemRemoved:
			storageEvents = append(storageEvents, "removed "+ev.Key)
		}
	}
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithListener(listener))
	t.Cleanup(bcancel)
	run := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(bctx, 60*time.Second)
		defer cancel()
		if err := chromedp.Do(c, actions...); err != nil {
			t.Fatalf("browser: %v", err)
		}
	}
	var mainFrame string
	// the first call gets bctx itself: the tab lives as long as that context
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	{
		c, cancel := context.WithTimeout(bctx, 60*time.Second)
		if _, err := chromedp.Call(c, network.Enable, network.EnableParams{}); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(c, domstorage.Enable, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(c, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: instrument}); err != nil {
			t.Fatal(err)
		}
		cancel()
		run(chromedp.Navigate(srv.URL + "/"))
		c, cancel = context.WithTimeout(bctx, 60*time.Second)
		tree, err := chromedp.Call(c, page.GetFrameTree, cdp.Empty{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		mainFrame = string(tree.FrameTree.Frame.ID)
	}
	parentEval := func(js string, out any) {
		t.Helper()
		c, cancel := context.WithTimeout(bctx, 60*time.Second)
		defer cancel()
		raw, err := chromedp.Run(c, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("evaluate %.80s: %v", js, err)
		}
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				t.Fatalf("decode %.80s: %v (%s)", js, err, raw)
			}
		}
	}
	in := func(js string, out any) {
		t.Helper()
		b, _ := json.Marshal(js)
		parentEval("frameEval("+string(b)+")", out)
	}
	until := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			var ok any
			in("!!("+js+")", &ok)
			if ok == true {
				return
			}
			if time.Now().After(deadline) {
				var calls []string
				parentEval(`window.calls`, &calls)
				var vio []string
				parentEval(`window.violations`, &vio)
				t.Fatalf("timed out waiting for %s (%s): last %v; calls %v; violations %v", what, js, ok, calls, vio)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	click := func(sel string) { t.Helper(); in(`(document.querySelector(`+jsq(sel)+`).click(), true)`, nil) }

	parentEval(`loadPage('dark', 'zh_Hans')`, nil)
	until("the list", `document.querySelectorAll('[data-testid=session-item]').length === 1`)
	until("the host's theme and language", `document.documentElement.dataset.theme === 'dark' && document.documentElement.lang === 'zh-Hans' && document.title === '人工接管控制台' || (document.documentElement.dataset.theme === 'dark' && document.documentElement.lang === 'zh-Hans')`)
	var hidden bool
	in(`getComputedStyle(document.querySelector('.side-foot')).display === 'none' && document.getElementById('notifyBtn').hidden`, &hidden)
	if !hidden {
		t.Fatal("the page offers its own theme/language switch or notifications")
	}
	parentEval(`sendContext('light', 'en_US')`, nil)
	until("the light English console", `document.documentElement.dataset.theme === 'light' && document.documentElement.lang === 'en' && document.querySelector('.tab.active').textContent === 'All'`)

	click(`[data-testid=session-item]`)
	until("the conversation", `document.querySelectorAll('[data-testid=message]').length === 2 && !document.getElementById('sendBtn').disabled`)
	click(`[data-testid=takeover-btn]`)
	until("taken over", `document.querySelector('[data-testid=takeover-btn]').dataset.state === 'on' && !document.getElementById('countdown').hidden`)

	mark := len(e.rt.Sends())
	in(`(document.getElementById('msgInput').value = 'Hello from the LangBot page', document.getElementById('sendBtn').click(), true)`, nil)
	until("the text reply shown", `Array.from(document.querySelectorAll('[data-role=human]')).some((n) => n.textContent.includes('Hello from the LangBot page'))`)
	sends := e.rt.WaitSends(t, mark+1, 60*time.Second)
	if !strings.Contains(string(sends[len(sends)-1].Data), "Hello from the LangBot page") {
		t.Fatalf("send = %s", sends[len(sends)-1].Data)
	}
	// the operator is not known to LangBot: page calls are "host" (audit)
	until("the operator shown as host", `Array.from(document.querySelectorAll('[data-role=human] .who')).some((n) => n.textContent.includes('host'))`)

	png64 := base64.StdEncoding.EncodeToString(slipPNG())
	in(`(async () => {
	  const bin = atob(`+jsq(png64)+`); const u = new Uint8Array(bin.length); for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
	  const dt = new DataTransfer(); dt.items.add(new File([u], 'slip.png', { type: 'image/png' }));
	  const input = document.getElementById('imageInput'); input.files = dt.files; input.dispatchEvent(new Event('change'));
	  return true; })()`, nil)
	until("the image staged", `document.querySelector('#previewStrip .chip[data-kind=image]')`)
	mark = len(e.rt.Sends())
	in(`(new Promise((r) => setTimeout(r, 600)).then(() => { document.getElementById('sendBtn').click(); return true; }))`, nil)
	sends = e.rt.WaitSends(t, mark+1, 60*time.Second)
	if !strings.Contains(string(sends[len(sends)-1].Data), `"Image"`) {
		t.Fatalf("image send = %.200s", sends[len(sends)-1].Data)
	}
	until("the image shown from /blob", `document.querySelector('[data-role=human] [data-testid=msg-image][data-loaded=true]')`)

	click(`#exportBtn`)
	until("the export in-page", `!document.getElementById('cardOverlay').hidden && document.querySelector('[data-testid=dialog-text]').value.includes('"langbot.takeover.export"') && document.querySelector('[data-testid=dialog-text]').value.includes('data:image/png;base64,')`)
	click(`[data-testid=dialog-close]`)

	click(`[data-testid=takeover-btn]`)
	until("released", `document.querySelector('[data-testid=takeover-btn]').dataset.state === 'off' && document.getElementById('countdown').hidden`)
	// the page has no live feed: a message recorded after the page opened
	// shows in the open conversation by polling, without a reload (the
	// mark set in the frame's window survives only in the same document)
	in(`(window.pollMark = 'same document', true)`, nil)
	later := "Is the eastern pass open too?"
	if _, err := e.rt.Emit(ctx, tk, runtimetest.Event{Name: "GroupMessageReceived", Session: group, Text: later}); err != nil {
		t.Fatalf("emit: %v", err)
	}
	until("the new message by polling", `window.pollMark === 'same document' && Array.from(document.querySelectorAll('[data-testid=message]')).some((n) => n.textContent.includes(`+jsq(later)+`))`)

	// phone width: the list and the conversation fit in 360 px
	shots := t.TempDir()
	if os.Getenv("TAKEOVER_SCREENSHOTS") == "1" {
		shots = filepath.Join("..", "..", "..", "docs", "images")
	}
	run(chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
	parentEval(`loadPage('light', 'en_US')`, nil)
	until("the list at 360 px", `document.querySelectorAll('[data-testid=session-item]').length === 1 && document.documentElement.dataset.context === 'set'`)
	fits := func(view string) {
		t.Helper()
		var w int
		in(`document.scrollingElement.scrollWidth`, &w)
		if w > 360 {
			t.Fatalf("%s is %d px wide at 360 px", view, w)
		}
	}
	fits("the list")
	shoot(t, bctx, filepath.Join(shots, "console-page-phone-list.png"))
	click(`[data-testid=session-item]`)
	until("the conversation at 360 px", `document.querySelector('[data-role=human] [data-testid=msg-image][data-loaded=true]') && getComputedStyle(document.querySelector('.sidebar')).display === 'none'`)
	fits("the conversation")
	shoot(t, bctx, filepath.Join(shots, "console-page-phone-chat.png"))

	var violations []string
	parentEval(`window.violations`, &violations)
	if len(violations) > 0 {
		t.Fatalf("the page used %v", violations)
	}
	netMu.Lock()
	defer netMu.Unlock()
	if mainFrame == "" {
		t.Fatal("no main frame id")
	}
	for _, r := range reqs {
		if r.frame != mainFrame && !strings.HasPrefix(r.url, "blob:") && !strings.HasPrefix(r.url, "data:") {
			t.Errorf("the page's frame requested %s", r.url)
		}
	}
	if len(storageEvents) > 0 {
		t.Errorf("storage changed: %v", storageEvents)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"GET /sessions", "GET /messages", "POST /takeover", "POST /reply", "GET /blob", "GET /export", "DELETE /takeover"} {
		if !strings.Contains(strings.Join(pageCalls, "\n")+"\n", want+"\n") {
			t.Errorf("no %s went through page_api (%d calls)", want, len(pageCalls))
		}
	}
}

func jsq(s string) string { b, _ := json.Marshal(s); return string(b) }

func shoot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	buf, err := chromedp.Run(c, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(fmt.Errorf("screenshot: %w", err))
	}
}
