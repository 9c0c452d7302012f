package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// countingHandlers counts handler calls, so a test can prove a refused
// request never reached the service.
func countingHandlers(calls *atomic.Int64) bus.Handlers {
	return bus.Handlers{
		Command: func(ctx context.Context, inv *bus.Invocation) (any, error) {
			calls.Add(1)
			return wire.CommandReply{Returns: []wire.Return{{Text: "ok"}}}, nil
		},
		Dedupe: func(*bus.Invocation) bool { return true },
	}
}

// keys lists every key of a bucket.
func keys(t *testing.T, js jetstream.JetStream, bucket string) []string {
	t.Helper()
	kv, err := js.KeyValue(context.Background(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	l, err := kv.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range l.Keys() {
		out = append(out, k)
	}
	return out
}

func TestRefusesMalformedScopesAndBindings(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls)}, bus.Deps{})
	long := strings.Repeat("x", 65)
	body := func(inst, ws, inst2 string) []byte {
		b, _ := json.Marshal(map[string]any{
			"binding": map[string]any{"instance_uuid": inst, "workspace_uuid": ws, "installation_uuid": inst2,
				"placement_generation": 1, "runtime_revision": 1, "artifact_digest": "d"},
			"config": map[string]any{}, "command": map[string]any{"name": "echo", "params": []string{}},
		})
		return b
	}
	good := body("i", "w", "n")
	installed := bindingFor("i", "w", "n", 1, 1)
	installed.ArtifactDigest = "d"
	h.install(installed)
	tests := []struct {
		name    string
		subject string
		body    []byte
		want    *wire.Error
	}{
		{"star in body", "langbot.plugin.echo.command.i.w.n", body("i", "*", "n"), wire.ErrBadRequest},
		{"gt in body", "langbot.plugin.echo.command.i.w.n", body("i", "w", ">"), wire.ErrBadRequest},
		{"dot in body", "langbot.plugin.echo.command.i.w.n", body("i", "w.x", "n"), wire.ErrBadRequest},
		{"space in body", "langbot.plugin.echo.command.i.w.n", body("i", "w x", "n"), wire.ErrBadRequest},
		{"65 chars in body", "langbot.plugin.echo.command.i.w.n", body(long, "w", "n"), wire.ErrBadRequest},
		{"65 chars in subject", "langbot.plugin.echo.command." + long + ".w.n", good, wire.ErrBadRequest},
		{"subject/body mismatch", "langbot.plugin.echo.command.i.w.other", good, wire.ErrBindingRefused},
		{"invalid UTF-8", "langbot.plugin.echo.command.i.w.n", []byte(strings.Replace(string(good), `"echo"`, "\"ech\xff\"", 1)), wire.ErrBadRequest},
		{"not JSON", "langbot.plugin.echo.command.i.w.n", []byte("{nope"), wire.ErrBadRequest},
		{"wrong types", "langbot.plugin.echo.command.i.w.n", []byte(`{"binding":{"instance_uuid":1}}`), wire.ErrBadRequest},
		{"no command", "langbot.plugin.echo.command.i.w.n", []byte(`{"binding":{"instance_uuid":"i","workspace_uuid":"w","installation_uuid":"n","placement_generation":1,"runtime_revision":1,"artifact_digest":"d"}}`), wire.ErrBadRequest},
		{"revision 0", "langbot.plugin.echo.command.i.w.n", []byte(strings.Replace(string(good), `"runtime_revision":1`, `"runtime_revision":0`, 1)), wire.ErrBadRequest},
		{"too large", "langbot.plugin.echo.command.i.w.n", append(good[:len(good)-1:len(good)-1], []byte(`,"pad":"`+strings.Repeat("a", 2<<20)+`"}`)...), wire.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.invoker.InvokeRaw(context.Background(), tt.subject, "inv-"+tt.name, tt.body)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			var e *wire.Error
			if errors.As(err, &e) && e.Message == "" {
				t.Error("error without a message")
			}
		})
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("handler ran %d times for refused requests", n)
	}
	for _, b := range []string{bus.Bucket(plugin), bus.DedupeBucket(plugin)} {
		for _, k := range keys(t, h.js, b) {
			if k != bus.AuthorityKey(bus.ScopeOf(installed)) { // the attach's
				t.Errorf("refused requests wrote key %s into %s", k, b)
			}
		}
	}
}

func TestMissingInvocationIDRefused(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls)}, bus.Deps{})
	_, err := h.command(bindingFor("i", "w", "n", 1, 1), "")
	if !errors.Is(err, wire.ErrBadRequest) || calls.Load() != 0 {
		t.Fatalf("got %v after %d calls", err, calls.Load())
	}
}
