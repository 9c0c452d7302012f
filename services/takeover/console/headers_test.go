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
