package plugin_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/plugin"
)

func valid() plugin.Declaration {
	t := plugin.Text{EnUS: "x", ZhHans: "x"}
	return plugin.Declaration{
		Plugin:   "demo",
		Meta:     plugin.Meta{Name: "Demo", Label: t, Description: t, Original: plugin.Identity{Author: "someone", Name: "Demo"}},
		Commands: []plugin.Command{{Name: "demo", Label: t, Description: t}},
		Tools:    []plugin.Tool{{Name: "demo_tool", Label: t, Description: t, LLMPrompt: "does x", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Events:   []string{"GroupMessageReceived"},
		Pages:    []plugin.Page{{ID: "console", Label: t}},
		Config: []plugin.ConfigItem{
			{Name: "api_token", Type: "string", Default: "", Secret: true, Label: t, Description: t},
			{Name: "mode", Type: "select", Default: "a", Options: []plugin.Option{{Name: "a", Label: t}}, Label: t, Description: t},
			{Name: "n", Type: "integer", Default: 3, Label: t, Description: t},
		},
		Texts: plugin.Texts{Unavailable: t, Failed: t},
	}
}

func TestValidate(t *testing.T) {
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid declaration refused: %v", err)
	}
	tests := []struct {
		name   string
		change func(*plugin.Declaration)
		want   string
	}{
		{"plugin name", func(d *plugin.Declaration) { d.Plugin = "Demo.x" }, "plugin"},
		{"empty zh text", func(d *plugin.Declaration) { d.Commands[0].Label.ZhHans = "" }, "zh_Hans text missing"},
		{"catalogue key as text", func(d *plugin.Declaration) { d.Meta.Label.EnUS = "config.x.label" }, "en_US text missing"},
		{"duplicate command", func(d *plugin.Declaration) { d.Commands = append(d.Commands, d.Commands[0]) }, "declared twice"},
		{"command with dot", func(d *plugin.Declaration) { d.Commands[0].Name = "a.b" }, "command"},
		{"tool schema", func(d *plugin.Declaration) { d.Tools[0].Parameters = json.RawMessage(`[]`) }, "JSON Schema"},
		{"empty prompt", func(d *plugin.Declaration) { d.Tools[0].LLMPrompt = " " }, "llm_prompt"},
		{"unknown event", func(d *plugin.Declaration) { d.Events = []string{"Whatever"} }, "not one of"},
		{"observe without events", func(d *plugin.Declaration) { d.Events, d.ObserveEvents = nil, true }, "observe_events without events"},
		{"gate without events", func(d *plugin.Declaration) { d.Events, d.EventGate = nil, true }, "event_gate needs events"},
		{"gate of observed events", func(d *plugin.Declaration) { d.ObserveEvents, d.EventGate = true, true }, "event_gate needs events"},
		{"form type", func(d *plugin.Declaration) { d.Config[2].Type = "number" }, "form type"},
		{"secret not masked", func(d *plugin.Declaration) { d.Config[0].Name = "api_key_value" }, "secret"},
		{"masked not secret", func(d *plugin.Declaration) { d.Config[0].Secret = false }, "secret"},
		{"select default", func(d *plugin.Declaration) { d.Config[1].Default = "b" }, "not an option"},
		{"default type", func(d *plugin.Declaration) { d.Config[2].Default = "3" }, "does not fit"},
		{"command with a prefix", func(d *plugin.Declaration) { d.Commands[0].Description.EnUS = "try !demo list" }, "names !demo with a fixed prefix"},
		{"command with a slash", func(d *plugin.Declaration) { d.Config[2].Description.ZhHans = "用 /demo 关闭" }, "names /demo"},
		{"placeholder", func(d *plugin.Declaration) { d.Tools[0].Description.EnUS = "{prefix}demo list" }, "placeholders [prefix]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := valid()
			tt.change(&d)
			err := d.Validate()
			if !errors.Is(err, plugin.ErrDeclaration) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want ErrDeclaration mentioning %q", err, tt.want)
			}
		})
	}
}

func TestText(t *testing.T) {
	tx := plugin.Text{EnUS: "hello", ZhHans: "你好"}
	if tx.In("zh_Hans") != "你好" || tx.In("fr") != "hello" || (plugin.Text{EnUS: "e"}).In("zh_Hans") != "e" {
		t.Error("In")
	}
	b, err := json.Marshal(tx)
	if err != nil || string(b) != `{"en_US":"hello","zh_Hans":"你好"}` {
		t.Errorf("%s %v", b, err)
	}
}
