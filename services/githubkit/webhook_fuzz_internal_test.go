package githubkit

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/wire"
)

// FuzzParseHookRequest checks the receiver's path and header parsers: an
// accepted hook id is key-safe and round-trips through the path; accepted
// headers have the documented forms and make a key-safe message id.
func FuzzParseHookRequest(f *testing.F) {
	f.Add(WebhookPath+"7hJ3uirKpogDo5r61Kf_fg", "push", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "application/json")
	f.Add(WebhookPath+"../x", "ping", "", "application/x-www-form-urlencoded")
	f.Add("/github/webhook", "pull_request", "a b", "application/json; charset=utf-8")
	f.Add(WebhookPath+"AAAAAAAAAAAAAAAA/extra", "PUSH", "1", "")
	f.Add(WebhookPath+strings.Repeat("a", 65), "issue_comment", strings.Repeat("9", 64), "text/plain")
	event := regexp.MustCompile(`^[a-z][a-z_]*$`)
	f.Fuzz(func(t *testing.T, path, ev, delivery, ct string) {
		if id, ok := parseHookPath(path); ok {
			if wire.CheckID(id) != nil || path != WebhookPath+id || len(id) < 16 || len(id) > 64 {
				t.Fatalf("accepted id %q of %q", id, path)
			}
			if again, ok := parseHookPath(WebhookPath + id); !ok || again != id {
				t.Fatalf("round trip %q -> %q", id, again)
			}
		}
		h := http.Header{}
		h.Set(headerHookEvent, ev)
		h.Set(headerHookDelivery, delivery)
		if ct != "" {
			h.Set("Content-Type", ct)
		}
		got, err := parseHookHeaders(h)
		if err != nil {
			return
		}
		if !event.MatchString(got.Event) || len(got.Event) > 64 || got.Delivery == "" || len(got.Delivery) > 64 ||
			wire.CheckID(got.Delivery) != nil || strings.ContainsAny(got.Delivery, ".*> ") {
			t.Fatalf("accepted %+v", got)
		}
	})
}
