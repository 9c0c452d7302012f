package takeover_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
)

// auditLines returns the console audit lines in logs, as
// "action sid operator outcome".
func auditLines(logs *bustest.LogBuffer) []string {
	var out []string
	for _, line := range strings.Split(logs.String(), "\n") {
		var l struct{ Msg, Action, SID, Operator, Outcome string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "console action" {
			out = append(out, l.Action+" "+l.SID+" "+l.Operator+" "+l.Outcome)
		}
	}
	return out
}

// TestTakeCommandDuration: `!ho take N <duration>` takes the chat over for
// that duration, not the installation's takeover_timeout; a bare number
// is minutes.
func TestTakeCommandDuration(t *testing.T) {
	h := newHarness(t)
	b := newBinding("take-duration")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"takeover_timeout":600,"operator_chats":["op-bot:group:900"]}`
	h.attach(b, cfg, true)
	sid := sidOf("bot-a", "person", "52")
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "52", "52", plain("help")))
	bustest.Eventually(t, "recorded", func() bool { return h.record(b, sid) != nil })
	h.command(b, cfg, 1, opSession, "!ho list")
	got := h.command(b, cfg, 1, opSession, "!ho take 1 45m")
	if !strings.Contains(got, "45m") {
		t.Errorf("take 45m answered %q", got)
	}
	r := h.record(b, sid)
	if r == nil || !r.Takeover.Active || r.Takeover.ExpiresAt-r.Takeover.StartedAt != 45*60_000 {
		t.Fatalf("after take 1 45m: %+v, want 45 min", r.Takeover)
	}
	h.command(b, cfg, 1, opSession, "!ho release 1")
	h.command(b, cfg, 1, opSession, "!ho take 1 90")
	r = h.record(b, sid)
	if !r.Takeover.Active || r.Takeover.ExpiresAt-r.Takeover.StartedAt != 90*60_000 {
		t.Fatalf("after take 1 90: %+v, want 90 min", r.Takeover)
	}
	if got := h.command(b, cfg, 1, opSession, "!ho take 1 soon"); !strings.Contains(got, "duration") {
		t.Errorf("a bad duration answered %q", got)
	}
	if r2 := h.record(b, sid); !reflect.DeepEqual(r2, r) {
		t.Fatalf("a bad duration changed the record: %+v, was %+v", r2.Takeover, r.Takeover)
	}
}

// TestRefusedCommandsChangeNothing: take, reply and release from a chat
// that is neither an operator chat nor an admin's are refused and change
// nothing: the session record, its history, the audit and the host's
// sends are as before.
func TestRefusedCommandsChangeNothing(t *testing.T) {
	var logs bustest.LogBuffer
	h := newLoggedHarness(t, &logs)
	b := newBinding("refused")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900"]}`
	h.attach(b, cfg, true)
	sid := sidOf("bot-a", "person", "53")
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "53", "53", plain("help")))
	bustest.Eventually(t, "recorded", func() bool { return h.record(b, sid) != nil })
	h.command(b, cfg, 1, opSession, "!ho list")
	h.command(b, cfg, 1, opSession, "!ho take 1")
	// group 901 was an operator chat and listed the chats: it keeps its
	// numbers after it leaves the setting
	former := wire.Session{LauncherType: "group", LauncherID: "901", SenderID: "78", BotUUID: "op-bot"}
	if got := h.command(b, `{"operator_chats":["op-bot:group:900","op-bot:group:901"]}`, 1, former, "!ho list"); !strings.Contains(got, "\n1. ") {
		t.Fatalf("list in group 901 while an operator chat: %q", got)
	}
	alertsSettled(t, h)

	before, history, audit, sends := h.record(b, sid), h.historyCount(b, sid), auditLines(&logs), len(h.host.Sends())
	if !before.Takeover.Active || len(audit) != 1 {
		t.Fatalf("setup: takeover %+v, audit %q", before.Takeover, audit)
	}
	// a user's chat of the operator chat's bot, the user's own chat and
	// the former operator chat: none is an operator chat now, and no
	// sender an admin
	for _, ses := range []wire.Session{
		{LauncherType: "person", LauncherID: "5", SenderID: "5", BotUUID: "op-bot"},
		{LauncherType: "person", LauncherID: "53", SenderID: "53", BotUUID: "bot-a"},
		former,
	} {
		for _, cmd := range []string{"!ho take 1 5m", "!ho reply 1 not from an operator", "!ho release 1", "!ho list"} {
			if got := h.command(b, cfg, 1, ses, cmd); !strings.Contains(got, "Only admins") {
				t.Errorf("%s from %s:%s answered %q, want a refusal", cmd, ses.LauncherType, ses.LauncherID, got)
			}
		}
	}
	alertsSettled(t, h)
	if after := h.record(b, sid); !reflect.DeepEqual(after, before) {
		t.Errorf("a refused command changed the record:\n%+v\nwas\n%+v", after, before)
	}
	if got := h.historyCount(b, sid); got != history {
		t.Errorf("history %d entries, was %d", got, history)
	}
	if got := auditLines(&logs); !reflect.DeepEqual(got, audit) {
		t.Errorf("audit %q, was %q", got, audit)
	}
	if got := len(h.host.Sends()); got != sends {
		t.Errorf("%d host sends, was %d", got, sends)
	}
	if strings.Contains(logs.String(), "not from an operator") {
		t.Error("the refused reply's text is in the logs")
	}
}

// TestToolWithoutOperatorChats: request_human in an installation without
// operator chats says operators_alerted=false, still marks the chat
// waiting, and sends nothing.
func TestToolWithoutOperatorChats(t *testing.T) {
	h := newHarness(t)
	b := newBinding("tool-alone")
	cfg := `{"trigger_words":["help"]}`
	h.attach(b, cfg, true)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	raw, err := h.inv.Invoke(ctx, takeover.Plugin, wire.EndpointTool, bus.NewInvocationID(), &wire.Request{
		Binding: b, Config: json.RawMessage(cfg),
		Tool: &wire.Tool{Name: "request_human", Parameters: json.RawMessage(`{"reason":"wants a person"}`),
			Session: wire.Session{LauncherType: "person", LauncherID: "62", SenderID: "62", BotUUID: "bot-a"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if alerted, ok := res.Result["operators_alerted"]; !ok || alerted != false || res.Result["status"] != "waiting" || res.Result["say_to_user"] == "" {
		t.Fatalf("tool result %s: want status waiting and operators_alerted false", raw)
	}
	r := h.record(b, sidOf("bot-a", "person", "62"))
	if r == nil || !r.Unread || r.TriggeredAt == 0 || r.Takeover.Active {
		t.Fatalf("the chat is not waiting: %+v", r)
	}
	alertsSettled(t, h)
	if n := sendsOf(h, b); n != 0 {
		t.Fatalf("%d sends without operator chats", n)
	}
	// the chat is listed as waiting to an admin
	admin := wire.Session{LauncherType: "person", LauncherID: "1", SenderID: "1", BotUUID: "bot-a"}
	if got := h.command(b, cfg, 2, admin, "!ho list"); !strings.Contains(got, "\n1. ") {
		t.Fatalf("!ho list after the tool: %q", got)
	}
}

// sendsOf counts the host's sends for b's installation.
func sendsOf(h *harness, b binding.Binding) int {
	n := 0
	for _, c := range h.host.Sends() {
		if c.Request.Binding.InstallationUUID == b.InstallationUUID {
			n++
		}
	}
	return n
}
