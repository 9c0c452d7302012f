package takeover_test

import (
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/console"
)

func TestMessagesCatalogue(t *testing.T) {
	c, err := takeover.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Has("en_US") || !c.Has("zh_Hans") {
		t.Fatalf("languages %v", c.Languages())
	}
	fields := []string{"takeover_timeout", "trigger_words", "auto_takeover_on_trigger", "trigger_match", "trigger_case_sensitive",
		"takeover_on_reply", "history_limit", "record_groups", "user_notice_on_takeover", "user_notice_on_release"}
	for _, f := range fields {
		for _, suffix := range []string{".label", ".description"} {
			key := "config." + f + suffix
			for _, lang := range []string{"en_US", "zh_Hans"} {
				if got := c.Text(lang, key, nil); got == key || got == "" {
					t.Errorf("%s %s missing", lang, key)
				}
			}
		}
	}
	// what the service writes into operator chats and the tool's text are
	// the team's own in both languages, not an English fallback
	for _, key := range c.Keys() {
		if !strings.HasPrefix(key, "alert.") && !strings.HasPrefix(key, "note.") && !strings.HasPrefix(key, "cmd.") && !strings.HasPrefix(key, "tool.") {
			continue
		}
		if key == "note.where.chat" {
			continue // "{kind} {id}": placeholders only
		}
		if c.Text("zh_Hans", key, nil) == c.Text("en_US", key, nil) {
			t.Errorf("%s is not translated", key)
		}
	}
	for _, reason := range []string{"legacy_read_only", "installation_inactive", "reply_in_progress", "send_failed", "outcome_unknown", "unreadable"} {
		if c.Text("zh_Hans", "error."+reason, nil) == c.Text("en_US", "error."+reason, nil) || strings.HasPrefix(c.Text("en_US", "error."+reason, nil), "error.") {
			t.Errorf("reason %s not translated", reason)
		}
	}
}

// TestConsoleRelayWordsMatchShow: the console names the operator chats
// relaying a chat in the words of `!ho show N` (two catalogues, one
// wording), in both languages.
func TestConsoleRelayWordsMatchShow(t *testing.T) {
	svc, err := takeover.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	con, err := console.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range []string{"en_US", "zh_Hans"} {
		place := func(c *i18n.Catalog, kindKey, kind string) string {
			return c.Text(lang, kindKey, map[string]string{"kind": kind, "id": "77"})
		}
		svcWhere := place(svc, "note.where.chat", svc.Text(lang, "chat.type.person", nil)) + svc.Text(lang, "relay.list_sep", nil) +
			place(svc, "note.where.chat", svc.Text(lang, "chat.type.group", nil))
		conWhere := place(con, "chat.relayPlace", con.Text(lang, "chat.relayPerson", nil)) + con.Text(lang, "chat.relaySep", nil) +
			place(con, "chat.relayPlace", con.Text(lang, "chat.relayGroup", nil))
		show := svc.Text(lang, "cmd.show.relay", map[string]string{"where": svcWhere})
		page := con.Text(lang, "chat.relayedTo", map[string]string{"where": conWhere})
		if show != page || !strings.Contains(show, "77") {
			t.Errorf("%s: the console shows %q, !ho show says %q", lang, page, show)
		}
	}
}
