package takeover_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// TestDeclaration checks the declaration is valid and that its config
// items are exactly the settings ParseSettings reads, with its defaults.
func TestDeclaration(t *testing.T) {
	d, err := takeover.Declaration()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(d.Commands) != 1 || d.Commands[0].Name != "ho" || len(d.Tools) != 1 || d.Tools[0].Name != "request_human" || len(d.Events) != 3 || len(d.Pages) != 1 || d.Pages[0].ID != takeover.ConsolePageID {
		t.Errorf("components: %d commands, %d tools, events %v, pages %v", len(d.Commands), len(d.Tools), d.Events, d.Pages)
	}
	// the handoff tool's prompt is honest about what it does and does not do
	if p := strings.ToLower(d.Tools[0].LLMPrompt); !strings.Contains(p, "waiting") || !strings.Contains(p, "alerts the operators") || !strings.Contains(p, "does not stop you") || !strings.Contains(p, "say_to_user") {
		t.Errorf("request_human's llm_prompt: %q", d.Tools[0].LLMPrompt)
	}
	defaults := map[string]any{}
	for _, c := range d.Config {
		defaults[c.Name] = c.Default
	}
	raw, err := json.Marshal(defaults)
	if err != nil {
		t.Fatal(err)
	}
	got, problems := model.ParseSettings(raw, 0)
	if len(problems) != 0 || !reflect.DeepEqual(got, model.DefaultSettings()) {
		t.Errorf("declared defaults parse to %+v (problems %v), want %+v", got, problems, model.DefaultSettings())
	}
	var fields map[string]any
	b, err := json.Marshal(model.DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	if len(fields) != len(d.Config) {
		t.Errorf("%d config items, Settings has %d fields", len(d.Config), len(fields))
	}
	for name := range fields {
		if _, ok := d.ConfigItem(name); !ok {
			t.Errorf("setting %s not declared", name)
		}
	}
}
