package bus_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

func TestMicroDiscovery(t *testing.T) {
	h := newHarness(t, bus.RunnerConfig{Handlers: echoHandlers(), Version: "1.2.3"}, bus.Deps{})
	nc := h.srv.Conn(t)
	ping, err := nc.Request("$SRV.PING."+plugin, nil, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var id micro.Ping
	if err := json.Unmarshal(ping.Data, &id); err != nil || id.Name != plugin || id.Version != "1.2.3" {
		t.Fatalf("PING = %s, %v", ping.Data, err)
	}
	infoMsg, err := nc.Request("$SRV.INFO."+plugin, nil, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(infoMsg.Data, &info); err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, ep := range info.Endpoints {
		subjects = append(subjects, ep.Subject)
		if ep.QueueGroup != plugin {
			t.Errorf("endpoint %s queue group %q", ep.Name, ep.QueueGroup)
		}
	}
	want := "langbot.plugin.echo.command.*.*.* langbot.plugin.echo.event.*.*.* langbot.plugin.echo.tool.*.*.* langbot.plugin.echo.page.*.*.*"
	if strings.Join(subjects, " ") != want {
		t.Fatalf("INFO endpoints = %v", subjects)
	}
}

// TestTraceSpansHostToServiceToHostAction checks one trace: the host's
// invocation span, the service's SERVER span as its child, and the host
// action's CLIENT span under that, with the trace context carried in NATS
// headers both ways.
func TestTraceSpansHostToServiceToHostAction(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var r *bus.Runner
	handlers := bus.Handlers{Command: func(ctx context.Context, inv *bus.Invocation) (any, error) {
		if _, err := r.KV().Create(ctx, inv.Scope, "note", []byte(`{}`), "n1"); err != nil {
			return nil, err
		}
		err := r.Host().SendMessage(ctx, inv.Binding, wire.SendMessage{BotUUID: "bot", TargetType: "person", TargetID: "u1", MessageChain: wire.Plain("secret chat text")}, inv.Scope.String()+":k")
		return wire.CommandReply{}, err
	}}
	h := newHarness(t, bus.RunnerConfig{Handlers: handlers}, bus.Deps{TracerProvider: tp})
	r = h.runner
	host := bustest.NewHost(t, h.srv.Conn(t), wire.Subjects{})
	hostTracer := tp.Tracer("host")
	ctx, root := hostTracer.Start(context.Background(), "host publish", trace.WithSpanKind(trace.SpanKindProducer))
	invoker := bus.NewInvoker(h.srv.Conn(t), wire.Subjects{}, tp)
	b := bindingFor("i", "w", "n", 1, 1)
	h.install(b)
	req := &wire.Request{Binding: b, Command: &wire.Command{Name: "x", Params: []string{"secret-param"}}}
	if _, err := invoker.Invoke(ctx, plugin, wire.EndpointCommand, "t1", req); err != nil {
		t.Fatal(err)
	}
	root.End()
	sends := host.WaitSends(t, 1, 5*time.Second)
	if got := bus.RemoteSpanContext(sends[0].Header); got.TraceID() != root.SpanContext().TraceID() {
		t.Fatalf("host action carries trace %s, want %s", got.TraceID(), root.SpanContext().TraceID())
	}
	if sends[0].IdempotencyKey != "i.w.n:k" {
		t.Fatalf("idempotency key = %q", sends[0].IdempotencyKey)
	}
	// The server span ends after its reply is sent, so it may end after
	// the invoker has its answer: wait for the four spans by name, not
	// for a count (the attach's consumer span is among the ended ones).
	want := []string{"client send langbot.plugin.echo.command.*.*.*", "server process langbot.plugin.echo.command.*.*.*",
		"client send langbot.host.send_message.*.*.*", "client kv create langbot_echo"}
	spans := map[string]sdktrace.ReadOnlySpan{}
	all := func() bool {
		for _, s := range rec.Ended() {
			spans[s.SpanKind().String()+" "+s.Name()] = s
		}
		for _, name := range want {
			if spans[name] == nil {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(bustest.WaitTimeout); !all() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	client, server, action, kvSpan := spans[want[0]], spans[want[1]], spans[want[2]], spans[want[3]]
	if client == nil || server == nil || action == nil || kvSpan == nil {
		t.Fatalf("missing spans; have %v", keysOf(spans))
	}
	for _, s := range []sdktrace.ReadOnlySpan{client, server, action} {
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Fatalf("span %s is in another trace", s.Name())
		}
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), "secret") {
				t.Fatalf("span %s attribute %s carries chat text", s.Name(), kv.Key)
			}
		}
	}
	if server.Parent().SpanID() != client.SpanContext().SpanID() || action.Parent().SpanID() != server.SpanContext().SpanID() ||
		kvSpan.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Fatal("spans are not parent and child across the NATS hops")
	}
	if !hasAttr(server, attribute.String("messaging.system", "nats")) || !hasAttr(server, attribute.String("langbot.scope", "i.w.n")) {
		t.Fatalf("server span attributes %v", server.Attributes())
	}
}

func keysOf(m map[string]sdktrace.ReadOnlySpan) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func hasAttr(s sdktrace.ReadOnlySpan, want attribute.KeyValue) bool {
	for _, kv := range s.Attributes() {
		if kv == want {
			return true
		}
	}
	return false
}

func TestHostRefusalMarksSuperseded(t *testing.T) {
	var r *bus.Runner
	handlers := bus.Handlers{Command: func(ctx context.Context, inv *bus.Invocation) (any, error) {
		return wire.CommandReply{}, r.Host().SendMessage(ctx, inv.Binding, wire.SendMessage{BotUUID: "b", TargetType: "person", TargetID: "u"}, "k")
	}}
	h := newHarness(t, bus.RunnerConfig{Handlers: handlers}, bus.Deps{})
	r = h.runner
	host := bustest.NewHost(t, h.srv.Conn(t), wire.Subjects{})
	host.Respond(func(bustest.HostCall) bustest.HostReply { return bustest.HostReply{Err: wire.ErrBindingRefused} })
	b := bindingFor("i", "w", "n", 1, 1)
	h.attach(b, true, `{}`)
	h.waitAuthority(bus.ScopeOf(b), func(a *bus.Authority) bool { return a != nil })
	if _, err := h.command(b, "x"); err == nil {
		t.Fatal("want the host's refusal to surface")
	}
	h.waitAuthority(bus.ScopeOf(b), func(a *bus.Authority) bool { return a.State == bus.StateSuperseded })
}
