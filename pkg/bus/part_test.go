package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// events records what the runner and its parts did, in order.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(s string) { e.mu.Lock(); e.log = append(e.log, s); e.mu.Unlock() }
func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.log)
}

// recordingPart records its start and stop and whether the runner was
// ready (intake open) when it started.
func recordingPart(ev *events, name string, r **bus.Runner, startErr error) bus.Part {
	return bus.PartFuncs{
		StartFunc: func(ctx context.Context) error {
			if (*r).Ready() {
				ev.add(name + " started after intake")
			}
			ev.add("start " + name)
			return startErr
		},
		StopFunc: func(ctx context.Context) error { ev.add("stop " + name); return nil },
	}
}

// The runner starts the parts in order before intake opens and stops them
// in reverse after the running handler returned; Run returns nil for a
// requested stop.
func TestRunnerRunPartsOrder(t *testing.T) {
	srv := bustest.NewServer(t)
	ev := &events{}
	var r *bus.Runner
	entered, release := make(chan struct{}), make(chan struct{})
	cfg := bus.RunnerConfig{Plugin: plugin, Handlers: bus.Handlers{
		Command: func(ctx context.Context, inv *bus.Invocation) (any, error) {
			close(entered)
			<-release
			ev.add("handler returned")
			return wire.CommandReply{}, nil
		}},
		Parts: []bus.Part{recordingPart(ev, "a", &r, nil), recordingPart(ev, "b", &r, nil),
			bus.Loop(func(ctx context.Context) { <-ctx.Done(); ev.add("loop done") })},
	}
	var err error
	if r, err = bus.NewRunner(cfg, bus.Deps{Conn: srv.Conn(t)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	bustest.Eventually(t, "runner ready", r.Ready)
	bustest.Attach(t, srv.JetStream(t), plugin, bindingFor("i1", "w1", "n1", 1, 1), json.RawMessage(`{}`), true)
	h := &harness{t: t, invoker: bus.NewInvoker(srv.Conn(t), wire.Subjects{}, nil)}
	replied := make(chan error, 1)
	go func() { _, err := h.command(bindingFor("i1", "w1", "n1", 1, 1), "inv-1", "x"); replied <- err }()
	<-entered
	cancel()
	bustest.Eventually(t, "not ready once stopping", func() bool { return !r.Ready() })
	close(release)
	if err := <-replied; err != nil {
		t.Fatalf("in-flight command: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
	}
	want := []string{"start a", "start b", "handler returned", "loop done", "stop b", "stop a"}
	if got := ev.list(); !slices.Equal(got, want) {
		t.Fatalf("order = %q, want %q", got, want)
	}
}

// A part that fails to start fails Run; the parts started before it are
// stopped and the runner never becomes ready.
func TestRunnerRunPartStartFails(t *testing.T) {
	srv := bustest.NewServer(t)
	ev := &events{}
	var r *bus.Runner
	boom := errors.New("boom")
	cfg := bus.RunnerConfig{Plugin: plugin, Handlers: echoHandlers(),
		Parts: []bus.Part{recordingPart(ev, "a", &r, nil), recordingPart(ev, "b", &r, boom), recordingPart(ev, "c", &r, nil)}}
	var err error
	if r, err = bus.NewRunner(cfg, bus.Deps{Conn: srv.Conn(t)}); err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the part's error", err)
	}
	if r.Ready() {
		t.Fatal("ready after a failed start")
	}
	want := []string{"start a", "start b", "stop a"}
	if got := ev.list(); !slices.Equal(got, want) {
		t.Fatalf("order = %q, want %q", got, want)
	}
}

func TestNewRunnerRejectsBadDeclarations(t *testing.T) {
	srv := bustest.NewServer(t)
	for name, cfg := range map[string]bus.RunnerConfig{
		"nil part":            {Plugin: plugin, Parts: []bus.Part{nil}},
		"consumer no handler": {Plugin: plugin, Consumers: []bus.Consumer{{FiredConfig: bus.FiredConfig{Stream: "S", Durable: "d"}}}},
		"consumer no stream":  {Plugin: plugin, Consumers: []bus.Consumer{{FiredConfig: bus.FiredConfig{Durable: "d"}, Handler: func(context.Context, *bus.Fired) {}}}},
		"bad plugin":          {Plugin: "a.b"},
	} {
		if _, err := bus.NewRunner(cfg, bus.Deps{Conn: srv.Conn(t)}); !errors.Is(err, bus.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := bus.NewRunner(bus.RunnerConfig{Plugin: plugin}, bus.Deps{}); !errors.Is(err, bus.ErrInvalidConfig) {
		t.Errorf("no connection: %v, want ErrInvalidConfig", err)
	}
}
