package bus_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/natsembed"
	"github.com/langbot-nats/plugins/pkg/wire"
)

func ExampleSubjects() {
	s := wire.Subjects{}
	sc, _ := binding.ParseScope("inst.ws.install")
	fmt.Println(s.Invocation("schenotify", wire.EndpointTool, sc))
	due, _ := s.Internal("schenotify", "due", sc, "k7m2pq") // a kind the service declares
	fmt.Println(due)
	key, _ := bus.Key(sc, "reminder", "k7m2pq")
	fmt.Println(key)
	// Output:
	// langbot.plugin.schenotify.tool.inst.ws.install
	// langbot.schenotify.due.inst.ws.install.k7m2pq
	// inst.ws.install.reminder.k7m2pq
}

// ExampleRunner serves a command on an embedded server and invokes it the
// way the host does.
func ExampleRunner() {
	dir, _ := os.MkdirTemp("", "bus-example")
	defer os.RemoveAll(dir)
	srv, err := natsembed.Start(natsembed.Config{Dir: dir, Port: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()
	nc, _ := nats.Connect(srv.ClientURL())
	defer nc.Close()
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	_, _ = bus.EnsureLifecycleStream(ctx, js, wire.Subjects{}, 1)

	r, _ := bus.NewRunner(bus.RunnerConfig{
		Plugin: "shout",
		Handlers: bus.Handlers{Command: func(ctx context.Context, inv *bus.Invocation) (any, error) {
			return wire.CommandReply{Returns: []wire.Return{{Text: strings.ToUpper(strings.Join(inv.Command.Params, " "))}}}, nil
		}},
	}, bus.Deps{Conn: nc})
	if err := r.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer r.Shutdown(ctx)

	b := binding.Binding{InstanceUUID: "inst", WorkspaceUUID: "ws", InstallationUUID: "install",
		PlacementGeneration: 1, RuntimeRevision: 1, ArtifactDigest: "sha256:example"}
	// The host attaches an installation before it invokes it; until the
	// service has applied the attach, invocations get 403 not_attached.
	if _, err := bus.PublishAttach(ctx, js, wire.Subjects{}, "shout", wire.Attach{Binding: b, Enabled: true}, ""); err != nil {
		fmt.Println(err)
		return
	}
	for _, ok := r.View().Lookup(bus.ScopeOf(b)); !ok; _, ok = r.View().Lookup(bus.ScopeOf(b)) {
		time.Sleep(10 * time.Millisecond)
	}
	reply, err := bus.NewInvoker(nc, wire.Subjects{}, nil).Invoke(ctx, "shout", wire.EndpointCommand, "inv-1",
		&wire.Request{Binding: b, Command: &wire.Command{Name: "shout", Params: []string{"hello", "nats"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(reply))
	// Output: {"returns":[{"text":"HELLO NATS"}]}
}

// ExampleRecords keeps a typed record per key in a plugin's bucket and
// changes it by compare-and-set.
func ExampleRecords() {
	dir, _ := os.MkdirTemp("", "bus-example")
	defer os.RemoveAll(dir)
	srv, err := natsembed.Start(natsembed.Config{Dir: dir, Port: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()
	nc, _ := nats.Connect(srv.ClientURL())
	defer nc.Close()
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	bucket, _ := bus.EnsureBucket(ctx, js, "example_records", bus.BucketSpec{})
	kv := bus.NewKV(nc, bucket)
	defer kv.Close()

	type visits struct {
		Count int `json:"count"`
	}
	recs := bus.NewRecords(kv, "visits", bus.RecordsConfig[visits]{})
	sc, _ := binding.ParseScope("inst.ws.install")
	for range 3 {
		_, _, err := recs.Update(ctx, sc, func(cur *visits) (*visits, error) {
			if cur == nil {
				return &visits{Count: 1}, nil
			}
			return &visits{Count: cur.Count + 1}, nil
		}, "page1")
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	v, _, _ := recs.Get(ctx, sc, "page1")
	fmt.Println(v.Count)
	// Output: 3
}
