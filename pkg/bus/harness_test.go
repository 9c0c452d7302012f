package bus_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

const plugin = "echo"

type harness struct {
	t       *testing.T
	srv     *bustest.Server
	js      jetstream.JetStream
	runner  *bus.Runner
	invoker *bus.Invoker
	// manualAttach keeps command from attaching an installation first.
	manualAttach bool
}

func bindingFor(inst, ws, installation string, gen, rev int64) binding.Binding {
	return binding.Binding{InstanceUUID: inst, WorkspaceUUID: ws, InstallationUUID: installation,
		PlacementGeneration: gen, RuntimeRevision: rev, ArtifactDigest: "sha256:test"}
}

func newHarness(t *testing.T, cfg bus.RunnerConfig, deps bus.Deps) *harness {
	t.Helper()
	srv := bustest.NewServer(t)
	h := &harness{t: t, srv: srv, js: srv.JetStream(t)}
	cfg.Plugin = plugin
	deps.Conn = srv.Conn(t)
	r, err := bus.NewRunner(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	bustest.Start(t, r)
	h.runner = r
	h.invoker = bus.NewInvoker(srv.Conn(t), wire.Subjects{}, nil)
	return h
}

// command invokes the echo command; the installation is attached first
// (as its host would) unless the test attached it itself or set
// manualAttach.
func (h *harness) command(b binding.Binding, id string, words ...string) (json.RawMessage, error) {
	if !h.manualAttach && h.js != nil && b.Validate() == nil {
		bustest.EnsureAttached(h.t, h.js, plugin, b, nil)
	}
	req := &wire.Request{Binding: b, Config: json.RawMessage(`{}`), Command: &wire.Command{Name: "echo", Params: words,
		Session: wire.Session{LauncherType: "person", LauncherID: "u1", SenderID: "u1", BotUUID: "bot"}}}
	return h.invoker.Invoke(context.Background(), plugin, wire.EndpointCommand, id, req)
}

func (h *harness) attach(b binding.Binding, enabled bool, config string) {
	h.t.Helper()
	if _, err := bus.PublishAttach(context.Background(), h.js, wire.Subjects{}, plugin, wire.Attach{Binding: b, Config: json.RawMessage(config), Enabled: enabled}, ""); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) revoke(b binding.Binding, reason string) {
	h.t.Helper()
	if _, err := bus.PublishRevoke(context.Background(), h.js, wire.Subjects{}, plugin, wire.Revoke{Binding: b, Reason: reason}, ""); err != nil {
		h.t.Fatal(err)
	}
}

// waitAuthority waits until the stored authority satisfies cond.
func (h *harness) waitAuthority(sc binding.Scope, cond func(*bus.Authority) bool) *bus.Authority {
	h.t.Helper()
	return bustest.WaitStored(h.t, h.runner, sc, cond)
}

// waitLifecycleDrained waits until the plugin's lifecycle consumer has
// acknowledged everything published so far.
func (h *harness) waitLifecycleDrained() {
	h.t.Helper()
	bustest.WaitLifecycle(h.t, h.js, wire.Subjects{}, plugin, 10*time.Second)
}

// install attaches b (enabled, empty config) and waits until the runner
// applied it: an invocation on a scope never attached is refused
// (not_attached).
func (h *harness) install(b binding.Binding) {
	h.t.Helper()
	bustest.Attach(h.t, h.js, plugin, b, json.RawMessage(`{}`), true)
	bustest.WaitAuthority(h.t, h.runner, bus.ScopeOf(b), func(a bus.Authority) bool { return a.Binding == b })
}
