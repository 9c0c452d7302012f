package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// TestRunnerOnThreeNodeCluster serves a plugin with R3 buckets and keeps
// serving (and writing authorities) after the leader of the plugin's bucket
// stops.
func TestRunnerOnThreeNodeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := bustest.NewCluster(t, 3)
	nc := c.Conn(t)
	r, err := bus.NewRunner(bus.RunnerConfig{Plugin: plugin, Handlers: echoHandlers(), Replicas: 3}, bus.Deps{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	js, err := jetstream.New(c.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	bustest.Attach(t, js, plugin, bindingFor("i", "w", "n", 1, 1), json.RawMessage(`{}`), true)
	inv := bus.NewInvoker(c.Conn(t), wire.Subjects{}, nil)
	call := func(rev int64, id string) error {
		b := bindingFor("i", "w", "n", 1, rev)
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := inv.Invoke(cctx, plugin, wire.EndpointCommand, id, &wire.Request{Binding: b, Config: json.RawMessage(`{}`), Command: &wire.Command{Name: "e", Params: []string{"x"}}})
		return err
	}
	// interest crosses the cluster's routes asynchronously: the first call
	// may find no responders on the host's node for a moment
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := call(1, "c1")
		if err == nil {
			break
		}
		if !errors.Is(err, bus.ErrNoService) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	leader := c.StreamLeader(t, "KV_"+bus.Bucket(plugin))
	leader.Stop()
	// a newer binding must be stored after the election
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := call(2, "c2-"+time.Now().Format("150405.000"))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no service after the bucket leader stopped: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		actx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		a, err := r.Authority(actx, bus.ScopeOf(bindingFor("i", "w", "n", 1, 2)))
		cancel()
		if err == nil && a != nil && a.Binding.RuntimeRevision == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("authority not updated after election: %+v %v", a, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
