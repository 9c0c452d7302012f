package console_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestRemoteImageLoadsOnClick: a chat image given by URL is not fetched
// when the conversation is shown (its server would learn who reads the
// chat and when); it is fetched once the operator clicks to load it.
func TestRemoteImageLoadsOnClick(t *testing.T) {
	var hits atomic.Int64
	png := tinyPNG()
	tracker := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	}))
	defer tracker.Close()
	h := newHarness(t)
	bind, sc := h.install("remote", `{}`)
	chain, _ := json.Marshal([]map[string]string{{"type": "Plain", "text": "look"}, {"type": "Image", "url": tracker.URL + "/pixel.png"}})
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
	b.run(chromedpClick(`[data-testid=remote-image]`))
	b.until("the remote image loaded", `document.querySelector('[data-testid=msg-image][data-loaded=true]')`)
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d fetches after the click, want 1", n)
	}
}
