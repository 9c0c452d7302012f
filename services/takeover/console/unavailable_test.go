package console_test

import (
	"strings"
	"testing"
)

// TestConsole503NamesTheComponent (issue 32): a 503 tells the operator
// where to look. The service's reasons become texts naming the service's
// storage, the service itself, or LangBot (the host); a 503 without a
// reason shows its message, which names its component.
func TestConsole503NamesTheComponent(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	for _, c := range []struct {
		reason, message, want string
	}{
		{"storage_unavailable", "takeover service: its storage (NATS JetStream) did not answer, retry later", "The HumanTakeover service's storage (NATS JetStream) did not answer"},
		{"not_ready", "takeover service: not ready (starting or stopping), retry later", "The HumanTakeover service is starting or stopping"},
		{"", "takeover is at capacity or stopping, retry later", "Something went wrong: takeover is at capacity"},
	} {
		t.Run(c.reason, func(t *testing.T) {
			b.eval(`(document.querySelectorAll('[data-testid=toast]').forEach(n => n.remove()), true)`, nil)
			hd := w.h.gate.Hold("POST", "/takeover", w.sid["A"])
			b.run(clickTakeover())
			hd.Wait(t)
			er := map[string]any{"code": "unavailable", "message": c.message}
			if c.reason != "" {
				er["reason"] = c.reason
			}
			hd.ReleaseWith(t, &fake{503, map[string]any{"error": er}})
			b.until("the error toast", `document.querySelector('[data-testid=toast][data-kind=error]')`)
			if got := b.text(`[data-testid=toast][data-kind=error]`); !strings.Contains(got, c.want) {
				t.Errorf("503 %s: toast %q, want %q", c.reason, got, c.want)
			}
		})
	}
}
