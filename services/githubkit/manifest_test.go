package githubkit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/githubkit"
)

func TestToolSpecs(t *testing.T) {
	names := map[string]bool{}
	for _, ts := range githubkit.Tools() {
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
