package githubkit_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/githubkit"
)

func TestToolSpecs(t *testing.T) {
	names := map[string]bool{}
	for _, ts := range githubkit.Declaration().Tools {
		names[ts.Name] = true
		var schema map[string]any
		if err := json.Unmarshal(ts.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: schema %v", ts.Name, err)
		}
		p := strings.ToLower(ts.LLMPrompt)
		if !strings.Contains(p, "read-only") || !strings.Contains(p, "rate") {
			t.Errorf("%s: prompt must say read-only and rate-limited: %q", ts.Name, ts.LLMPrompt)
		}
	}
	for _, n := range []string{githubkit.ToolRepo, githubkit.ToolIssue, githubkit.ToolSearch} {
		if !names[n] {
			t.Errorf("missing %s", n)
		}
	}
}

// TestDeclaration checks the declaration is valid and matches what the
// service's settings normaliser uses: the same config names and defaults.
func TestDeclaration(t *testing.T) {
	d := githubkit.Declaration()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := d.CommandNames(); len(got) != 1 || got[0] != githubkit.CommandWord {
		t.Errorf("commands %v", got)
	}
	if got := d.SecretFields(); len(got) != 1 || got[0] != "github_token" {
		t.Errorf("secret fields %v", got)
	}
	// An empty config normalises to the declared defaults.
	s, _ := githubkit.NormalizeSettings(nil, false)
	want := map[string]any{"language": s.Language, "poll_interval": s.PollInterval, "max_events_per_push": s.MaxEventsPerPush,
		"github_api_url": s.APIURL, "subscribe_requires_admin": s.SubscribeRequiresAdmin, "github_token": s.Token,
		"link_cards": s.LinkCards, "command_prefix": s.CommandPrefix, "timezone": s.Timezone, "ai_summaries_per_day": s.AISummariesPerDay}
	if s.Zone != time.UTC {
		t.Errorf("empty timezone: zone %v, want UTC", s.Zone)
	}
	for _, c := range d.Config {
		if w, ok := want[c.Name]; !ok || w != c.Default {
			t.Errorf("config %s: default %#v, settings use %#v", c.Name, c.Default, w)
		}
	}
	if len(d.Config) != len(want) {
		t.Errorf("%d config items, settings have %d", len(d.Config), len(want))
	}
}
