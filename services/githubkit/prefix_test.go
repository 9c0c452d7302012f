package githubkit_test

import (
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// TestPrefixFromTheBotOrTheSetting (issue 28): gh answers name commands
// with the prefix the user typed (the prefix field, or the full text), and
// with the installation's command_prefix when neither tells it; in both
// languages.
func TestPrefixFromTheBotOrTheSetting(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	cfg := h.baseConfig("zh_Hans", "token-a", 120)
	cfg["command_prefix"] = "/"
	a := newInst(t, "a", cfg)
	h.attach(a, true)
	withPrefix := func(p string) cmdOpt { return func(r *wire.Request) { r.Command.Prefix = p } }
	for _, c := range []struct {
		name, line string
		opts       []cmdOpt
		want, not  string
	}{
		{"typed in the field", "help", []cmdOpt{withPrefix("!"), withFullText("!gh help")}, "!gh repo", "/gh"},
		{"typed in the text", "cards", []cmdOpt{withFullText("！gh cards")}, "！gh cards", "/gh"},
		{"neither: the setting", "repo", []cmdOpt{withFullText("")}, "/gh repo", "!gh"},
		{"slash bot", "subs", []cmdOpt{withPrefix("/"), withFullText("/gh subs")}, "/gh sub", "!gh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := h.cmd(a, c.line, c.opts...)
			if !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
				t.Errorf("gh %s answered %q: want %q, not %q", c.line, got, c.want, c.not)
			}
		})
	}
}
