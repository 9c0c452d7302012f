package console_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestErrorTextsEchoNothing: a JSON array body is named as one, and a
// mistyped sid or endpoint is refused without being echoed back.
func TestErrorTextsEchoNothing(t *testing.T) {
	h := newHarness(t)
	_, sc := h.install("errtext", `{}`)
	tok := h.token(sc, "alice", time.Hour)
	req, _ := http.NewRequest(http.MethodPost, h.http.URL+"/console/api/takeover", bytes.NewReader([]byte(`[{"sid":"x"}]`)))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "JSON array") {
		t.Errorf("an array body: %d %s, want 400 naming a JSON array", res.StatusCode, body)
	}
	const mistyped = "MISTYPED-value-0123456789abcdef"
	for _, c := range []struct{ method, ep string }{{"GET", "/messages"}, {"POST", "/takeover"}, {"GET", "/" + mistyped}} {
		st, body := h.do(tok, c.method, c.ep, map[string]any{"sid": mistyped})
		if st < 400 || strings.Contains(string(body), "MISTYPED") {
			t.Errorf("%s %s: %d %s: want an error that echoes nothing", c.method, c.ep, st, body)
		}
	}
}
