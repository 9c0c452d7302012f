package takeover_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

const opConfig = `{"trigger_words":["help"],"operator_chats":["op-bot:group:900","op-bot:person:77"]}`

// alertsTo counts the sends into operator chats.
func alertsTo(h *harness, b binding.Binding) map[string][]bustest.HostCall {
	out := map[string][]bustest.HostCall{}
	for _, c := range h.host.Sends() {
		m := c.SendMessage()
		if m.BotUUID == "op-bot" && c.Request.Binding.InstallationUUID == b.InstallationUUID {
			out[m.TargetType+":"+m.TargetID] = append(out[m.TargetType+":"+m.TargetID], c)
		}
	}
	return out
}

func (h *harness) command(b binding.Binding, config string, priv int, ses wire.Session, full string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	words := strings.Fields(strings.TrimPrefix(full, "!"))
	raw, err := h.inv.Invoke(ctx, takeover.Plugin, wire.EndpointCommand, bus.NewInvocationID(), &wire.Request{
		Binding: b, Config: json.RawMessage(config),
		Command: &wire.Command{Name: words[0], Params: words[1:], FullText: full, Session: ses, Privilege: priv},
	})
	if err != nil {
		h.t.Fatalf("command %q: %v", full, err)
	}
	var r wire.CommandReply
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Returns) == 0 {
		h.t.Fatalf("command reply %s: %v", raw, err)
	}
	return r.Returns[0].Text
}

var opSession = wire.Session{LauncherType: "group", LauncherID: "900", SenderID: "77", BotUUID: "op-bot"}

func TestAlertOncePerOperatorChat(t *testing.T) {
	h := newHarness(t)
	b, quiet := newBinding("alerts"), newBinding("quiet")
	h.attach(b, opConfig, true)
	h.attach(quiet, `{"trigger_words":["help"]}`, true)
	sc, _ := b.Scope()
	long := "help " + strings.Repeat("x", 500)
	h.mustEvent(quiet, `{"trigger_words":["help"]}`, takeover.EventPersonMessage, "bot-a", msgData("person", "41", "41", plain("help")))
	h.mustEvent(b, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain(long)))
	bustest.Eventually(t, "one alert per operator chat", func() bool { return len(alertsTo(h, b)) == 2 })
	for chat, calls := range alertsTo(h, b) {
		if len(calls) != 1 {
			t.Fatalf("%s got %d alerts", chat, len(calls))
		}
		text := calls[0].SendMessage().MessageChain[0].Text
		if strings.Contains(text, long) || utf8.RuneCountInString(text) > 400 || !strings.Contains(text, "!ho") {
			t.Errorf("alert text not capped or without the command: %d runes", utf8.RuneCountInString(text))
		}
		if !strings.Contains(calls[0].IdempotencyKey, sc.String()) {
			t.Errorf("idempotency key %q lacks the scope", calls[0].IdempotencyKey)
		}
	}
	// a repeated trigger while pending: no new alert; a trigger in another
	// chat afterwards alerts, and by then the first chat still has one
	h.mustEvent(b, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("help again")))
	h.mustEvent(b, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "43", "43", plain("help")))
	bustest.Eventually(t, "the second chat's alerts", func() bool {
		n := 0
		for _, calls := range alertsTo(h, b) {
			n += len(calls)
		}
		return n >= 4
	})
	for chat, calls := range alertsTo(h, b) {
		if len(calls) != 2 {
			t.Errorf("%s: %d alerts, want 2 (one per chat asking)", chat, len(calls))
		}
	}
	for _, c := range h.host.Sends() {
		if c.Request.Binding.InstallationUUID == quiet.InstallationUUID {
			t.Errorf("an installation without operator chats sent %+v", c.SendMessage())
		}
	}
}

func TestCommandsWriteWhatTheConsoleWrites(t *testing.T) {
	var logs bustest.LogBuffer
	h := newLoggedHarness(t, &logs)
	b := newBinding("cmds")
	h.attach(b, opConfig, true)
	cfgNoAuto := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900"]}`
	h.attach(b, cfgNoAuto, true)
	sidCmd, sidCon := sidOf("bot-a", "person", "50"), sidOf("bot-a", "person", "51")
	h.mustEvent(b, cfgNoAuto, takeover.EventPersonMessage, "bot-a", msgData("person", "50", "50", plain("help")))
	bustest.Eventually(t, "recorded", func() bool { return h.record(b, sidCmd) != nil })

	if got := h.command(b, cfgNoAuto, 1, wire.Session{LauncherType: "person", LauncherID: "5", SenderID: "5", BotUUID: "op-bot"}, "!ho take 1"); !strings.Contains(got, "Only admins") {
		t.Errorf("a non-operator chat was not refused: %q", got)
	}
	list := h.command(b, cfgNoAuto, 1, opSession, "!ho list")
	n := "1"
	if !strings.Contains(list, "\n1. ") || strings.Contains(list, "\n2. ") {
		t.Fatalf("chat 50 not listed alone: %q", list)
	}
	h.mustEvent(b, cfgNoAuto, takeover.EventPersonMessage, "bot-a", msgData("person", "51", "51", plain("help")))
	bustest.Eventually(t, "recorded", func() bool { return h.record(b, sidCon) != nil })
	if again := h.command(b, cfgNoAuto, 1, opSession, "!ho list"); !strings.Contains(again, "\n1. ") || !strings.Contains(again, "\n2. ") {
		t.Fatalf("second list: %q", again)
	}
	h.command(b, cfgNoAuto, 1, opSession, "!ho take "+n)
	_ = h.pageAs(b, cfgNoAuto, "POST", "/takeover", map[string]any{"sid": sidCon}, "77", nil)
	h.command(b, cfgNoAuto, 1, opSession, "!ho reply "+n+" hello there")
	if err := h.pageAs(b, cfgNoAuto, "POST", "/reply", map[string]any{"sid": sidCon, "idempotency_key": "console-key-1", "text": "hello there"}, "77", nil); err != nil {
		t.Fatal(err)
	}
	rc, rn := h.record(b, sidCmd), h.record(b, sidCon)
	if !rc.Takeover.Active || rc.Takeover.Operator != rn.Takeover.Operator || rc.Takeover.Via != rn.Takeover.Via {
		t.Errorf("command takeover %+v, console %+v", rc.Takeover, rn.Takeover)
	}
	mc, mn := h.messages(b, cfgNoAuto, sidCmd), h.messages(b, cfgNoAuto, sidCon)
	if len(mc.Messages) == 0 || len(mn.Messages) == 0 || mc.Messages[0].Role != model.RoleHuman || mc.Messages[0].Operator != "77" || mn.Messages[0].Operator != "77" {
		t.Fatalf("human entries: command %+v, console %+v", mc.Messages, mn.Messages)
	}
	h.command(b, cfgNoAuto, 1, opSession, "!ho release "+n)
	if err := h.pageAs(b, cfgNoAuto, "DELETE", "/takeover", map[string]any{"sid": sidCon}, "77", nil); err != nil {
		t.Fatal(err)
	}
	// the same audit lines, in the same order, for both paths; no chat text
	audit := map[string][]string{}
	for _, line := range strings.Split(logs.String(), "\n") {
		var l struct{ Msg, Action, SID, Operator, Outcome string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "console action" {
			audit[l.SID] = append(audit[l.SID], l.Action+" "+l.Operator+" "+l.Outcome)
		}
	}
	want := []string{"POST /takeover 77 ok", "POST /reply 77 ok", "DELETE /takeover 77 ok"}
	if !reflect.DeepEqual(audit[sidCmd], want) || !reflect.DeepEqual(audit[sidCon], want) {
		t.Errorf("audit: command %q, console %q, want %q", audit[sidCmd], audit[sidCon], want)
	}
	if strings.Contains(logs.String(), "hello there") {
		t.Error("chat text in the logs")
	}
	rc, rn = h.record(b, sidCmd), h.record(b, sidCon)
	if rc.Takeover.Active || rc.Takeover.ReleasedBy != "77" || rc.Takeover.ReleasedBy != rn.Takeover.ReleasedBy || rc.Takeover.ReleaseReason != rn.Takeover.ReleaseReason {
		t.Errorf("command release %+v, console %+v", rc.Takeover, rn.Takeover)
	}
}

func TestPauseResumeAndTool(t *testing.T) {
	var logs bustest.LogBuffer
	h := newLoggedHarness(t, &logs)
	b := newBinding("pause")
	h.attach(b, opConfig, true)
	user := wire.Session{LauncherType: "person", LauncherID: "60", SenderID: "60", BotUUID: "bot-a"}
	sid := sidOf("bot-a", "person", "60")
	if got := h.command(b, opConfig, 1, user, "!ho pause 10m"); !strings.Contains(got, "Only an admin") {
		t.Errorf("non-admin pause: %q", got)
	}
	if r := h.record(b, sid); r != nil && r.Takeover.Active {
		t.Fatal("a refused pause changed state")
	}
	h.command(b, opConfig, 2, user, "!ho pause 10m")
	r := h.record(b, sid)
	if r == nil || !r.Takeover.Active || r.Takeover.Via != model.ViaConsole || r.Takeover.ExpiresAt-r.Takeover.StartedAt != 600_000 {
		t.Fatalf("after pause: %+v", r)
	}
	if rep := h.mustEvent(b, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "60", "60", plain("hi"))); !rep.PreventDefault {
		t.Error("a paused chat was not blocked")
	}
	if rep := h.mustEvent(b, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "60", "60", plain("!ho resume"))); rep.PreventDefault {
		t.Error("the resume command was blocked in the paused chat")
	}
	h.command(b, opConfig, 2, user, "!ho resume")
	if r := h.record(b, sid); r.Takeover.Active || r.Takeover.ReleaseReason != model.ReasonManual {
		t.Fatalf("after resume: %+v", r.Takeover)
	}
	// pause and resume write the console's audit lines (the refused pause
	// none), with the admin as operator
	var audit []string
	for _, line := range strings.Split(logs.String(), "\n") {
		var l struct{ Msg, Action, SID, Operator, Outcome string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "console action" && l.SID == sid {
			audit = append(audit, l.Action+" "+l.Operator+" "+l.Outcome)
		}
	}
	if want := []string{"POST /takeover 60 ok", "DELETE /takeover 60 ok"}; !reflect.DeepEqual(audit, want) {
		t.Errorf("pause/resume audit %q, want %q", audit, want)
	}

	// the handoff tool: waiting state, an alert, and what to say
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	raw, err := h.inv.Invoke(ctx, takeover.Plugin, wire.EndpointTool, bus.NewInvocationID(), &wire.Request{
		Binding: b, Config: json.RawMessage(opConfig),
		Tool: &wire.Tool{Name: "request_human", Parameters: json.RawMessage(`{"reason":"wants a refund decision"}`),
			Session: wire.Session{LauncherType: "person", LauncherID: "61", SenderID: "61", BotUUID: "bot-a"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Result takeover.ToolResult `json:"result"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Result.Status != "waiting" || !strings.Contains(res.Result.SayToUser, "human") {
		t.Fatalf("tool result %s: %v", raw, err)
	}
	if r := h.record(b, sidOf("bot-a", "person", "61")); r == nil || !r.Unread {
		t.Fatalf("tool did not mark the chat waiting: %+v", r)
	}
	bustest.Eventually(t, "the tool's alert", func() bool {
		for _, calls := range alertsTo(h, b) {
			for _, c := range calls {
				if strings.Contains(c.SendMessage().MessageChain[0].Text, "refund decision") {
					return true
				}
			}
		}
		return false
	})
}

// TestPendingAlertSurvivesRestart: an alert whose delivery failed waits on
// the timer stream, and a new replica delivers it with the same key.
func TestPendingAlertSurvivesRestart(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) { c.NoticeRetry = []time.Duration{time.Second, time.Second} })
	b := newBinding("durable")
	cfg := `{"trigger_words":["help"],"operator_chats":["op-bot:group:900"]}`
	h.attach(b, cfg, true)
	h.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Action == wire.ActionSendMessage && c.SendMessage().BotUUID == "op-bot" {
			return bustest.HostReply{Err: wire.Errorf(wire.ErrUnavailable, "down")}
		}
		return bustest.HostReply{}
	})
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "70", "70", plain("help")))
	bustest.Eventually(t, "a failed alert try", func() bool { return len(alertsTo(h, b)["group:900"]) >= 1 })
	h.stop()
	tries := len(alertsTo(h, b)["group:900"])
	h.host.Respond(nil)
	h.svc = h.startReplica(h.srv.Conn(t))
	h.attach(b, cfg, true)
	bustest.Eventually(t, "the alert after the restart", func() bool { return len(alertsTo(h, b)["group:900"]) > tries })
	calls := alertsTo(h, b)["group:900"]
	for _, c := range calls[1:] {
		if c.IdempotencyKey != calls[0].IdempotencyKey {
			t.Fatalf("retry key %q differs from %q", c.IdempotencyKey, calls[0].IdempotencyKey)
		}
	}
}

// TestAlertRateLimitAndAnswer: an answered alert (mark handled) lets the
// chat alert again, but not within AlertInterval of the last one.
func TestAlertRateLimitAndAnswer(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) { c.AlertInterval = time.Minute })
	b := newBinding("rate")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900"]}`
	h.attach(b, cfg, true)
	count := func() int { return len(alertsTo(h, b)["group:900"]) }
	sid := sidOf("bot-a", "person", "80")
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "80", "80", plain("help")))
	bustest.Eventually(t, "first alert", func() bool { return count() == 1 })
	h.mustPage(b, cfg, "POST", "/mark_handled", map[string]any{"sid": sid}, nil)
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "80", "80", plain("help")))
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "81", "81", plain("help")))
	bustest.Eventually(t, "the other chat's alert", func() bool { return count() >= 2 })
	if count() != 2 {
		t.Fatalf("%d alerts: a chat alerted twice within the interval", count())
	}
	h.mustPage(b, cfg, "POST", "/mark_handled", map[string]any{"sid": sid}, nil)
	h.clock.Advance(time.Minute + time.Second)
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "80", "80", plain("help")))
	bustest.Eventually(t, "an alert after the interval", func() bool { return count() == 3 })
}

// TestAlertOfDeletedSessionNotSent: a session deleted while its alert waits
// for a retry is not alerted later; the consumer re-reads the session
// before each delivery and drops the job.
func TestAlertOfDeletedSessionNotSent(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) { c.NoticeRetry = []time.Duration{2 * time.Second, 2 * time.Second} })
	b := newBinding("alert-deleted")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900"]}`
	h.attach(b, cfg, true)
	h.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Action == wire.ActionSendMessage && c.SendMessage().BotUUID == "op-bot" {
			return bustest.HostReply{Err: wire.Errorf(wire.ErrUnavailable, "down")}
		}
		return bustest.HostReply{}
	})
	sid := sidOf("bot-a", "person", "72")
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "72", "72", plain("help")))
	bustest.Eventually(t, "a failed alert try", func() bool { return len(alertsTo(h, b)["group:900"]) >= 1 })
	h.mustPage(b, cfg, "DELETE", "/session", map[string]string{"sid": sid}, nil)
	tries := len(alertsTo(h, b)["group:900"])
	alertsSettled(t, h)
	if got := len(alertsTo(h, b)["group:900"]); got != tries {
		t.Fatalf("%d alert tries after the session was deleted, want %d", got, tries)
	}
}

// notesTo counts the "taken by" notes sent into operator chats.
func notesTo(h *harness, b binding.Binding) map[string][]bustest.HostCall {
	out := map[string][]bustest.HostCall{}
	for chat, calls := range alertsTo(h, b) {
		for _, c := range calls {
			if strings.Contains(c.IdempotencyKey, ":taken:") {
				out[chat] = append(out[chat], c)
			}
		}
	}
	return out
}

// alertsSettled waits until the alert consumer has handled every queued
// alert and note: an action queues its note before it answers, so after
// this every note it caused has been sent or dropped.
func alertsSettled(t *testing.T, h *harness) {
	t.Helper()
	bustest.CaughtUp(t, h.js, store.TimerStream, store.AlertDurable, wire.Subjects{}.InternalAll(takeover.Plugin, store.KindAlert))
}

// TestTakenNoteToOtherOperatorChats: a take from one operator chat tells
// the other operator chats once who took which chat from where, never the
// taker's own chat; a repeated take by the same operator tells nobody
// again, another claimer within AlertInterval is rate-limited, and a
// console take tells every operator chat. With one operator chat, a take
// from it sends no note.
func TestTakenNoteToOtherOperatorChats(t *testing.T) {
	h := newHarness(t)
	b := newBinding("taken")
	cfg := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900","op-bot:person:77"]}`
	h.attach(b, cfg, true)
	sc, _ := b.Scope()
	group := wire.Session{LauncherType: "group", LauncherID: "900", SenderID: "31", BotUUID: "op-bot"}
	person := wire.Session{LauncherType: "person", LauncherID: "77", SenderID: "77", BotUUID: "op-bot"}
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "50", "Ann", plain("help please")))
	bustest.Eventually(t, "the trigger's alerts", func() bool { return len(alertsTo(h, b)) == 2 })
	h.command(b, cfg, 1, group, "!ho list")
	if got := h.command(b, cfg, 1, group, "!ho take 1"); !strings.Contains(got, "taken over") {
		t.Fatalf("take: %q", got)
	}
	alertsSettled(t, h)
	notes := notesTo(h, b)
	if len(notes["group:900"]) != 0 || len(notes["person:77"]) != 1 {
		t.Fatalf("notes after a take from group 900: %d there, %d in person 77; want 0 and 1", len(notes["group:900"]), len(notes["person:77"]))
	}
	n := notes["person:77"][0]
	text := n.SendMessage().MessageChain[0].Text
	for _, want := range []string{"private chat Nick", "by 31", "from group 900", "!ho list"} {
		if !strings.Contains(text, want) {
			t.Errorf("note %q lacks %q", text, want)
		}
	}
	if !strings.HasPrefix(n.IdempotencyKey, "takeover:"+sc.String()+":taken:") {
		t.Errorf("note key %q", n.IdempotencyKey)
	}

	// the same operator takes again (an extension): nobody is told again;
	// another operator within the interval: rate-limited
	h.command(b, cfg, 1, group, "!ho take 1")
	h.command(b, cfg, 1, person, "!ho list")
	h.command(b, cfg, 1, person, "!ho take 1")
	alertsSettled(t, h)
	if notes := notesTo(h, b); len(notes["group:900"]) != 0 || len(notes["person:77"]) != 1 {
		t.Fatalf("a repeated or rate-limited take sent notes: %d in group 900, %d in person 77", len(notes["group:900"]), len(notes["person:77"]))
	}
	// after the interval, the other claimer is noted to the first chat
	h.clock.Advance(time.Minute + time.Second)
	h.command(b, cfg, 1, person, "!ho take 1")
	alertsSettled(t, h)
	if notes := notesTo(h, b); len(notes["group:900"]) != 1 || len(notes["person:77"]) != 1 {
		t.Fatalf("after the interval: %d in group 900, %d in person 77; want 1 and 1", len(notes["group:900"]), len(notes["person:77"]))
	}

	// a take in LangBot's console page tells every operator chat, in the
	// installation's language
	zh := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"language":"zh_Hans","operator_chats":["op-bot:group:900","op-bot:person:77"]}`
	h.attach(b, zh, true)
	h.mustEvent(b, zh, takeover.EventPersonMessage, "bot-a", msgData("person", "51", "Bo", plain("hi")))
	sid := sidOf("bot-a", "person", "51")
	bustest.Eventually(t, "recorded", func() bool { return h.record(b, sid) != nil })
	h.mustPage(b, zh, "POST", "/takeover", map[string]any{"sid": sid}, nil)
	alertsSettled(t, h)
	notes = notesTo(h, b)
	if len(notes["group:900"]) != 2 || len(notes["person:77"]) != 2 {
		t.Fatalf("after a page take: %d in group 900, %d in person 77; want 2 and 2", len(notes["group:900"]), len(notes["person:77"]))
	}
	if zt := notes["group:900"][1].SendMessage().MessageChain[0].Text; !strings.Contains(zt, "已接管") || !strings.Contains(zt, "私聊「Nick」") || !strings.Contains(zt, "LangBot 中的控制台") {
		t.Errorf("zh_Hans note %q", zt)
	}

	// one operator chat, and the take comes from it: no note at all
	one := newBinding("taken-one")
	cfgOne := `{"trigger_words":["help"],"auto_takeover_on_trigger":false,"operator_chats":["op-bot:group:900"]}`
	h.attach(one, cfgOne, true)
	h.mustEvent(one, cfgOne, takeover.EventPersonMessage, "bot-a", msgData("person", "52", "52", plain("help")))
	bustest.Eventually(t, "the alert", func() bool { return len(alertsTo(h, one)["group:900"]) == 1 })
	h.command(one, cfgOne, 1, group, "!ho list")
	h.command(one, cfgOne, 1, group, "!ho take 1")
	alertsSettled(t, h)
	if notes := notesTo(h, one); len(notes) != 0 {
		t.Fatalf("a note with a single operator chat: %v", notes)
	}
	if got := len(alertsTo(h, one)["group:900"]); got != 1 {
		t.Fatalf("%d messages in the only operator chat, want the one alert", got)
	}
}

// TestAlertIsEventDriven: the alert is a consequence of the trigger, not
// of a scan. The service's clock stands still from before the trigger
// until the alerts arrive, so no timer or poll on it can have sent them;
// the trigger's handling publishes exactly one job on the chat's alert
// subject, and the consumer delivers that message once, to each operator
// chat once. A repeated trigger while the alert is pending publishes no
// second job and sends nothing.
func TestAlertIsEventDriven(t *testing.T) {
	h := newHarness(t)
	fixed := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	h.clock.Set(fixed)
	b := newBinding("event-driven")
	h.attach(b, opConfig, true)
	sc, _ := b.Scope()
	sid := sidOf("bot-a", "person", "42")
	h.mustEvent(b, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("help")))
	bustest.Eventually(t, "one alert per operator chat", func() bool { return len(alertsTo(h, b)) == 2 })
	if !h.clock.Now().Equal(fixed) {
		t.Fatal("the service clock moved")
	}
	subject, err := wire.Subjects{}.Internal(takeover.Plugin, store.KindAlert, sc, sid)
	if err != nil {
		t.Fatal(err)
	}
	jobs := func() uint64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := h.js.Stream(ctx, store.TimerStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[subject]
	}
	alertsSettled(t, h)
	if n := jobs(); n != 1 {
		t.Fatalf("%d alert jobs on %s, want the trigger's one", n, subject)
	}
	for chat, calls := range alertsTo(h, b) {
		if len(calls) != 1 || !strings.Contains(calls[0].SendMessage().MessageChain[0].Text, "waiting 0s") {
			t.Fatalf("%s: %d alerts (%v), want one sent at the trigger's instant", chat, len(calls), calls)
		}
	}
	h.mustEvent(b, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", "42", "42", plain("help, anyone?")))
	bustest.Eventually(t, "the repeated trigger recorded", func() bool {
		return len(h.messages(b, opConfig, sid).Messages) == 2
	})
	alertsSettled(t, h)
	if n := jobs(); n != 1 {
		t.Fatalf("a repeated trigger while pending queued %d jobs", n)
	}
	for chat, calls := range alertsTo(h, b) {
		if len(calls) != 1 {
			t.Fatalf("%s: %d alerts after a repeated trigger", chat, len(calls))
		}
	}
}
