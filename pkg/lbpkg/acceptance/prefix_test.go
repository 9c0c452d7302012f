package acceptance_test

import (
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestSlashPrefixThroughPackages (issue 28): on a LangBot 4.12 bot the
// prefix is `/`. Each package forwards the prefix LangBot's command
// context shows, and the answers name every command with `/`, never `!`.
// Then (issue 32) with the takeover service stopped, the console page's
// 503 names what did not answer: the takeover service, over NATS.
func TestSlashPrefixThroughPackages(t *testing.T) {
	e := startEnv(t)
	ctx := ctxT(t, 3*time.Minute)
	admin := runtimetest.Session{LauncherType: "person", LauncherID: "1", SenderID: "1", BotUUID: "bot-1"}
	ins := map[string]*runtimetest.Installation{}
	for _, p := range []string{githubkit.Plugin, takeover.Plugin, schenotify.Plugin} {
		ins[p] = e.install(p)
	}
	for _, c := range []struct{ plugin, text, want string }{
		{takeover.Plugin, "/ho help", "/ho take N"},
		{takeover.Plugin, "/ho take", "Usage: /ho take N"},
		{schenotify.Plugin, "/sche help", "/sche add in <duration>"},
		{schenotify.Plugin, "/dsche", "Usage: /dsche <id>"},
		{githubkit.Plugin, "/gh help", "/gh repo"},
	} {
		rets, err := e.rt.Command(ctx, ins[c.plugin], c.text, admin, 2)
		if err != nil || len(rets) != 1 {
			t.Fatalf("%s = %q, %v", c.text, runtimetest.Texts(rets), err)
		}
		got := runtimetest.Texts(rets)[0]
		if !strings.Contains(got, c.want) || strings.Contains(got, "!ho") || strings.Contains(got, "!sche") || strings.Contains(got, "!dsche") || strings.Contains(got, "!gh") {
			t.Errorf("%s answered %q: want %q and no ! command", c.text, got, c.want)
		}
	}

	e.stack.stop(takeover.Plugin)
	page, err := e.rt.Page(ctx, ins[takeover.Plugin], takeover.ConsolePageID, "/sessions", "GET", map[string]any{})
	if err != nil || !strings.HasPrefix(page.Error, "503") || !strings.Contains(page.Error, "takeover service over NATS") {
		t.Fatalf("the page with the service stopped: %+v, %v; want a 503 naming the takeover service over NATS", page, err)
	}
}
