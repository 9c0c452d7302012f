package acceptance_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/cmd/builtin"
	"github.com/langbot-nats/plugins/pkg/lbpkg"
	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestEmptyConfig is issue 32 D1 through LangBot's real runtime: LangBot
// 4.10.8 creates every installation with config {}, and the SDK merges no
// manifest default. Each package must install with {} (missing items take
// the manifest default), and a config that cannot be used (a cleared
// address, a bad prefix) must leave the worker running, with every
// command, tool and page answering "not configured: <item>" in the user's
// language with the installation's instance and workspace, and every
// event passing.
func TestEmptyConfig(t *testing.T) {
	e := startEnv(t)
	ctx := ctxT(t, 10*time.Minute)
	tools := map[string]string{githubkit.Plugin: githubkit.ToolSearch, takeover.Plugin: "request_human", schenotify.Plugin: schenotify.ToolNow}
	commands := map[string]string{githubkit.Plugin: "!gh help", takeover.Plugin: "!ho list", schenotify.Plugin: "!sche"}
	for _, plugin := range builtin.Names() {
		t.Run(plugin, func(t *testing.T) {
			pkg := e.pkgs[plugin]
			in, err := e.rt.Install(ctx, pkg.Data, pkg.Author, pkg.Name, map[string]any{})
			if err != nil {
				t.Fatalf("install with config {}: %v", err)
			}
			plugins, err := e.rt.ListPlugins(ctx, in)
			if err != nil || len(plugins) != 1 || plugins[0].Status != "initialized" {
				t.Fatalf("list_plugins = %+v, %v", plugins, err)
			}
			// the defaults were taken, by name only
			if logs := e.rt.Logs(); !strings.Contains(logs, "manifest defaults used") || !strings.Contains(logs, "nats_url") {
				t.Fatalf("no log line naming the defaulted items:\n%s", logs)
			}

			cases := []struct {
				item, lang string
				config     map[string]any
			}{
				{"nats_url", "zh_Hans", map[string]any{"nats_url": "", "nats_password": markerPassword, "language": "zh_Hans"}},
				{"nats_url", "en_US", map[string]any{"nats_url": "http://" + markerUser + ":4222", "language": "en_US"}},
				{"subject_prefix", "en_US", map[string]any{"nats_url": e.stack.srv.URL(), "subject_prefix": "a.b", "language": "en_US"}},
			}
			for _, c := range cases {
				mark := len(e.rt.Logs())
				if err := e.rt.Reconfigure(ctx, in, c.config); err != nil {
					t.Fatalf("%s: reconfigure: %v", c.item, err)
				}
				want := strings.NewReplacer("{item}", c.item, "{instance}", in.Binding.InstanceUUID,
					"{workspace}", in.Binding.WorkspaceUUID).Replace(lbpkg.NotConfigured.In(c.lang))
				rets, err := e.rt.Command(ctx, in, commands[plugin], group, 1)
				if err != nil || len(rets) != 1 || runtimetest.Texts(rets)[0] != want {
					t.Fatalf("%s: %s = %q, %v; want %q", c.item, commands[plugin], runtimetest.Texts(rets), err, want)
				}
				res, err := e.rt.Tool(ctx, in, tools[plugin], map[string]any{"reason": "x", "query": "x"}, group)
				var tr struct {
					Error struct{ Code, Message string } `json:"error"`
				}
				if err != nil || json.Unmarshal(res, &tr) != nil || tr.Error.Code != "not_configured" || tr.Error.Message != want {
					t.Fatalf("%s: tool = %s, %v", c.item, res, err)
				}
				if plugin == takeover.Plugin {
					page, err := e.rt.Page(ctx, in, "console", "/info", "GET", map[string]any{})
					if err != nil || page.Error != "503 not_configured: "+want {
						t.Fatalf("%s: page = %+v, %v", c.item, page, err)
					}
				}
				if plugin != schenotify.Plugin {
					res, err := e.rt.Emit(ctx, in, runtimetest.Event{Name: "GroupMessageReceived", Session: group, Text: "hello"})
					if err != nil || res.PreventDefault || res.PreventPostorder {
						t.Fatalf("%s: event = %+v, %v", c.item, res, err)
					}
				}
				logs := e.rt.Logs()[mark:]
				line := "is not configured: " + c.item
				if !strings.Contains(logs, line) || !strings.Contains(logs, "instance "+in.Binding.InstanceUUID+", workspace "+in.Binding.WorkspaceUUID) {
					t.Fatalf("%s: the log does not say %q with the instance and workspace:\n%s", c.item, line, logs)
				}
				for _, secret := range []string{markerPassword, markerUser} {
					if strings.Contains(logs, secret) {
						t.Fatalf("%s: a config value %q is in the log", c.item, secret)
					}
				}
				if strings.Contains(logs, "Traceback") {
					t.Fatalf("%s: a component raised:\n%s", c.item, logs)
				}
			}
		})
	}
}
