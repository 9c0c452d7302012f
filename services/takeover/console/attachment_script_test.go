package console_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// hostile "images": bytes a browser renders as a document with script
const (
	htmlImage = `<!doctype html><html><body><script>localStorage.setItem('pwned', 'html:' + location.origin); document.title = 'pwned'</script></body></html>`
	svgImage  = `<svg xmlns="http://www.w3.org/2000/svg"><script>localStorage.setItem('pwned', 'svg:' + location.origin); document.title = 'pwned'</script></svg>`
)

// TestAttachmentOpenedTopLevelRunsNoScript records a chat message with a
// real PNG and two "images" whose bytes are HTML and SVG with script, shows
// the conversation in Chromium, opens every object URL the page made as a
// top-level page in a new tab (what "open image in new tab" does), and
// checks that no script ran in the console's origin. It also checks that
// /blob serves every non-inline blob as a neutral download.
func TestAttachmentOpenedTopLevelRunsNoScript(t *testing.T) {
	h := newHarness(t)
	bind, sc := h.install("xss", `{}`)
	dataURL := func(mime string, b []byte) string {
		return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b)
	}
	chain, _ := json.Marshal([]map[string]string{
		{"type": "Plain", "text": "look"},
		{"type": "Image", "base64": dataURL("image/png", tinyPNG())},
		{"type": "Image", "base64": dataURL("image/png", []byte(htmlImage))},
		{"type": "Image", "base64": dataURL("image/svg+xml", []byte(svgImage))},
	})
	h.event(bind, `{}`, "person", "4242", "4242", "mallory", chain)
	sid := sidOf("person", "4242")
	tok := h.token(sc, "alice", time.Hour)

	// what the service recorded and serves
	st, body := h.do(tok, http.MethodGet, "/messages", map[string]any{"sid": sid})
	if st != http.StatusOK {
		t.Fatalf("messages: %d %s", st, body)
	}
	var page struct {
		Messages []struct {
			Parts []struct{ Type, Blob, Mime string }
		}
	}
	if err := json.Unmarshal(body, &page); err != nil || len(page.Messages) != 1 {
		t.Fatalf("messages: %v %s", err, body)
	}
	images := 0
	for _, p := range page.Messages[0].Parts {
		if p.Type == "image" {
			images++
			if p.Mime != "image/png" {
				t.Errorf("an image part of mime %q was recorded; only sniffed raster images may be images", p.Mime)
			}
		}
		if p.Blob == "" {
			continue
		}
		res := h.raw(tok, http.MethodGet, "/blob?sid="+sid+"&name="+p.Blob)
		ct, cd, ns := res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"), res.Header.Get("X-Content-Type-Options")
		if ns != "nosniff" {
			t.Errorf("blob %s: X-Content-Type-Options %q", p.Mime, ns)
		}
		if p.Type == "image" {
			if ct != "image/png" || cd != "" {
				t.Errorf("png blob: Content-Type %q, Content-Disposition %q; want image/png inline", ct, cd)
			}
			continue
		}
		if ct != "application/octet-stream" || cd != "attachment" {
			t.Errorf("blob of sniffed type %s: Content-Type %q, Content-Disposition %q; want application/octet-stream, attachment", p.Mime, ct, cd)
		}
	}
	if images != 1 {
		t.Errorf("%d image parts, want 1 (the PNG)", images)
	}

	b := newBrowser(t, h)
	b.open(tok)
	// remember every object URL the page makes
	b.eval(`(() => { window.__urls = []; const make = URL.createObjectURL; URL.createObjectURL = (o) => { const u = make.call(URL, o); __urls.push(u); return u; }; return true; })()`, nil)
	b.show(sid)
	b.until("the PNG shown", `document.querySelector('[data-testid=msg-image][data-loaded=true]')`)
	// every other attachment the page offers is opened as a download
	var files int
	b.eval(`(() => { const fs = document.querySelectorAll('[data-testid=msg-file]'); fs.forEach((a) => a.click()); return fs.length; })()`, &files)
	b.until("the blobs fetched", fmt.Sprintf(`TakeoverConsole && window.__urls.length >= %d`, 1+files))
	var urls []string
	b.eval(`window.__urls`, &urls)
	for _, u := range urls {
		openTopLevel(t, b, u)
	}
	var pwned any
	b.eval(`localStorage.getItem('pwned')`, &pwned)
	if pwned != nil {
		t.Fatalf("a chat attachment opened top-level ran script in the console's origin: %v", pwned)
	}
	if len(urls) == 0 {
		t.Fatal("the page made no object URL: nothing was checked")
	}
}

// openTopLevel opens u in a new tab of b's browser context and waits until
// it has loaded (or turned into a download).
func openTopLevel(t *testing.T, b *browser, u string) {
	t.Helper()
	tab, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	ctx, stop := context.WithTimeout(tab, 15*time.Second)
	defer stop()
	// a download aborts the navigation: that is an answer, not a failure
	_, _ = chromedp.Run(ctx, chromedp.Navigate(u))
	title, _ := chromedp.Run(ctx, chromedp.Title())
	if title == "pwned" {
		t.Errorf("%s opened top-level ran its script", u)
	}
}

// raw calls the HTTP API with a token and returns the response, its body
// read and closed.
func (h *harness) raw(tok, method, pathQuery string) *http.Response {
	h.t.Helper()
	req, _ := http.NewRequest(method, h.http.URL+"/console/api"+pathQuery, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res
}
