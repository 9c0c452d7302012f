package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestConsoleRefusesFraming: the standalone console's page, assets, API
// answers and errors all forbid being framed (CSP frame-ancestors 'none'
// and X-Frame-Options DENY), so another site cannot overlay it.
func TestConsoleRefusesFraming(t *testing.T) {
	h := newHarness(t)
	_, sc := h.install("frame", `{}`)
	tok := h.token(sc, "alice", time.Hour)
	for _, p := range []string{"/console/", "/console/app.js", "/console/api/sessions", "/console/api/nothing", "/console/missing"} {
		req, _ := http.NewRequest(http.MethodGet, h.http.URL+p, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q lacks frame-ancestors 'none'", p, csp)
		}
		if xfo := res.Header.Get("X-Frame-Options"); xfo != "DENY" {
			t.Errorf("%s: X-Frame-Options %q, want DENY", p, xfo)
		}
	}
}

// TestConsolePolicyAllowsNoRemoteImages (issue 33): the standalone
// console's Content-Security-Policy loads images from the console itself
// only (and the page's own blob: and data: URLs), never from a remote
// origin. Before, img-src allowed https:, so any https image loaded and
// told its server who read the chat.
func TestConsolePolicyAllowsNoRemoteImages(t *testing.T) {
	h := newHarness(t)
	res, err := http.Get(h.http.URL + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	csp := res.Header.Get("Content-Security-Policy")
	var img string
	for _, d := range strings.Split(csp, ";") {
		if f := strings.Fields(d); len(f) > 0 && f[0] == "img-src" {
			img = strings.Join(f[1:], " ")
		}
	}
	if img != "'self' blob: data:" {
		t.Errorf("img-src %q in %q, want 'self' blob: data: (no remote origin)", img, csp)
	}
}
