package acceptance_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestConsolePageWithSiteIsolation runs the console page in Chromium with
// its default flags, site isolation on as real Chrome users have it.
// Chrome then puts the sandboxed blob: frame into its own process, a
// separate DevTools target of type "iframe" (IsolateSandboxedIframes), so
// the instrumentation and the network and storage events of the tab that
// TestConsolePageInLangBot relies on do not reach it (docs/langbot.md, "The
// console inside LangBot"). What this test checks instead, through the
// frame's own target: the postMessage protocol works both ways across the
// processes, the list renders from page_api, opening a chat loads its
// messages, taking it over works, and theme and language follow
// langbot:context.
func TestConsolePageWithSiteIsolation(t *testing.T) {
	path := chromium(t)
	e := newEnv(t, takeover.Plugin)
	tk := e.ins[takeover.Plugin]
	ctx := ctxT(t, 5*time.Minute)
	if _, err := e.rt.Emit(ctx, tk, runtimetest.Event{Name: "GroupMessageReceived", Session: group, Text: "Is the Saturday route still open?"}); err != nil {
		t.Fatalf("emit: %v", err)
	}
	html := packageFile(t, e.pkgs[takeover.Plugin].Data, "components/pages/console.html")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, parentPage)
	})
	mux.HandleFunc("GET /page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(html)
	})
	mux.HandleFunc("POST /api", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Endpoint, Method string
			Body             json.RawMessage
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
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

	// no site-isolation flags: Chromium's defaults
	actx, acancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 800))
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	do := func(c context.Context, js string, out any) {
		t.Helper()
		cc, cancel := context.WithTimeout(c, 60*time.Second)
		defer cancel()
		raw, err := chromedp.Run(cc, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("evaluate %.80s: %v", js, err)
		}
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				t.Fatalf("decode %.80s: %v (%s)", js, err, raw)
			}
		}
	}
	{
		c, cancel := context.WithTimeout(bctx, 60*time.Second)
		err := chromedp.Do(c, chromedp.Navigate(srv.URL+"/"))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	do(bctx, `loadPage('light', 'en_US')`, nil)

	// the frame is its own target: site isolation put it out of process
	var frameID target.ID
	deadline := time.Now().Add(60 * time.Second)
	for frameID == "" {
		infos, err := chromedp.Targets(bctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range infos {
			if info.Type == "iframe" && strings.HasPrefix(info.URL, "blob:") {
				frameID = info.TargetID
			}
		}
		if frameID == "" {
			if time.Now().After(deadline) {
				t.Fatal("the sandboxed frame is no target of its own: site isolation is off in this Chromium")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	fctx, fcancel := chromedp.NewContext(bctx, chromedp.WithTargetID(frameID))
	t.Cleanup(fcancel)
	// the first call gets fctx itself: the session lives as long as that
	// context, not as long as one call's timeout
	if err := chromedp.Do(fctx); err != nil {
		t.Fatalf("attach to the frame: %v", err)
	}
	until := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			var ok bool
			do(fctx, "!!("+js+")", &ok)
			if ok {
				return
			}
			if time.Now().After(deadline) {
				var calls []string
				do(bctx, `window.calls`, &calls)
				t.Fatalf("timed out waiting for %s; calls %v", what, calls)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	until("the list from page_api", `document.querySelectorAll('[data-testid=session-item]').length === 1 && document.documentElement.dataset.context === 'set'`)
	do(fctx, `(document.querySelector('[data-testid=session-item]').click(), true)`, nil)
	until("the conversation", `document.querySelectorAll('[data-testid=message]').length === 1`)
	do(fctx, `(document.querySelector('[data-testid=takeover-btn]').click(), true)`, nil)
	until("taken over", `document.querySelector('[data-testid=takeover-btn]').dataset.state === 'on'`)
	do(bctx, `sendContext('dark', 'zh_Hans')`, nil)
	until("the host's theme and language", `document.documentElement.dataset.theme === 'dark' && document.documentElement.lang === 'zh-Hans'`)
	var calls []string
	do(bctx, `window.calls`, &calls)
	if !strings.Contains(strings.Join(calls, "\n"), "GET /messages") || !strings.Contains(strings.Join(calls, "\n"), "POST /takeover") {
		t.Fatalf("no GET /messages or POST /takeover through langbot:api: %v", calls)
	}
}
