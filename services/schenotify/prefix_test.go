package schenotify_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/wire"
)

// cmdAs sends "<prefix><word> <rest>" as a LangBot bot with that prefix
// does: with the prefix field (withField) or only in the full text.
func (e *env) cmdAs(t testing.TB, cfg string, s wire.Session, prefix, word, rest string, withField bool) string {
	t.Helper()
	c := &wire.Command{Name: word, Params: strings.Fields(rest), FullText: strings.TrimSpace(prefix + word + " " + rest), Session: s}
	if withField {
		c.Prefix = prefix
	}
	raw, err := e.call(t, wire.EndpointCommand, "", &wire.Request{Binding: bind("prefix-cmds", 1), Config: json.RawMessage(cfg), Command: c})
	if err != nil {
		t.Fatalf("command %q: %v", c.FullText, err)
	}
	var reply wire.CommandReply
	if err := json.Unmarshal(raw, &reply); err != nil || len(reply.Returns) != 1 {
		t.Fatalf("command %q reply %s: %v", c.FullText, raw, err)
	}
	return reply.Returns[0].Text
}

// TestCommandAnswersUseTheTypedPrefix (issue 28): on a bot whose prefix
// is `/` (LangBot 4.12's default), the sche and dsche answers that name a
// command (help, usage, errors, list footer) name it with `/`, from the
// prefix field or from the full text alone, in both languages, although
// the installation's command_prefix is the default `!`.
func TestCommandAnswersUseTheTypedPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	s := sess("bot", "person", "prefix-1")
	for _, c := range []struct {
		name, cfg, word, rest, want string
		field                       bool
	}{
		{"help", cfgEN, "sche", "help", "/sche add in <duration>", true},
		{"help from the full text", cfgEN, "sche", "help", "/dsche <id> | <index> | all", false},
		{"add usage", cfgEN, "sche", "add", "Usage: /sche add <when> <text>", true},
		{"unreadable time", cfgEN, "sche", "add blorp zzz", "/sche add in 20 minutes tea", true},
		{"snooze with nothing delivered", cfgEN, "sche", "snooze", "/sche snooze <id> <when>", false},
		{"id usage", cfgEN, "sche", "pause", "Usage: /sche pause <id>. Send /sche", true},
		{"dsche usage", cfgEN, "dsche", "", "/dsche <id>, /dsche <index> or /dsche all. Send /sche", true},
		{"dsche invalid", cfgEN, "dsche", "zz!zz", "/dsche i <index>", false},
		{"zh help", cfgZH, "sche", "help", "/sche add in <时长> <内容> - 如 /sche add in 90m", true},
		{"zh dsche usage", cfgZH, "dsche", "", "用法：/dsche <编号>", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := e.cmdAs(t, c.cfg, s, "/", c.word, c.rest, c.field)
			if !strings.Contains(got, c.want) || strings.Contains(got, "!sche") || strings.Contains(got, "!dsche") {
				t.Errorf("/%s %s answered %q: want %q and no !sche", c.word, c.rest, got, c.want)
			}
		})
	}
	if got := e.cmdAs(t, cfgEN, s, "!", "sche", "add", true); !strings.Contains(got, "Usage: !sche add") || strings.Contains(got, "/sche") {
		t.Errorf("!sche add answered %q", got)
	}
}

// TestToolTextsUseTheConfiguredPrefix (issue 28): a tool result the LLM
// reads answers no command, so it names commands with the installation's
// command_prefix, `!` when none is set.
func TestToolTextsUseTheConfiguredPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	s := sess("bot", "person", "prefix-2")
	for cfg, want := range map[string]string{
		cfgEN: "!sche snooze <id>",
		`{"language":"en_US","timezone":"UTC","command_prefix":"/"}`:   "/sche snooze <id>",
		`{"language":"zh_Hans","timezone":"UTC","command_prefix":"/"}`: "/sche snooze <编号>",
	} {
		r := e.tool(t, bind("prefix-tools", 1), cfg, s, "snooze_notification", map[string]any{})
		text, _ := r["text"].(string)
		if r["code"] != "nothing_to_snooze" || !strings.Contains(text, want) {
			t.Errorf("%s: snooze_notification gave %v, want text with %q", cfg, r, want)
		}
	}
}
