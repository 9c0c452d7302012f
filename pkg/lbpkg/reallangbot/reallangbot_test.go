package reallangbot_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/cmd/builtin"
	"github.com/langbot-nats/plugins/pkg/lbpkg/reallangbot"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// step bounds one step of a scenario: far above what a step takes on a
// loaded 2-core machine, far below the suite's timeout.
const step = 90 * time.Second

// notify is ScheNotify's prefix in the tests' config: a delivered reminder
// is told from the command's own answer (which repeats the text) by it.
const notify = "[Notify] "

// TestRealLangBot installs the three packages into a real LangBot through
// its HTTP API, configures them through it and chats through its embed
// web chat. One LangBot serves every scenario, in order (booting one
// takes several seconds); a scenario that fails stops the rest.
func TestRealLangBot(t *testing.T) {
	w := newWorld(t)
	run := func(name string, f func(t *testing.T)) {
		if !t.Failed() {
			t.Run(name, f)
		}
	}

	user := w.chat(t, within(t, step))

	// A package installs with the config LangBot really gives a new
	// installation ({}), is listed, and its form is reachable and saves.
	run("install", func(t *testing.T) {
		ctx := within(t, 3*step)
		for _, name := range builtin.Names() {
			task := w.install(t, ctx, name)
			if task.Runtime.Exception != "" {
				t.Fatalf("install %s: LangBot's task failed: %s", name, task.Runtime.Exception)
			}
		}
		list, err := w.lb.Plugins(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range list {
			ids = append(ids, p.ID())
		}
		for _, name := range builtin.Names() {
			if !slices.Contains(ids, w.ids[name]) {
				t.Fatalf("%s not in LangBot's plugin list %v", w.ids[name], ids)
			}
			cfg, err := w.lb.Config(ctx, w.ids[name])
			if err != nil {
				t.Fatalf("%s: the form's config: %v", name, err)
			}
			t.Logf("%s: the config LangBot holds right after upload: %v", w.ids[name], cfg)
		}
		// Right after upload the package uses its manifest defaults
		// (nats://127.0.0.1:4222; ScheNotify's language zh_Hans): where no
		// NATS listens there, a command answers unavailable.
		if conn, err := net.DialTimeout("tcp", "127.0.0.1:4222", time.Second); err == nil {
			conn.Close()
			t.Log("something listens on 127.0.0.1:4222 (make run?): the right-after-upload answer is not checked")
		} else {
			got := say(t, within(t, 30*time.Second), user, "!sche help", "不可用")
			t.Logf("a command right after upload: %q", got.Content)
		}
		// A form saved without a NATS address: every command says which
		// setting is missing.
		if err := w.lb.SetConfig(ctx, w.ids[schenotify.Plugin], map[string]any{"nats_url": ""}); err != nil {
			t.Fatal(err)
		}
		var last string
		waitUntil(t, within(t, step), "the command answering 'not configured' (last answer: "+last+")", func() bool {
			n := len(user.Received())
			if user.Send("!sche help") != nil {
				return false
			}
			r, err := user.WaitFor(within(t, 5*time.Second), n, "")
			last = r.Content
			// In the package's language, zh_Hans by default: 未配置 = not configured.
			if err == nil && strings.Contains(r.Content, "未配置：nats_url") {
				t.Logf("a command with an empty nats_url: %q", r.Content)
				return true
			}
			return false
		})
		w.saveConfig(t, ctx, githubkit.Plugin, nil)
		w.saveConfig(t, ctx, schenotify.Plugin, map[string]any{"notify_prefix": notify, "timezone": "UTC"})
		w.saveConfig(t, ctx, takeover.Plugin, map[string]any{"trigger_words": []string{"human please"},
			"auto_takeover_on_trigger": true, "takeover_timeout": 600})
	})

	run("ai answers", func(t *testing.T) {
		before := len(w.llm.Calls())
		start := time.Now()
		say(t, within(t, step), user, "hello there", "fake-llm answer")
		t.Logf("AI answer with the three packages installed after %v", time.Since(start).Round(time.Millisecond))
		if got := len(w.llm.Calls()); got != before+1 {
			t.Fatalf("fake LLM calls = %d, want %d", got, before+1)
		}
	})

	// HumanTakeover's event gate against LangBot 4.10.8: after the first
	// message, a chat no human watches is neither held nor lost. The
	// messages and the AI's answers pass without waiting for the service
	// (their requests say passed), and the service records them all, in
	// order, from the background.
	run("event gate", func(t *testing.T) {
		ctx := within(t, step)
		mark := "gated-" + time.Now().Format("150405.000")
		texts := []string{mark + " one", mark + " two"}
		first := len(w.takeoverEventsSince(0))
		for _, text := range texts {
			say(t, ctx, user, text, "fake-llm answer")
		}
		waitUntil(t, ctx, "both messages and both answers forwarded", func() bool { return len(w.takeoverEventsSince(first)) >= 4 })
		evs := w.takeoverEventsSince(first)
		want := []string{"PersonMessageReceived", "NormalMessageResponded", "PersonMessageReceived", "NormalMessageResponded"}
		for i, e := range evs {
			if i >= len(want) || e.name != want[i] || !e.passed {
				t.Fatalf("event requests %+v, want %v, each passed by the gate", evs, want)
			}
		}
		ses, ok := w.sessionOf(ctx, user)
		if !ok {
			t.Fatal("the chat is not listed by HumanTakeover's page")
		}
		sid := ses.SID
		// the chat's last entries, oldest first: each message, then its answer
		var got []string
		waitUntil(t, ctx, "the passed messages recorded", func() bool {
			var page struct {
				Messages []struct {
					Role  string `json:"role"`
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"messages"`
			}
			if err := w.lb.PageAPI(ctx, w.ids[takeover.Plugin], "console", "/messages", "GET", map[string]any{"sid": sid}, &page); err != nil {
				return false
			}
			got = got[:0]
			for i := len(page.Messages) - 1; i >= 0; i-- {
				m := page.Messages[i]
				text := ""
				if len(m.Parts) > 0 {
					text = m.Parts[0].Text
				}
				if strings.HasPrefix(text, mark) || len(got) > 0 {
					got = append(got, m.Role+": "+text)
				}
			}
			return len(got) >= 4
		})
		if len(got) != 4 || got[0] != "user: "+texts[0] || !strings.HasPrefix(got[1], "ai: fake-llm answer") ||
			got[2] != "user: "+texts[1] || !strings.HasPrefix(got[3], "ai: fake-llm answer") {
			t.Fatalf("history of the gated messages: %q, want each message then its answer", got)
		}
	})

	// A reminder set in the web chat is pushed into it at its due second.
	run("sche add in 5s", func(t *testing.T) {
		ctx := within(t, step)
		sent := time.Now()
		say(t, ctx, user, "!sche add in 5s stretch-5s", "stretch-5s")
		got, err := user.WaitFor(ctx, 0, notify+"stretch-5s")
		if err != nil {
			t.Fatal(err)
		}
		// Due at the whole second 5 s after the command: never before.
		if early := sent.Add(4 * time.Second); got.At.Before(early) {
			t.Fatalf("reminder arrived %v after the command, before it was due", got.At.Sub(sent))
		}
		t.Logf("reminder arrived %v after the command", got.At.Sub(sent).Round(time.Millisecond))
	})

	run("gh help and lookup", func(t *testing.T) {
		ctx := within(t, step)
		say(t, ctx, user, "!gh help", "GitHubKit commands")
		// The description comes from the fake GitHub's repository only.
		got := say(t, ctx, user, "!gh repo octocat/Hello-World", "This your first repo!")
		t.Logf("repository card: %q", got.Content)
	})

	// The trigger word hands the chat to a human: LangBot's pipeline then
	// stops before the AI until the chat is released, through the page
	// API (as the console in LangBot does) and through `!ho`.
	run("takeover", func(t *testing.T) {
		ctx := within(t, 2*step)
		// quietUntilRelease sends the trigger word and two messages, waits
		// until the operator's history holds them, releases the chat with
		// release, and checks that the fake LLM answered only the message
		// after the release: LangBot handles a chat's messages in order, so
		// by that answer every earlier message has been through its
		// pipeline.
		quietUntilRelease := func(release func(sid string)) {
			t.Helper()
			before := len(w.llm.Calls())
			mark := "quiet-" + time.Now().Format("150405.000")
			if err := user.Send("human please"); err != nil {
				t.Fatal(err)
			}
			sid := w.takenSession(t, ctx, user)
			for _, text := range []string{mark + " are you there?", mark + " still waiting"} {
				if err := user.Send(text); err != nil {
					t.Fatal(err)
				}
				waitUntil(t, ctx, "the message recorded for the operator", func() bool { return w.historyHas(ctx, sid, text) })
			}
			release(sid)
			say(t, ctx, user, mark+" back to the AI?", "fake-llm answer")
			calls := w.llm.Calls()[before:]
			if len(calls) != 1 || !strings.Contains(calls[0], mark+" back to the AI?") {
				t.Fatalf("fake LLM calls since the trigger word: %q, want only the message after the release", calls)
			}
		}
		// Released through the page API, as the console in LangBot does.
		quietUntilRelease(func(sid string) {
			if err := w.lb.PageAPI(ctx, w.ids[takeover.Plugin], "console", "/takeover", "DELETE", map[string]any{"sid": sid}, nil); err != nil {
				t.Fatalf("release through the page API: %v", err)
			}
		})
		// Released by an operator with `!ho` from an operator chat.
		op := w.chat(t, ctx)
		w.saveConfig(t, ctx, takeover.Plugin, map[string]any{"trigger_words": []string{"human please"},
			"auto_takeover_on_trigger": true, "takeover_timeout": 600,
			"operator_chats": []string{w.setup.Bot + ":person:" + w.launcherID(op)}})
		quietUntilRelease(func(string) {
			say(t, ctx, op, "!ho list", "1. ")
			say(t, ctx, op, "!ho release 1", "back with the AI")
		})
	})

	// HumanTakeover's page is served by LangBot itself.
	run("page served by LangBot", func(t *testing.T) {
		ctx := within(t, step)
		status, hdr, body, err := w.lb.Get(ctx, "/api/v1/plugins/"+w.ids[takeover.Plugin]+"/assets/components/pages/console.html")
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "<html") {
			t.Fatalf("page: HTTP %d %q, %d bytes", status, hdr.Get("Content-Type"), len(body))
		}
		if hdr.Get("Content-Security-Policy") == "" {
			t.Fatal("the page came without LangBot's CSP header")
		}
	})

	// A config save while a reminder is pending: the new worker delivers
	// it, once.
	run("config save while a reminder is pending", func(t *testing.T) {
		ctx := within(t, step)
		handled := w.delivered()
		say(t, ctx, user, "!sche add in 6s pending-save", "pending-save")
		w.saveConfig(t, ctx, schenotify.Plugin, map[string]any{"notify_prefix": notify, "timezone": "UTC", "max_reminders": 99})
		w.deliveredOnce(ctx, t, user, "pending-save", handled)
	})

	// Unbinding the plugin from the pipeline and binding it again while a
	// reminder is pending: delivered, once.
	run("unbind and rebind on the pipeline", func(t *testing.T) {
		ctx := within(t, step)
		handled := w.delivered()
		say(t, ctx, user, "!sche add in 6s pending-rebind", "pending-rebind")
		others := []string{w.ids[githubkit.Plugin], w.ids[takeover.Plugin]}
		if err := w.lb.BindPlugins(ctx, w.setup.Pipeline, false, others...); err != nil {
			t.Fatal(err)
		}
		if err := w.lb.BindPlugins(ctx, w.setup.Pipeline, true); err != nil {
			t.Fatal(err)
		}
		w.deliveredOnce(ctx, t, user, "pending-rebind", handled)
	})

	// A config save while a reminder is pending and LangBot refuses its
	// sends: the retries go on under the new revision, and once the
	// refusal ends the reminder is delivered, once.
	run("config save while sends are refused", func(t *testing.T) {
		w.refusedConfigSave(t, within(t, 2*step), user)
	})

	// After uninstall nothing of the plugin reaches the chat: the service
	// still tries to deliver the pending reminder, and no one answers.
	run("uninstall", func(t *testing.T) {
		ctx := within(t, 2*step)
		say(t, ctx, user, "!sche add in 5s after-uninstall", "after-uninstall")
		task, err := w.lb.Uninstall(ctx, w.ids[schenotify.Plugin])
		if err != nil || task.Runtime.Exception != "" {
			t.Fatalf("uninstall: %v %s", err, task.Runtime.Exception)
		}
		waitUntil(t, ctx, "the service's delivery attempt", func() bool { return w.sendsWith("after-uninstall") > 0 })
		n := len(user.Received())
		say(t, ctx, user, "anything from the reminder?", "fake-llm answer")
		for _, r := range user.Received()[n:] {
			if strings.Contains(r.Content, "after-uninstall") {
				t.Fatalf("a reminder of the uninstalled plugin reached the chat: %q", r.Content)
			}
		}
		if got := user.Count(notify + "after-uninstall"); got != 0 {
			t.Fatalf("the reminder reached the chat %d times after uninstall", got)
		}
	})

	// NATS down: a command answers "unavailable" at once, well before the
	// package's own 30 s command timeout, and a chat message still gets
	// the AI's answer; once NATS is back, commands work again.
	run("nats down", func(t *testing.T) {
		w.srv.Stop()
		ctx := within(t, 15*time.Second)
		start := time.Now()
		got := say(t, ctx, user, "!gh help", "unavailable")
		t.Logf("command answer with NATS down after %v: %q", time.Since(start).Round(time.Millisecond), got.Content)
		start = time.Now()
		say(t, ctx, user, "is the AI still there?", "fake-llm answer")
		t.Logf("AI answer with NATS down after %v", time.Since(start).Round(time.Millisecond))

		w.srv.Restart(t)
		ctx = within(t, step)
		waitUntil(t, ctx, "commands answering again after NATS is back", func() bool {
			n := len(user.Received())
			if user.Send("!gh help") != nil {
				return false
			}
			r, err := user.WaitFor(within(t, 5*time.Second), n, "")
			return err == nil && strings.Contains(r.Content, "GitHubKit commands")
		})
	})
}

// deliveredOnce waits until ScheNotify has finished one more delivery
// (its log line "reminder handled" with outcome delivered) and the text
// reached c, then checks that it reached c exactly once, after a later
// chat message's answer (anything pushed before it has arrived by then).
func (w *world) deliveredOnce(ctx context.Context, t *testing.T, c *reallangbot.Chat, text string, handledBefore int) {
	t.Helper()
	waitUntil(t, ctx, "ScheNotify finishing the delivery of "+text, func() bool { return w.delivered() > handledBefore })
	waitUntil(t, ctx, "reminder "+text+" in the chat", func() bool { return c.Count(notify+text) > 0 })
	say(t, ctx, c, "after "+text+"?", "fake-llm answer")
	if got := c.Count(notify + text); got != 1 {
		t.Fatalf("reminder %s delivered %d times, want 1 (%d send_message requests)", text, got, w.sendsWith(text))
	}
}

// delivered counts ScheNotify's finished deliveries so far.
func (w *world) delivered() int {
	n := 0
	for _, line := range strings.Split(w.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"reminder handled"`) && strings.Contains(line, `"outcome":"delivered"`) {
			n++
		}
	}
	return n
}

// session is the console's summary of a chat, as far as the tests read it.
type session struct {
	SID      string          `json:"sid"`
	TargetID string          `json:"target_id"`
	Takeover json.RawMessage `json:"takeover"`
}

// takenSession waits until c's chat is taken over, as HumanTakeover's
// page lists it through LangBot's page API, and returns its session id.
func (w *world) takenSession(t *testing.T, ctx context.Context, c *reallangbot.Chat) string {
	t.Helper()
	var sid string
	waitUntil(t, ctx, "the chat listed as taken over", func() bool {
		s, ok := w.sessionOf(ctx, c)
		if ok && len(s.Takeover) > 0 && string(s.Takeover) != "null" {
			sid = s.SID
			return true
		}
		return false
	})
	return sid
}

// sessionOf returns c's chat as HumanTakeover's page lists it through
// LangBot's page API, and whether it is listed.
func (w *world) sessionOf(ctx context.Context, c *reallangbot.Chat) (session, bool) {
	var out struct {
		Sessions []session `json:"sessions"`
	}
	if err := w.lb.PageAPI(ctx, w.ids[takeover.Plugin], "console", "/sessions", "GET", map[string]any{}, &out); err != nil {
		return session{}, false
	}
	for _, s := range out.Sessions {
		if strings.HasSuffix(s.TargetID, c.SessionID) {
			return s, true
		}
	}
	return session{}, false
}

// historyHas reports whether the console's history of sid holds text.
func (w *world) historyHas(ctx context.Context, sid, text string) bool {
	var out json.RawMessage
	if err := w.lb.PageAPI(ctx, w.ids[takeover.Plugin], "console", "/messages", "GET", map[string]any{"sid": sid}, &out); err != nil {
		return false
	}
	return strings.Contains(string(out), text)
}

// launcherID is the launcher id LangBot gives c's chat (its person chats
// are "websocket_<pipeline>:<session>"), checked against what the page
// lists for the user's chat.
func (w *world) launcherID(c *reallangbot.Chat) string {
	return "websocket_" + w.setup.Pipeline + ":" + c.SessionID
}
