// Package services_test holds the checks that span the three services.
package services_test

import (
	"testing"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/console"
)

// commandWords are every chat command of the three services.
var commandWords = []string{githubkit.CommandWord, "ho", schenotify.CommandSche, schenotify.CommandDsche}

// TestNoTextHardCodesACommandPrefix (issue 28): LangBot 4.12 gives new
// bots the `/` prefix, so no text of the three services may name a
// command with a prefix of its own. Every catalogue (GitHubKit's,
// HumanTakeover's messages and console, ScheNotify's) is rendered in both
// languages with the prefix `/` and with `!`, every other placeholder
// filled with each command word in turn, and each command a text names
// must carry exactly the prefix it was rendered with: a raw `!ho`,
// `!sche`, `!dsche`, `!gh` (or `！`, `/` forms) outside {prefix} fails.
// The texts LangBot shows itself (command, tool and config descriptions)
// name commands without a prefix: Validate refuses one there.
func TestNoTextHardCodesACommandPrefix(t *testing.T) {
	type loader func() (*i18n.Catalog, error)
	for name, load := range map[string]loader{
		"githubkit":        githubkit.Catalog,
		"takeover":         takeover.Catalog,
		"takeover console": console.Catalog,
		"schenotify":       schenotify.Catalog,
	} {
		t.Run(name, func(t *testing.T) {
			cat, err := load()
			if err != nil {
				t.Fatal(err)
			}
			if got := cat.Languages(); len(got) != 2 || got[0] != i18n.EnUS || got[1] != i18n.ZhHans {
				t.Fatalf("languages %v, want en_US and zh_Hans", got)
			}
			if err := cat.CheckCommandPrefix(commandWords...); err != nil {
				t.Error(err)
			}
		})
	}
	sche, err := schenotify.Declaration()
	if err != nil {
		t.Fatal(err)
	}
	ho, err := takeover.Declaration()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []plugin.Declaration{githubkit.Declaration(), sche, ho} {
		if err := d.Validate(); err != nil {
			t.Error(err)
		}
		if c, ok := d.ConfigItem(settings.CommandPrefixItem); !ok || c.Default != settings.DefaultCommandPrefix {
			t.Errorf("%s: no %s setting with default %q (%+v)", d.Plugin, settings.CommandPrefixItem, settings.DefaultCommandPrefix, c)
		}
	}
}
