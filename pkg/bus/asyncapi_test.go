package bus_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// TestAsyncAPIMatchesSubjects keeps docs/asyncapi.json and the subject
// builders in step: every address in the document is one the builders
// make, and every subject the builders make is documented.
func TestAsyncAPIMatchesSubjects(t *testing.T) {
	raw, err := os.ReadFile("../../docs/asyncapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AsyncAPI string `json:"asyncapi"`
		Channels map[string]struct {
			Address string `json:"address"`
		} `json:"channels"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.AsyncAPI != "3.0.0" {
		t.Fatalf("asyncapi version %q", doc.AsyncAPI)
	}
	var documented []string
	for _, c := range doc.Channels {
		documented = append(documented, c.Address)
	}

	s := bus.Subjects{Prefix: "PREFIX"}
	sc, _ := binding.ParseScope("INSTANCE.WORKSPACE.INSTALLATION")
	placeholders := strings.NewReplacer("PREFIX", "{prefix}", "PLUGIN", "{plugin}", "INSTANCE", "{instance}",
		"WORKSPACE", "{workspace}", "INSTALLATION", "{installation}", "SHARD", "{shard}", "ID", "{id}")
	var built []string
	add := func(subject string) { built = append(built, placeholders.Replace(subject)) }
	for _, ep := range bus.Endpoints {
		add(s.Invocation("PLUGIN", ep, sc))
	}
	add(s.Lifecycle("PLUGIN", bus.LifecycleAttach, sc))
	add(s.Lifecycle("PLUGIN", bus.LifecycleRevoke, sc))
	for _, a := range []string{bus.ActionSendMessage, bus.ActionGetBotInfo, bus.ActionGetBots} {
		add(s.HostAction(a, sc))
	}
	internal := []struct {
		plugin, kind string
		ids          []string
	}{
		{"githubkit", bus.KindSched, []string{"ID"}}, {"githubkit", bus.KindPoll, []string{"ID"}},
		{"schenotify", bus.KindSched, []string{"ID"}}, {"schenotify", bus.KindDue, []string{"ID"}},
		{"takeover", "timer", []string{"ID"}}, {"takeover", "expire", []string{"ID"}},
		{"takeover", "history", []string{"SHARD", "ID"}},
	}
	for _, in := range internal {
		subj, err := s.Internal(in.plugin, in.kind, sc, in.ids...)
		if err != nil {
			t.Fatal(err)
		}
		add(subj)
	}
	live, _ := s.Internal("takeover", "live", sc)
	add(live)

	slices.Sort(documented)
	slices.Sort(built)
	if !slices.Equal(documented, built) {
		t.Fatalf("docs/asyncapi.json and pkg/bus disagree\ndocumented: %v\nbuilt:      %v", documented, built)
	}
}
