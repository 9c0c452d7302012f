package reliability_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/console"
)

// TestConsoleBadInputChangesNothing sends hostile requests to the takeover
// console's HTTP API (mounted as the binary mounts it) with a valid token:
// malformed JSON, wrong types, an oversize body, raw garbage, a token for
// another scope, and invalid UTF-8 in the reply text. Each must be refused with nothing stored and
// nothing sent. console TestAPIErrorsAndLimits covers parameter validation.
func TestConsoleBadInputChangesNothing(t *testing.T) {
	srv := bustest.NewServer(t)
	s := newStack(t, srv.Conn(t))
	run := s.start(takeover.Plugin, srv.Conn(t), 1)
	svc := run.svc.(*takeover.Service)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	h, err := console.New(console.Config{Key: base64.StdEncoding.EncodeToString(key)}, svc.Console())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", h)
	web := httptest.NewServer(mux)
	t.Cleanup(func() { h.Close(); web.Close() })

	in, other := s.newInstall("con-a"), s.newInstall("con-b")
	for _, x := range []*install{in, other} {
		s.publishAttach(x, takeover.Plugin, true)
	}
	s.waitLifecycle(takeover.Plugin)
	if _, err := s.message(in, s.newID(), "u1", "hi"); err != nil {
		t.Fatal(err)
	}
	if err := s.page(in, s.newID(), "POST", "/takeover", map[string]string{"sid": in.sid("u1")}, nil); err != nil {
		t.Fatal(err)
	}
	settle(t, s)
	token := func(x *install) string {
		tok, err := console.Mint(key, console.Claims{Scope: x.scope(takeover.Plugin).String(), Operator: "op1", Exp: time.Now().Add(time.Hour).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	sid := in.sid("u1")
	reply := `{"sid":"` + sid + `","idempotency_key":"console-bad-1","text":"xBADy"}`
	cases := []struct {
		name, tok, method, ep string
		body                  []byte
	}{
		{"malformed-json", token(in), "POST", "/reply", []byte(`{"sid":`)},
		{"wrong-types", token(in), "POST", "/reply", []byte(`{"sid":["x"],"idempotency_key":{},"text":1}`)},
		{"garbage", token(in), "POST", "/takeover", []byte{0xff, 0xfe, 0, 1}},
		{"oversize", token(in), "POST", "/reply", []byte(`{"sid":"` + sid + `","idempotency_key":"console-bad-2","text":"` + strings.Repeat("a", 64<<20) + `"}`)},
		{"other-scope-token", token(other), "POST", "/takeover", []byte(`{"sid":"` + sid + `"}`)},
		{"no-token", "", "DELETE", "/clear", []byte(`{}`)},
		{"invalid-utf8-text", token(in), "POST", "/reply", bytes.ReplaceAll([]byte(reply), []byte("BAD"), badBytes)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := s.mustTake()
			sends := len(s.host.Sends())
			req, _ := http.NewRequest(c.method, web.URL+"/console/api"+c.ep, bytes.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			if c.tok != "" {
				req.Header.Set("Authorization", "Bearer "+c.tok)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
			res.Body.Close()
			if res.StatusCode < 400 || res.StatusCode >= 500 {
				t.Errorf("status %d %s, want a 4xx", res.StatusCode, body)
			}
			if d := changed(before, s.mustTake()); len(d) > 0 {
				t.Errorf("state changed: %v", d)
			}
			if n := len(s.host.Sends()); n != sends {
				t.Errorf("%d host sends", n-sends)
			}
		})
	}
}
