package runtimetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
)

var group = runtimetest.Session{LauncherType: "group", LauncherID: "123456", SenderID: "42", BotUUID: "bot-1"}

// TestProbe proves the kit against the real runtime with the fixture plugin
// in testdata/probe: every LangBot-side call and every call back.
func TestProbe(t *testing.T) {
	py := runtimetest.FindPython(t)
	rt := runtimetest.Start(t, py, runtimetest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	archive, err := runtimetest.ZipDir("testdata/probe")
	if err != nil {
		t.Fatal(err)
	}
	in, err := rt.Install(ctx, archive, "runtimetest", "Probe", map[string]any{"greeting": "hi"})
	if err != nil {
		t.Fatalf("install: %v", err)
	}

	t.Run("list", func(t *testing.T) {
		plugins, err := rt.ListPlugins(ctx, in)
		if err != nil || len(plugins) != 1 {
			t.Fatalf("list_plugins = %v, %v; want one plugin", plugins, err)
		}
		p := plugins[0]
		if p.Author != "runtimetest" || p.Name != "Probe" || p.Status != "initialized" || p.Label["en_US"] != "Probe" {
			t.Fatalf("plugin = %s/%s %s %v", p.Author, p.Name, p.Status, p.Label)
		}
		var kinds []string
		for _, c := range p.Components {
			if c.Label["en_US"] == "" {
				t.Errorf("component %s/%s has no label", c.Kind, c.Name)
			}
			kinds = append(kinds, c.Kind+"/"+c.Name)
		}
		slices.Sort(kinds)
		want := []string{"Command/probe", "EventListener/listener", "Page/console", "Tool/probe_echo"}
		if !slices.Equal(kinds, want) {
			t.Fatalf("components = %v, want %v", kinds, want)
		}
	})

	t.Run("command streams every return", func(t *testing.T) {
		rets, err := rt.Command(ctx, in, "!probe one two three", group, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := runtimetest.Texts(rets); !slices.Equal(got, []string{"one", "two", "three"}) {
			t.Fatalf("returns = %q", got)
		}
	})

	t.Run("config reaches the worker", func(t *testing.T) {
		rets, err := rt.Command(ctx, in, "!probe config", group, 1)
		if err != nil || len(rets) != 1 || *rets[0].Text != `{"greeting": "hi"}` {
			t.Fatalf("config = %q, %v", runtimetest.Texts(rets), err)
		}
	})

	t.Run("send_message carries the binding", func(t *testing.T) {
		if _, err := rt.Command(ctx, in, "!probe send 777 hello there", group, 1); err != nil {
			t.Fatal(err)
		}
		sends := rt.WaitSends(t, 1, 10*time.Second)
		s := sends[len(sends)-1]
		if s.Binding != in.Binding {
			t.Fatalf("binding = %+v, want %+v", s.Binding, in.Binding)
		}
		var d struct {
			Bot, Type, Target string
			Chain             []map[string]any `json:"message_chain"`
		}
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(s.Data, &raw)
		_ = json.Unmarshal(raw["message_chain"], &d.Chain)
		if string(raw["target_id"]) != `"777"` || string(raw["bot_uuid"]) != `"bot-1"` || len(d.Chain) != 1 || d.Chain[0]["text"] != "hello there" {
			t.Fatalf("send_message data = %s", s.Data)
		}
	})

	t.Run("bots", func(t *testing.T) {
		rets, err := rt.Command(ctx, in, "!probe bots", group, 1)
		if err != nil || len(rets) != 1 || !strings.Contains(*rets[0].Text, `"uuid": "bot-1"`) {
			t.Fatalf("bots = %q, %v", runtimetest.Texts(rets), err)
		}
		rets, err = rt.Command(ctx, in, "!probe bot bot-1", group, 1)
		if err != nil || len(rets) != 1 || !strings.Contains(*rets[0].Text, `"bot_account_id": "10001"`) {
			t.Fatalf("bot = %q, %v", runtimetest.Texts(rets), err)
		}
	})

	t.Run("tool", func(t *testing.T) {
		res, err := rt.Tool(ctx, in, "probe_echo", map[string]any{"q": "x"}, group)
		if err != nil || !jsonEqual(res, `{"echo":{"q":"x"},"launcher_id":"123456"}`) {
			t.Fatalf("tool = %s, %v", res, err)
		}
	})

	t.Run("event asks get_bot_uuid and blocks", func(t *testing.T) {
		res, err := rt.Emit(ctx, in, runtimetest.Event{Name: "GroupMessageReceived", Session: group, Text: "please block"})
		if err != nil || !res.PreventDefault || !res.PreventPostorder {
			t.Fatalf("event = %+v, %v", res, err)
		}
		res, err = rt.Emit(ctx, in, runtimetest.Event{Name: "GroupMessageReceived", Session: group, Text: "pass"})
		if err != nil || res.PreventDefault {
			t.Fatalf("event = %+v, %v", res, err)
		}
		asked := 0
		for _, c := range rt.HostCalls() {
			if c.Action == "get_bot_uuid" {
				asked++
			}
		}
		if asked != 1 {
			t.Fatalf("get_bot_uuid asked %d times, want 1", asked)
		}
	})

	t.Run("page", func(t *testing.T) {
		res, err := rt.Page(ctx, in, "console", "/x", "POST", map[string]any{"a": 1})
		if err != nil || res.Error != "" || !jsonEqual(res.Data, `{"endpoint":"/x","method":"POST","body":{"a":1}}`) {
			t.Fatalf("page = %+v, %v", res, err)
		}
		// Both directions of a message over 16 KiB travel chunked.
		big := strings.Repeat("λx", 40_000)
		res, err = rt.Page(ctx, in, "console", "/big", "POST", big)
		var echo struct{ Body string }
		if err != nil || json.Unmarshal(res.Data, &echo) != nil || echo.Body != big {
			t.Fatalf("big page call: %v (body %d bytes back)", err, len(echo.Body))
		}
		res, err = rt.Page(ctx, in, "console", "/fail", "GET", nil)
		if err != nil || res.Error != "400: refused" {
			t.Fatalf("page fail = %+v, %v", res, err)
		}
	})

	t.Run("stale binding refused", func(t *testing.T) {
		b := in.Binding
		b.RuntimeRevision += 5
		_, err := rt.CallWithBinding(ctx, b, "list_plugins", map[string]any{})
		var ae *runtimetest.ActionError
		if !errors.As(err, &ae) || !strings.Contains(ae.Message, "binding cannot change") {
			t.Fatalf("stale list = %v", err)
		}
	})

	t.Run("config change is a new revision", func(t *testing.T) {
		if err := rt.Reconfigure(ctx, in, map[string]any{"greeting": "hey"}); err != nil {
			t.Fatal(err)
		}
		if in.Binding.RuntimeRevision != 2 {
			t.Fatalf("revision = %d", in.Binding.RuntimeRevision)
		}
		rets, err := rt.Command(ctx, in, "!probe config", group, 1)
		if err != nil || len(rets) != 1 || *rets[0].Text != `{"greeting": "hey"}` {
			t.Fatalf("config = %q, %v", runtimetest.Texts(rets), err)
		}
	})

	t.Run("restart replays the installation", func(t *testing.T) {
		if err := rt.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		rets, err := rt.Command(ctx, in, "!probe again", group, 1)
		if err != nil || !slices.Equal(runtimetest.Texts(rets), []string{"again"}) {
			t.Fatalf("after restart = %q, %v", runtimetest.Texts(rets), err)
		}
	})
}

func jsonEqual(got json.RawMessage, want string) bool {
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
