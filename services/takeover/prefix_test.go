package takeover_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
)

// commandAs sends `<prefix>ho <rest>` as LangBot 4.12 does for a bot with
// that prefix: the prefix in the command's prefix field (withField) or
// only in its full text, as a host that does not send the field.
func (h *harness) commandAs(b binding.Binding, config string, priv int, ses wire.Session, prefix, rest string, withField bool) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	cmd := &wire.Command{Name: "ho", Params: strings.Fields(rest), FullText: prefix + "ho " + rest, Session: ses, Privilege: priv}
	if withField {
		cmd.Prefix = prefix
	}
	raw, err := h.inv.Invoke(ctx, takeover.Plugin, wire.EndpointCommand, bus.NewInvocationID(), &wire.Request{
		Binding: b, Config: json.RawMessage(config), Command: cmd,
	})
	if err != nil {
		h.t.Fatalf("command %q: %v", prefix+"ho "+rest, err)
	}
	var r wire.CommandReply
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Returns) == 0 {
		h.t.Fatalf("command reply %s: %v", raw, err)
	}
	return r.Returns[0].Text
}

// TestCommandAnswersUseTheTypedPrefix (issue 28): on a bot whose prefix
// is `/` (LangBot 4.12's default), every answer of the ho command that
// names a command names it with `/`, whether the host sends the prefix
// field or only the full text, although the installation's command_prefix
// is the default `!`; in both languages.
func TestCommandAnswersUseTheTypedPrefix(t *testing.T) {
	h := newHarness(t)
	b := newBinding("prefix-typed")
	h.attach(b, opConfig, true)
	h.mustEvent(b, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "61", "61", plain("help")))
	bustest.Eventually(t, "recorded", func() bool { return h.record(b, sidOf("bot-a", "person", "61")) != nil })
	zh := `{"trigger_words":["help"],"operator_chats":["op-bot:group:900"],"language":"zh_Hans"}`
	for _, c := range []struct {
		name, config, rest, want string
		field                    bool
	}{
		{"help", opConfig, "help", "/ho take N", true},
		{"help from the full text", opConfig, "help", "/ho release N", false},
		{"unknown", opConfig, "frobnicate", "/ho help", true},
		{"usage", opConfig, "take", "/ho take 2 30m", true},
		{"bad number", opConfig, "take x", "/ho list", true},
		{"unknown number", opConfig, "release 42", "/ho list", false},
		{"list", opConfig, "list", "/ho take", true},
		{"zh help", zh, "help", "/ho pause [30m] / /ho resume", true},
		{"zh list", zh, "list", "编号用于 /ho take", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := h.commandAs(b, c.config, 1, opSession, "/", c.rest, c.field)
			if !strings.Contains(got, c.want) || strings.Contains(got, "!ho") {
				t.Errorf("/ho %s answered %q: want %q and no !ho", c.rest, got, c.want)
			}
		})
	}
	// a bot with `!` still reads `!`
	if got := h.commandAs(b, opConfig, 1, opSession, "!", "help", true); !strings.Contains(got, "!ho list") || strings.Contains(got, "/ho") {
		t.Errorf("!ho help answered %q", got)
	}
}

// TestAlertsUseTheConfiguredPrefix (issue 28): an alert into an operator
// chat answers no command, so it names the commands with the
// installation's command_prefix, `!` when none is set.
func TestAlertsUseTheConfiguredPrefix(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct{ name, config, want, not string }{
		{"default", opConfig, "!ho list", "/ho"},
		{"slash", `{"trigger_words":["help"],"operator_chats":["op-bot:group:900"],"command_prefix":"/"}`, "/ho list", "!ho"},
		{"zh slash", `{"trigger_words":["help"],"operator_chats":["op-bot:group:900"],"command_prefix":" / ","language":"zh_Hans"}`, "/ho list 查看编号", "!ho"},
		{"invalid falls back", `{"trigger_words":["help"],"operator_chats":["op-bot:group:900"],"command_prefix":"run this"}`, "!ho list", "run this"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBinding("prefix-alert-" + strings.ReplaceAll(c.name, " ", "-"))
			h.attach(b, c.config, true)
			h.mustEvent(b, c.config, takeover.EventPersonMessage, "bot-a", msgData("person", "62", "62", plain("help")))
			bustest.Eventually(t, "an alert", func() bool { return len(alertsTo(h, b)) > 0 })
			for _, calls := range alertsTo(h, b) {
				text := calls[0].SendMessage().MessageChain[0].Text
				if !strings.Contains(text, c.want) || strings.Contains(text, c.not) {
					t.Errorf("alert %q: want %q, not %q", text, c.want, c.not)
				}
			}
		})
	}
}

// TestResumeWithSlashPassesAPausedChat: `/ho resume` in a chat an admin
// paused reaches the command (the event is not blocked), as `!ho resume`
// does; other messages stay blocked.
func TestResumeWithSlashPassesAPausedChat(t *testing.T) {
	h := newHarness(t)
	b := newBinding("prefix-resume")
	h.attach(b, `{}`, true)
	h.takeOver(b, `{}`, "bot-a", "63")
	for text, blocked := range map[string]bool{"/ho resume": false, "!ho resume": false, "hello": true, "/house": true} {
		if r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", "63", "63", plain(text))); r.PreventDefault != blocked {
			t.Errorf("%q in a taken chat: blocked %v, want %v", text, r.PreventDefault, blocked)
		}
	}
}

// TestListNamesTheHolder (issue 32): `!ho list` says who holds each chat:
// a takeover started by the user's trigger word has no operator yet (it
// read "taken over by , 9m left"), one from LangBot's page is held by "an
// operator", one taken by command names the operator; in both languages.
func TestListNamesTheHolder(t *testing.T) {
	h := newHarness(t)
	b := newBinding("list-holder")
	h.attach(b, opConfig, true)
	h.mustEvent(b, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "64", "64", plain("help")))
	bustest.Eventually(t, "taken by the trigger", func() bool {
		r := h.record(b, sidOf("bot-a", "person", "64"))
		return r != nil && r.Takeover.Active
	})
	list := h.command(b, opConfig, 1, opSession, "!ho list")
	if !strings.Contains(list, "taken over on a trigger word, no operator has answered yet") || strings.Contains(list, "by ,") {
		t.Fatalf("a trigger-word takeover listed as %q", list)
	}
	zh := `{"trigger_words":["help"],"operator_chats":["op-bot:group:900"],"language":"zh_Hans"}`
	if list := h.command(b, zh, 1, opSession, "!ho list"); !strings.Contains(list, "因触发词被接管，尚无客服回复") || strings.Contains(list, "由  接管") {
		t.Fatalf("zh_Hans: a trigger-word takeover listed as %q", list)
	}
	// an operator takes it by command: the list names them
	h.command(b, opConfig, 1, opSession, "!ho take 1")
	if list := h.command(b, opConfig, 1, opSession, "!ho list"); !strings.Contains(list, "taken over by 77,") {
		t.Fatalf("after !ho take by 77: %q", list)
	}
	// LangBot's page names no caller: "an operator"
	sid := h.takeOver(b, opConfig, "bot-a", "65")
	_ = sid
	if list := h.command(b, opConfig, 1, opSession, "!ho list"); !strings.Contains(list, "taken over by an operator,") {
		t.Fatalf("after a page takeover: %q", list)
	}
}

// TestStorage503NamesTheComponent (issue 32): when the service's storage
// fails, a page call gets 503 with reason storage_unavailable and a
// message naming the service's storage, and a command answers in the
// installation's language naming it too.
func TestStorage503NamesTheComponent(t *testing.T) {
	h := newHarness(t)
	b := newBinding("storage-503")
	h.attach(b, opConfig, true)
	h.mustEvent(b, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "66", "66", plain("x")))
	sid := sidOf("bot-a", "person", "66")
	bustest.Eventually(t, "recorded", func() bool { return h.record(b, sid) != nil })
	sc, _ := b.Scope()
	takeover.SetFault(h.svc, func(op string, s binding.Scope) error {
		if s == sc {
			return errFault
		}
		return nil
	})
	err := h.page(b, opConfig, "POST", "/takeover", map[string]string{"sid": sid}, nil)
	var e *wire.Error
	if !errors.As(err, &e) || e.Code != 503 || e.Reason != takeover.ReasonStorageUnavailable || !strings.Contains(e.Message, "takeover service") || !strings.Contains(e.Message, "storage") {
		t.Fatalf("a storage failure: %v, want 503 %s naming the service's storage", err, takeover.ReasonStorageUnavailable)
	}
	if got := h.command(b, opConfig, 2, opSession, "!ho list"); !strings.Contains(got, "HumanTakeover service: its storage (NATS JetStream)") {
		t.Errorf("a command during the failure answered %q", got)
	}
	takeover.SetFault(h.svc, nil)
}

// TestPackageUnavailableTextNamesTheComponent (issue 32): what the package
// in LangBot says when it gets no answer (a page's "503: <text>", a
// command's line) names the service and NATS, in both languages, not the
// service's storage.
func TestPackageUnavailableTextNamesTheComponent(t *testing.T) {
	d, err := takeover.Declaration()
	if err != nil {
		t.Fatal(err)
	}
	u := d.Texts.Unavailable
	if !strings.Contains(u.EnUS, "takeover service over NATS") || strings.Contains(u.EnUS, "storage") {
		t.Errorf("en_US: %q", u.EnUS)
	}
	if !strings.Contains(u.ZhHans, "NATS") || !strings.Contains(u.ZhHans, "人工接管服务") {
		t.Errorf("zh_Hans: %q", u.ZhHans)
	}
}
