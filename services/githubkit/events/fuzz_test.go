package events_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// FuzzEventLine feeds arbitrary event types and payloads to the formatter:
// it never panics, never prints a Go zero-value marker, and formats exactly
// the types that have a formatter.
func FuzzEventLine(f *testing.F) {
	for _, name := range fakegithub.EventFixtures() {
		var e ghclient.Event
		_ = json.Unmarshal(fakegithub.Event(name, 1), &e)
		f.Add(e.Type, string(e.Payload))
	}
	f.Add("PushEvent", `{"size":null,"commits":null,"ref":null}`)
	f.Add("PullRequestEvent", `{"pull_request":{"title":null,"merged":null},"number":-3}`)
	cat, err := i18n.Load(os.DirFS(".."), "messages") // the service's catalogue
	if err != nil {
		f.Fatal(err)
	}
	x := events.NewTexts(cat, "en_US")
	f.Fuzz(func(t *testing.T, typ, payload string) {
		e := ghclient.Event{ID: "5", Type: typ, Payload: json.RawMessage(payload)}
		if !json.Valid(e.Payload) {
			e.Payload = nil
		}
		line, ok := x.EventLine(e, nil, events.NewLinks("https://github.com", "o/r"))
		if ok != events.Formatted(typ) {
			t.Fatalf("type %q formatted=%v", typ, ok)
		}
		for _, bad := range []string{"<nil>", "%!", " 0 commit"} {
			if strings.Contains(line, bad) {
				t.Fatalf("%q in %q", bad, line)
			}
		}
		events.NeedsCompare(e)
		events.NeedsPull(e)
	})
}
