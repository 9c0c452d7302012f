package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// owningPart creates a stream and an object store of its own at start,
// as takeover's store does, and declares them (bus.ResourceOwner).
type owningPart struct{ js jetstream.JetStream }

const (
	ownedStream = "ECHO_OWNED"
	ownedBlobs  = "echo_blobs"
	oldStream   = "ECHO_OLD"
	schedStream = "ECHO_SCHED"
)

func (p *owningPart) Resources() bus.Resources {
	return bus.Resources{Streams: []string{ownedStream}, ObjectStores: []string{ownedBlobs},
		Inspected: []bus.Inspected{{Stream: oldStream, Why: "an earlier layout"}}}
}

func (p *owningPart) Start(ctx context.Context) error {
	if p.js == nil {
		return nil
	}
	if _, err := bus.EnsureStream(ctx, p.js, bus.StreamSpec{Name: ownedStream, Subjects: []string{wire.Subjects{}.InternalAll(plugin, "owned")}}); err != nil {
		return err
	}
	if _, err := p.js.Stream(ctx, oldStream); !errors.Is(err, jetstream.ErrStreamNotFound) {
		return errors.Join(errors.New("looking up the old stream"), err)
	}
	_, err := p.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: ownedBlobs})
	return err
}

func (p *owningPart) Stop(context.Context) error { return nil }

// grantsConfig is a runner with a stream of its own, a part that owns
// another stream and an object store, and a fired-message consumer on
// the part's stream.
func grantsConfig(js jetstream.JetStream, fired func(*bus.Fired)) bus.RunnerConfig {
	s := wire.Subjects{}
	return bus.RunnerConfig{Plugin: plugin, Handlers: echoHandlers(),
		Streams: []bus.StreamSpec{{Name: schedStream, Subjects: []string{s.InternalAll(plugin, "sched")}}},
		Parts:   []bus.Part{&owningPart{js: js}},
		Consumers: []bus.Consumer{{FiredConfig: bus.FiredConfig{Stream: ownedStream, Durable: "echo-owned", Filter: s.InternalAll(plugin, "owned")},
			Handler: func(ctx context.Context, f *bus.Fired) { _ = f.Ack(ctx); fired(f) }}},
	}
}

func TestRunnerGrantsNameItsDeclarations(t *testing.T) {
	srv := bustest.NewServer(t)
	r, err := bus.NewRunner(grantsConfig(nil, nil), bus.Deps{Conn: srv.Conn(t)})
	if err != nil {
		t.Fatal(err)
	}
	g := r.Grants()
	pub := g.PublishAllowed()
	for _, stream := range []string{schedStream, ownedStream, "OBJ_" + ownedBlobs, "KV_" + bus.Bucket(plugin), "KV_" + bus.DedupeBucket(plugin)} {
		for _, want := range bus.StreamGrants(stream) {
			if !slices.Contains(pub, want) {
				t.Errorf("%s not granted", want)
			}
		}
	}
	// the consumer's stream is the part's: granted once
	n := 0
	for _, gr := range g.Publish {
		if slices.Contains(gr.Subjects, "$JS.API.STREAM.CREATE."+ownedStream) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%s granted in %d groups, want 1", ownedStream, n)
	}
	if !slices.Contains(pub, "$JS.API.STREAM.INFO."+oldStream) || slices.Contains(pub, "$JS.API.STREAM.CREATE."+oldStream) {
		t.Errorf("the inspected stream: want info only, got %v", pub)
	}
	for _, want := range []string{"$O." + ownedBlobs + ".>", "$KV." + bus.Bucket(plugin) + ".>", "langbot.echo.>", "langbot.host.>"} {
		if !slices.Contains(pub, want) {
			t.Errorf("%s not granted", want)
		}
	}
	sub := g.SubscribeAllowed()
	for _, want := range []string{"langbot.plugin.echo.>", "_INBOX_echo.>", "$SRV.PING", "$SRV.*.echo"} {
		if !slices.Contains(sub, want) {
			t.Errorf("subscribe %s not granted (%v)", want, sub)
		}
	}
	if slices.Contains(sub, "langbot.plugin.>") || slices.Contains(pub, "langbot.plugin.>") {
		t.Error("a service may use every plugin's invocations")
	}
}

// TestRunnerRunsOnItsGrants starts a server from an accounts file
// rendered with the runner's own grants and runs the runner as its user:
// everything it declares works, and what it does not declare is refused
// by the server.
func TestRunnerRunsOnItsGrants(t *testing.T) {
	plain := bustest.NewServer(t)
	probe, err := bus.NewRunner(grantsConfig(nil, nil), bus.Deps{Conn: plain.Conn(t)})
	if err != nil {
		t.Fatal(err)
	}
	text, err := bus.RenderAccounts(wire.Subjects{}, []bus.UserGrants{probe.Grants().With(bus.AuthCalloutGrants())})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "accounts.conf")
	if err := os.WriteFile(path, text, 0o600); err != nil {
		t.Fatal(err)
	}
	acc := bustest.NewAccountsServer(t, path)

	var (
		mu     sync.Mutex
		denied []string
		got    []string
	)
	nc := acc.ConnAs(t, plugin, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		defer mu.Unlock()
		denied = append(denied, err.Error())
	}))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := bus.NewRunner(grantsConfig(js, func(f *bus.Fired) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, f.Subject)
	}), bus.Deps{Conn: nc, JetStream: js})
	if err != nil {
		t.Fatal(err)
	}
	bustest.Start(t, r)

	// the host invokes it; admin publishes the attach and a fired message
	admin, err := jetstream.New(acc.ConnAs(t, "admin"))
	if err != nil {
		t.Fatal(err)
	}
	b := bindingFor("i1", "w1", "n1", 1, 1)
	bustest.Attach(t, admin, plugin, b, json.RawMessage(`{}`), true)
	req := &wire.Request{Binding: b, Config: json.RawMessage(`{}`), Command: &wire.Command{Name: "echo", Params: []string{"hi"},
		Session: wire.Session{LauncherType: "person", LauncherID: "u1", SenderID: "u1", BotUUID: "bot"}}}
	out, err := bus.NewInvoker(acc.ConnAs(t, "host"), wire.Subjects{}, nil).Invoke(context.Background(), plugin, wire.EndpointCommand, "inv-1", req)
	if err != nil || !strings.Contains(string(out), `"hi"`) {
		t.Fatalf("invoke as host: %s, %v", out, err)
	}
	subj, err := wire.Subjects{}.Internal(plugin, "owned", bus.ScopeOf(b), "x")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bustest.WaitTimeout)
	defer cancel()
	if _, err := admin.Publish(ctx, subj, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the fired message on the part's stream", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(got, subj)
	})

	// not declared: refused
	refused := []struct{ what, subject string }{
		{"create the inspected stream", "$JS.API.STREAM.CREATE." + oldStream},
		{"delete its own stream", "$JS.API.STREAM.DELETE." + schedStream},
		{"another plugin's internal subject", "langbot.other.x.i1.w1.n1"},
		{"another plugin's bucket", "$KV.langbot_other.k"},
	}
	for _, c := range refused {
		if err := nc.Publish(c.subject, nil); err != nil {
			t.Fatal(err)
		}
		bustest.Eventually(t, "a permissions violation for "+c.what, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.ContainsFunc(denied, func(e string) bool {
				return strings.Contains(e, "Permissions Violation") && strings.Contains(e, c.subject)
			})
		})
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range denied {
		if !slices.ContainsFunc(refused, func(c struct{ what, subject string }) bool { return strings.Contains(e, c.subject) }) {
			t.Errorf("the runner was refused something it declared: %s", e)
		}
	}
}

// TestRenderAccountsRefusesDuplicateUsers: a service named like a
// deployment user would merge two users' permissions.
func TestRenderAccountsRefusesDuplicateUsers(t *testing.T) {
	for _, name := range []string{"host", "admin", bus.LegacyPackageUser, "Bad-Name"} {
		_, err := bus.RenderAccounts(wire.Subjects{}, []bus.UserGrants{{User: name}})
		if !errors.Is(err, bus.ErrAccounts) {
			t.Errorf("service user %q: got %v, want ErrAccounts", name, err)
		}
	}
	if _, err := bus.RenderAccounts(wire.Subjects{}, []bus.UserGrants{{User: "a"}, {User: "a"}}); !errors.Is(err, bus.ErrAccounts) {
		t.Errorf("two services a: got %v, want ErrAccounts", err)
	}
}
