package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

func echoHandlers() bus.Handlers {
	return bus.Handlers{
		Command: func(ctx context.Context, inv *bus.Invocation) (any, error) {
			return wire.CommandReply{Returns: []wire.Return{{Text: strings.Join(inv.Command.Params, " ")}}}, nil
		},
	}
}

func TestRunnerServesCommand(t *testing.T) {
	h := newHarness(t, bus.RunnerConfig{Handlers: echoHandlers()}, bus.Deps{})
	b := bindingFor("i1", "w1", "n1", 1, 1)
	out, err := h.command(b, "inv-1", "hello", "world")
	if err != nil {
		t.Fatal(err)
	}
	var reply wire.CommandReply
	if err := json.Unmarshal(out, &reply); err != nil || len(reply.Returns) != 1 || reply.Returns[0].Text != "hello world" {
		t.Fatalf("reply = %s, %v", out, err)
	}
	// the attach before it created the authority
	a := h.waitAuthority(bus.ScopeOf(b), func(a *bus.Authority) bool { return a != nil })
	if a.State != bus.StateActive || a.Binding != b {
		t.Fatalf("authority = %+v", a)
	}
}

func TestRunnerUnusedEndpoints(t *testing.T) {
	h := newHarness(t, bus.RunnerConfig{Handlers: echoHandlers()}, bus.Deps{})
	b := bindingFor("i1", "w1", "n1", 1, 1)
	h.install(b)
	ev := &wire.Request{Binding: b, Event: &wire.Event{Name: "PersonMessageReceived", BotUUID: "bot"}}
	out, err := h.invoker.Invoke(context.Background(), plugin, wire.EndpointEvent, "e1", ev)
	if err != nil || string(out) != `{"prevent_default":false,"prevent_postorder":false}` {
		t.Fatalf("event on a plugin without events = %s, %v", out, err)
	}
	tool := &wire.Request{Binding: b, Tool: &wire.Tool{Name: "x"}}
	_, err = h.invoker.Invoke(context.Background(), plugin, wire.EndpointTool, "t1", tool)
	if !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("tool on a plugin without tools = %v, want 404", err)
	}
}

// TestRunnerObserveEventsAnswersNoDecision: a plugin that declares it
// only observes events (plugin.Declaration.ObserveEvents) never answers an
// event with a decision, since its packages would ignore it: a handler
// that returns one is logged as an error, with the scope and no content,
// and its decision dropped. Without ObserveEvents the decision goes out.
func TestRunnerObserveEventsAnswersNoDecision(t *testing.T) {
	decide := bus.Handlers{Event: func(ctx context.Context, inv *bus.Invocation) (any, error) {
		return wire.EventReply{PreventDefault: true, PreventPostorder: true}, nil
	}}
	for _, observe := range []bool{true, false} {
		var logs bustest.LogBuffer
		h := newHarness(t, bus.RunnerConfig{Handlers: decide, ObserveEvents: observe}, bus.Deps{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		b := bindingFor("i1", "w1", "n1", 1, 1)
		h.install(b)
		ev := &wire.Request{Binding: b, Event: &wire.Event{Name: "PersonMessageReceived", BotUUID: "bot", Data: json.RawMessage(`{"text":"secret words"}`)}}
		out, err := h.invoker.Invoke(context.Background(), plugin, wire.EndpointEvent, "e1", ev)
		var got wire.EventReply
		if err != nil || json.Unmarshal(out, &got) != nil {
			t.Fatalf("observe=%v: event = %s, %v", observe, out, err)
		}
		logged := strings.Contains(logs.String(), "returned a decision")
		if observe && (got.PreventDefault || got.PreventPostorder || !logged) {
			t.Fatalf("observing: reply %s, error logged %v; want no decision, logged", out, logged)
		}
		if !observe && (!got.PreventDefault || logged) {
			t.Fatalf("deciding: reply %s, error logged %v; want the decision, nothing logged", out, logged)
		}
		if observe && (!strings.Contains(logs.String(), bus.ScopeOf(b).String()) || strings.Contains(logs.String(), "secret")) {
			t.Fatalf("the error line names no scope or quotes the event: %s", logs.String())
		}
	}
}

// A newer binding whose authority write fails is not served afterwards
// from the view as if it had been stored: the next invocation with it
// writes again (and fails again while storage is away).
func TestRunnerFailedAuthorityWriteIsRetried(t *testing.T) {
	h := newHarness(t, bus.RunnerConfig{Handlers: echoHandlers()}, bus.Deps{})
	h.install(bindingFor("i1", "w1", "n1", 1, 1))
	event := func(rev int64, id string) error {
		b := bindingFor("i1", "w1", "n1", 1, rev)
		_, err := h.invoker.Invoke(context.Background(), plugin, wire.EndpointEvent, id,
			&wire.Request{Binding: b, Event: &wire.Event{Name: "PersonMessageReceived", BotUUID: "bot"}})
		return err
	}
	if err := event(1, "e1"); err != nil {
		t.Fatal(err)
	}
	h.waitAuthority(bus.ScopeOf(bindingFor("i1", "w1", "n1", 1, 1)), func(a *bus.Authority) bool { return a != nil })
	// the authority bucket goes away: every authority write fails
	if err := h.js.DeleteStream(context.Background(), "KV_"+bus.Bucket(plugin)); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"e2", "e3"} {
		if err := event(2, id); !errors.Is(err, wire.ErrUnavailable) {
			t.Fatalf("invocation %d with the unstored binding: %v, want 503", i+1, err)
		}
	}
}
