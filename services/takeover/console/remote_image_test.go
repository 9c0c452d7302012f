package console_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestRemoteImageOnlyOpenedOnClick (issues 19 and 33): a chat image given
// by URL is never fetched by the console's page, not when the conversation
// is shown and not even by an <img> the page might make (the policy allows
// no remote image origin); it is fetched only when the operator clicks its
// link, which opens it in a tab of its own without a referrer or a handle
// on the console. Before, the policy allowed every https image origin and
// the click loaded the image into the page.
func TestRemoteImageOnlyOpenedOnClick(t *testing.T) {
	var hits atomic.Int64
	png := tinyPNG()
	tracker := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// only the image counts: a tab Chromium opens on the tracker's
		// origin may also ask it for /favicon.ico
		if r.URL.Path != "/track.png" {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	}))
	defer tracker.Close()
	h := newHarness(t)
	bind, sc := h.install("remote", `{}`)
	url := tracker.URL + "/track.png?op=1"
	chain, _ := json.Marshal([]map[string]string{{"type": "Plain", "text": "look"}, {"type": "Image", "url": url}})
	h.event(bind, `{}`, "person", "6161", "6161", "eve", chain)
	sid := sidOf("person", "6161")
	b := newBrowser(t, h)
	b.open(h.token(sc, "alice", time.Hour))
	b.show(sid)
	b.until("the message shown", `document.querySelector('.bubble')`)
	// the history has rendered: the image would have been requested by now
	b.eval(`new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => ok(true))))`, nil)
	if n := hits.Load(); n != 0 {
		t.Fatalf("the remote image was fetched %d times before any click", n)
	}
	// an image element of the page pointing at it is blocked by the policy
	var blocked bool
	b.eval(`new Promise((ok) => { const i = new Image(); i.onload = () => ok(false); i.onerror = () => ok(true); i.src = `+jsString(url)+`; })`, &blocked)
	if !blocked || hits.Load() != 0 {
		t.Fatalf("an <img> of the page loaded the remote image (blocked %v, %d fetches)", blocked, hits.Load())
	}
	if rel := b.attr(`[data-testid=remote-image]`, "rel"); rel != "noopener noreferrer" {
		t.Errorf("the remote image's link has rel %q, want noopener noreferrer", rel)
	}
	b.run(chromedpClick(`[data-testid=remote-image]`))
	deadline := time.Now().Add(20 * time.Second)
	for hits.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d fetches after the click, want 1 (in the new tab)", n)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
