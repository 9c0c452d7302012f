package acceptance_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// eventTimeout is the package's event timeout (spec 4).
const eventTimeout = 3 * time.Second

// TestPackages is PK-1 to PK-4 and PK-6 on one set of installations: the
// three built packages in LangBot's real runtime, forwarding to the real
// services. PK-6 runs last and checks everything the others sent.
func TestPackages(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t, 5*time.Minute)
	gh, tk, sn := e.ins[githubkit.Plugin], e.ins[takeover.Plugin], e.ins[schenotify.Plugin]

	t.Run("PK-1 installed and listed with labels", func(t *testing.T) {
		want := map[string][]string{
			githubkit.Plugin:  {"Command/gh", "EventListener/", "Tool/github_issue", "Tool/github_repo", "Tool/github_search"},
			takeover.Plugin:   {"Command/ho", "EventListener/", "Page/console", "Tool/request_human"},
			schenotify.Plugin: {"Command/sche", "Tool/get_current_time_str"},
		}
		for plugin, in := range e.ins {
			plugins, err := e.rt.ListPlugins(ctx, in)
			if err != nil || len(plugins) != 1 {
				t.Fatalf("%s: list_plugins = %d plugins, %v", plugin, len(plugins), err)
			}
			p := plugins[0]
			if p.Status != "initialized" || p.Author != e.pkgs[plugin].Author || p.Name != e.pkgs[plugin].Name {
				t.Errorf("%s: listed %s/%s %s", plugin, p.Author, p.Name, p.Status)
			}
			if p.Label["en_US"] == "" || p.Label["zh_Hans"] == "" {
				t.Errorf("%s: plugin label %v", plugin, p.Label)
			}
			var got []string
			for _, c := range p.Components {
				if c.Label["en_US"] == "" || c.Label["zh_Hans"] == "" {
					t.Errorf("%s: component %s/%s label %v", plugin, c.Kind, c.Name, c.Label)
				}
				got = append(got, c.Kind+"/"+c.Name)
			}
			for _, w := range want[plugin] {
				if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
					t.Errorf("%s: components %v lack %s", plugin, got, w)
				}
			}
		}
	})

	t.Run("PK-2 commands tools and page through the runtime", func(t *testing.T) {
		rets, err := e.rt.Command(ctx, gh, "!gh help", group, 1)
		if err != nil || len(rets) != 1 || !strings.Contains(runtimetest.Texts(rets)[0], "!gh") {
			t.Fatalf("!gh help = %q, %v", runtimetest.Texts(rets), err)
		}
		rets, err = e.rt.Command(ctx, sn, "!sche add in 2s x", group, 1)
		if err != nil || len(rets) != 1 || !strings.Contains(runtimetest.Texts(rets)[0], "x") {
			t.Fatalf("!sche add = %q, %v", runtimetest.Texts(rets), err)
		}
		rets, err = e.rt.Command(ctx, sn, "!sche", group, 1)
		if err != nil || len(rets) != 1 || !strings.Contains(runtimetest.Texts(rets)[0], "1 reminder") {
			t.Fatalf("!sche = %q, %v", runtimetest.Texts(rets), err)
		}

		res, err := e.rt.Tool(ctx, sn, schenotify.ToolNow, map[string]any{}, group)
		var now struct{ Status, Now, Zone string }
		if err != nil || json.Unmarshal(res, &now) != nil || now.Status != "ok" || now.Zone != "UTC" {
			t.Fatalf("get_current_time_str = %s, %v", res, err)
		}
		if ts, err := time.Parse(time.RFC3339, now.Now); err != nil || time.Since(ts).Abs() > time.Minute {
			t.Fatalf("get_current_time_str now = %q (%v)", now.Now, err)
		}
		res, err = e.rt.Tool(ctx, gh, githubkit.ToolSearch, map[string]any{"query": "hello"}, group)
		var found struct {
			Items []struct {
				FullName string `json:"full_name"`
			} `json:"items"`
		}
		if err != nil || json.Unmarshal(res, &found) != nil || len(found.Items) == 0 || found.Items[0].FullName == "" {
			t.Fatalf("github_search = %s, %v", res, err)
		}

		page, err := e.rt.Page(ctx, tk, "console", "/info", "GET", map[string]any{})
		var info struct{ Scope string }
		if err != nil || page.Error != "" || json.Unmarshal(page.Data, &info) != nil || info.Scope != tk.Scope() {
			t.Fatalf("page /info = %+v, %v", page, err)
		}
		page, err = e.rt.Page(ctx, tk, "console", "/messages", "GET", map[string]any{"sid": strings.Repeat("0", 64)})
		if err != nil || !strings.HasPrefix(page.Error, "404: ") {
			t.Fatalf("page /messages of an unknown sid = %+v, %v", page, err)
		}
	})

	t.Run("PK-3 the reminder arrives as send_message with the binding", func(t *testing.T) {
		var got *runtimetest.HostCall
		deadline := time.Now().Add(30 * time.Second)
		for got == nil && time.Now().Before(deadline) {
			for _, c := range e.rt.Sends() {
				if strings.Contains(string(c.Data), "[Notify] x") {
					got = &c
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got == nil {
			t.Fatalf("no reminder send_message; sends: %v", e.rt.Sends())
		}
		if got.Binding != sn.Binding {
			t.Fatalf("reminder binding = %+v, want %+v", got.Binding, sn.Binding)
		}
		var d struct {
			BotUUID    string `json:"bot_uuid"`
			TargetType string `json:"target_type"`
			TargetID   string `json:"target_id"`
		}
		if json.Unmarshal(got.Data, &d) != nil || d.BotUUID != "bot-1" || d.TargetType != "group" || d.TargetID != "123456" {
			t.Fatalf("reminder data = %s", got.Data)
		}
	})

	t.Run("PK-3 host actions refused with spec 5 codes", func(t *testing.T) {
		sc := scopeOf(t, sn.Binding)
		send := wire.Subjects{}.HostAction("send_message", sc)
		data := map[string]any{"bot_uuid": "bot-1", "target_type": "group", "target_id": "123456",
			"message_chain": []any{map[string]any{"type": "Plain", "text": "pk3"}}}
		// A config change makes the worker's binding one revision newer
		// than the one the reminder went out with.
		old := sn.Binding
		if err := e.rt.Reconfigure(ctx, sn, e.stack.packageConfig(schenotify.Plugin)); err != nil {
			t.Fatal(err)
		}
		e.waitWorker(ctx, schenotify.Plugin, sn)
		cases := []struct {
			name    string
			subject string
			body    any
			code    int
			word    string
		}{
			{"malformed", send, "not an object", 400, "bad_request"},
			{"foreign plugin", send, map[string]any{"binding": sn.Binding, "plugin": githubkit.Plugin, "data": data}, 403, "binding_refused"},
			{"older binding", send, map[string]any{"binding": old, "plugin": schenotify.Plugin, "data": data}, 403, "binding_refused"},
			{"unknown action", wire.Subjects{}.HostAction("delete_chat", sc), map[string]any{"binding": sn.Binding, "plugin": schenotify.Plugin, "data": data}, 404, "not_found"},
		}
		before := len(e.rt.Sends())
		for _, c := range cases {
			msg := hostRequest(t, e, c.subject, c.body, "")
			if err := wire.DecodeReply(msg.Header, msg.Data); err == nil || err.Code != c.code || err.Word != c.word {
				t.Errorf("%s: reply %v (%s), want %d %s", c.name, err, msg.Data, c.code, c.word)
			}
		}
		if n := len(e.rt.Sends()); n != before {
			t.Fatalf("refused host actions reached LangBot: %d sends, want %d", n, before)
		}

		body := map[string]any{"binding": sn.Binding, "plugin": schenotify.Plugin, "data": data}
		for range 2 {
			msg := hostRequest(t, e, send, body, "schenotify:"+sc.String()+":pk3-once")
			if err := wire.DecodeReply(msg.Header, msg.Data); err != nil {
				t.Fatalf("send with a key: %v", err)
			}
		}
		if n := len(e.rt.Sends()) - before; n != 1 {
			t.Fatalf("the same idempotency key twice sent %d messages, want 1", n)
		}
		last := e.rt.Sends()[len(e.rt.Sends())-1]
		if last.Binding != sn.Binding || !strings.Contains(string(last.Data), "pk3") {
			t.Fatalf("send = %+v", last)
		}

		e.rt.SetHostReply("send_message", func(runtimetest.HostCall) (any, error) {
			return nil, errors.New("ValueError: Bot with bot_uuid bot-1 not found")
		})
		msg := hostRequest(t, e, send, body, "")
		e.rt.SetHostReply("send_message", nil)
		if err := wire.DecodeReply(msg.Header, msg.Data); err == nil || err.Code != 404 {
			t.Fatalf("LangBot's not found answered %v, want 404", err)
		}
	})

	t.Run("PK-4 events after a takeover come back blocked", func(t *testing.T) {
		res, err := e.rt.Emit(ctx, tk, runtimetest.Event{Name: "GroupMessageReceived", Session: group, Text: "hello there"})
		if err != nil || res.PreventDefault {
			t.Fatalf("first message = %+v, %v", res, err)
		}
		page, err := e.rt.Page(ctx, tk, "console", "/sessions", "GET", map[string]any{})
		var list struct {
			Sessions []struct{ Sid string } `json:"sessions"`
		}
		if err != nil || page.Error != "" || json.Unmarshal(page.Data, &list) != nil || len(list.Sessions) != 1 {
			t.Fatalf("sessions = %+v, %v", page, err)
		}
		sid := list.Sessions[0].Sid
		page, err = e.rt.Page(ctx, tk, "console", "/takeover", "POST", map[string]any{"sid": sid})
		if err != nil || page.Error != "" {
			t.Fatalf("takeover = %+v, %v", page, err)
		}
		for _, name := range []string{"GroupMessageReceived", "NormalMessageResponded"} {
			res, err := e.rt.Emit(ctx, tk, runtimetest.Event{Name: name, Session: group, Text: "during the takeover"})
			if err != nil || !res.PreventDefault {
				t.Fatalf("%s during a takeover = %+v, %v", name, res, err)
			}
		}
		other := group
		other.LauncherID = "654321"
		if res, err := e.rt.Emit(ctx, tk, runtimetest.Event{Name: "GroupMessageReceived", Session: other, Text: "another chat"}); err != nil || res.PreventDefault {
			t.Fatalf("another chat = %+v, %v", res, err)
		}
	})

	t.Run("PK-4 events fail open with the service stopped", func(t *testing.T) {
		e.stack.stop(takeover.Plugin)
		mark := len(e.rt.Logs())
		for _, name := range []string{"GroupMessageReceived", "NormalMessageResponded"} {
			start := time.Now()
			res, err := e.rt.Emit(ctx, tk, runtimetest.Event{Name: name, Session: group, Text: "service gone"})
			took := time.Since(start)
			if err != nil || res.PreventDefault || res.PreventPostorder {
				t.Fatalf("%s with takeover stopped = %+v, %v", name, res, err)
			}
			if took > eventTimeout+time.Second {
				t.Fatalf("%s took %v, beyond the event timeout %v", name, took, eventTimeout)
			}
			t.Logf("%s passed unchanged in %v", name, took)
		}
		if logs := e.rt.Logs()[mark:]; strings.Contains(logs, "Traceback") {
			t.Fatalf("a component raised:\n%s", logs)
		}
	})

	t.Run("PK-2 a two-return reply arrives as two returns", func(t *testing.T) {
		// No service answers a command with two returns today, so a
		// responder stands in for githubkit on this installation's subject
		// (githubkit stopped): what is checked is the package and the
		// runtime, which must stream both.
		e.stack.stop(githubkit.Plugin)
		reqs := make(chan wire.Request, 1)
		sub, err := e.stack.nc.Subscribe(wire.Subjects{}.Invocation(githubkit.Plugin, wire.EndpointCommand, scopeOf(t, gh.Binding)), func(m *nats.Msg) {
			var r wire.Request
			_ = json.Unmarshal(m.Data, &r)
			select {
			case reqs <- r:
			default:
			}
			_ = m.Respond([]byte(`{"returns":[{"text":"line one"},{"text":"line two"}]}`))
		})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		rets, err := e.rt.Command(ctx, gh, "!gh repo octocat/Hello-World", group, 1)
		if err != nil || !slices.Equal(runtimetest.Texts(rets), []string{"line one", "line two"}) {
			t.Fatalf("returns = %q, %v", runtimetest.Texts(rets), err)
		}
		r := <-reqs
		if r.Command == nil || r.Command.Name != "gh" || !slices.Equal(r.Command.Params, []string{"repo", "octocat/Hello-World"}) ||
			r.Command.FullText != "!gh repo octocat/Hello-World" || r.Binding != gh.Binding {
			t.Fatalf("forwarded command = %+v binding %+v", r.Command, r.Binding)
		}
	})

	t.Run("PK-6 no NATS setting leaves the package", func(t *testing.T) {
		secrets := []string{markerUser, markerPassword, markerToken}
		keys := []string{"nats_url", "nats_user", "nats_password", "nats_token", "nats_tls_ca", "subject_prefix"}
		msgs := e.stack.messages()
		if len(msgs) < 50 {
			t.Fatalf("only %d messages recorded", len(msgs))
		}
		for _, m := range msgs {
			for _, v := range append(secrets, keys...) {
				if strings.Contains(string(m.Data), v) {
					t.Errorf("%q in the body of a message on %s", v, m.Subject)
				}
				for k, hv := range m.Header {
					if strings.Contains(k+strings.Join(hv, ","), v) {
						t.Errorf("%q in a header of a message on %s", v, m.Subject)
					}
				}
			}
		}
		logs := e.rt.Logs() + e.stack.logs.String()
		attrs := strings.Join(e.stack.spanAttributes(), "\n")
		if len(e.stack.spanAttributes()) == 0 {
			t.Fatal("no span attributes recorded")
		}
		for _, v := range secrets {
			if strings.Contains(logs, v) {
				t.Errorf("%q in a log line", v)
			}
			if strings.Contains(attrs, v) {
				t.Errorf("%q in a span attribute", v)
			}
		}
	})
}

func scopeOf(t testing.TB, b binding.Binding) binding.Scope {
	t.Helper()
	sc, err := b.Scope()
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// hostRequest sends a host action as a service would, with an optional
// idempotency key, and returns the package's reply.
func hostRequest(t testing.TB, e *env, subject string, body any, key string) *nats.Msg {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(subject)
	m.Data = raw
	m.Header.Set(wire.HeaderContentType, "application/json")
	if key != "" {
		m.Header.Set(wire.HeaderIdempotencyKey, key)
	}
	reply, err := e.stack.nc.RequestMsg(m, 20*time.Second)
	if err != nil {
		t.Fatalf("host request on %s: %v", subject, err)
	}
	return reply
}
