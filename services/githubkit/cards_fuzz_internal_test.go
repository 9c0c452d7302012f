package githubkit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/githubkit/events"
)

// FuzzCardEvent feeds arbitrary event data to the card reader: it never
// panics, reads at most maxCardText bytes, agrees with a plain decode of
// the chain's Plain components, and yields at most MaxCardsPerMessage
// links.
func FuzzCardEvent(f *testing.F) {
	f.Add([]byte(`{"launcher_type":"group","launcher_id":1,"sender_id":"2","message_chain":[{"type":"Source","id":1},{"type":"Plain","text":"see https://github.com/o/r/pull/5"}]}`))
	f.Add([]byte(`{"message_event":{"message_chain":[{"type":"Plain","text":"!gh repo github.com/o/r"}]}}`))
	f.Add([]byte(`{"message_chain":null,"message_event":null}`))
	f.Add([]byte(`{"message_chain":[{"type":"Quote","origin":[{"type":"Plain","text":"github.com/o/r"}]},{"type":"Plain","text":"，github.com/a/b/commit/abcdef1。"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d cardEventData
		if json.Unmarshal(data, &d) != nil {
			return
		}
		text := d.text()
		if len(text) > maxCardText {
			t.Fatalf("read %d bytes", len(text))
		}
		// oracle: the Plain texts of the chain in use, in order
		chain := d.MessageChain
		if len(chain) == 0 || string(chain) == "null" {
			if d.MessageEvent != nil {
				chain = d.MessageEvent.MessageChain
			}
		}
		var comps []map[string]any
		want := ""
		if json.Unmarshal(chain, &comps) == nil {
			if !exactKeys(comps) {
				return
			}
			var b strings.Builder
			for _, c := range comps {
				s, _ := c["text"].(string)
				if c["type"] == "Plain" && b.Len()+len(s) <= maxCardText {
					b.WriteString(s)
				}
			}
			want = b.String()
		}
		if text != want {
			t.Fatalf("text %q, want %q", text, want)
		}
		_ = isCommand(text)
		links := events.ParseLinks(text, "")
		if len(links) > events.MaxCardsPerMessage {
			t.Fatalf("%d links", len(links))
		}
		for _, l := range links {
			if l.Key() == "" || l.Repo.Owner == "" {
				t.Fatalf("empty link %+v", l)
			}
		}
	})
}

// exactKeys reports whether the components spell "type" and "text" only in
// lower case (encoding/json matches field names case-insensitively, which
// the map oracle does not follow).
func exactKeys(comps []map[string]any) bool {
	for _, c := range comps {
		for k := range c {
			if (strings.EqualFold(k, "type") && k != "type") || (strings.EqualFold(k, "text") && k != "text") {
				return false
			}
		}
	}
	return true
}
