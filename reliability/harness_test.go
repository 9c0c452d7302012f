package reliability_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// plugins are the three services, in a fixed order.
var plugins = []string{githubkit.Plugin, takeover.Plugin, schenotify.Plugin}

// soak reports whether the long runs were asked for (make e2e).
func soak() bool { return os.Getenv("LANGBOT_SOAK") == "1" }

// testLogger discards logs unless RELIABILITY_LOG=1.
func testLogger() *slog.Logger {
	if os.Getenv("RELIABILITY_LOG") == "1" {
		return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewJSONHandler(io.Discard, nil))
}

// stack is the three services on one bus with a fake host, a fake GitHub
// and an invoker speaking the host's side of the protocol.
type stack struct {
	t      testing.TB
	nc     *nats.Conn
	js     jetstream.JetStream
	host   *bustest.Host
	inv    *bustest.Invoker // attaches an installation before its first invocation
	gh     *fakegithub.Server
	keyStr string
	mu     sync.Mutex
	runs   []*running
	seq    atomic.Int64
	dueIn  time.Duration // how far ahead load reminders are due; default 2 h
	// notSaved holds the keys of operator replies answered "delivered,
	// not saved": their effect is the one host send.
	notSaved sync.Map
}

// running is one service replica in this process.
type running struct {
	svc    any // *githubkit.Service, *takeover.Service or *schenotify.Service
	plugin string
	run    *bustest.Running
}

// newStack prepares a stack on nc (the host's connection); services are
// started separately.
func newStack(t testing.TB, nc *nats.Conn) *stack {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	key, err := bus.NewKeyString("k1")
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, nc: nc, js: js, keyStr: key}
	s.host = bustest.NewHost(t, nc, wire.Subjects{})
	s.inv = bustest.NewInvoker(t, bus.NewInvoker(nc, wire.Subjects{}, nil), s.js, nil)
	s.gh = fakegithub.New(fakegithub.Options{AutoRepos: true})
	t.Cleanup(s.gh.Close)
	return s
}

// start runs one replica of plugin on nc until cleanup (or stop).
func (s *stack) start(plugin string, nc *nats.Conn, replicas int) *running {
	s.t.Helper()
	kr, err := bus.ParseKeyring(s.keyStr)
	if err != nil {
		s.t.Fatal(err)
	}
	var svc bustest.Service
	reg := prometheus.NewRegistry()
	switch plugin {
	case githubkit.Plugin:
		svc, err = githubkit.New(githubkit.Config{Replicas: replicas, AllowHTTP: true, AllowPrivateNetworks: true,
			HostTimeout: 2 * time.Second, GitHubTimeout: 2 * time.Second, MinPollInterval: 1, InvocationTimeout: 5 * time.Second},
			bus.Deps{Conn: nc, Keyring: kr, Logger: testLogger(), Registerer: reg})
	case takeover.Plugin:
		svc, err = takeover.New(takeover.Config{Replicas: replicas, HostTimeout: 2 * time.Second,
			MinTakeoverTimeout: time.Second, NoticeRetry: []time.Duration{50 * time.Millisecond}},
			bus.Deps{Conn: nc, Keyring: kr, Logger: testLogger(), Registerer: reg})
	case schenotify.Plugin:
		svc, err = schenotify.New(schenotify.Config{Replicas: replicas, DefaultZone: "UTC", SweepDelay: -1,
			SweepInterval: time.Hour, HostTimeout: 2 * time.Second, MinEvery: time.Second, InvocationTimeout: 5 * time.Second,
			Retry: schenotify.RetryPolicy{Cap: 4 * time.Second}},
			bus.Deps{Conn: nc, Logger: testLogger(), Registerer: reg})
	default:
		s.t.Fatalf("unknown plugin %q", plugin)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	r := &running{svc: svc, plugin: plugin}
	s.mu.Lock()
	s.runs = append(s.runs, r)
	s.mu.Unlock()
	r.run = bustest.Start(s.t, svc)
	return r
}

// startAll runs one replica of each service, each on its own connection.
func (s *stack) startAll(conn func() *nats.Conn) {
	s.t.Helper()
	for _, p := range plugins {
		s.start(p, conn(), 1)
	}
}

// install is one installation of each of the three plugins in one
// workspace: each plugin has its own installation uuid, hence its own scope.
type install struct {
	name string
	b    map[string]binding.Binding
	cfg  map[string]json.RawMessage
	sess wire.Session
	bot  string
}

func (i *install) scope(plugin string) binding.Scope { return bus.ScopeOf(i.b[plugin]) }

// newInstall names a fresh installation (nothing is published).
func (s *stack) newInstall(name string) *install {
	in := &install{name: name, b: map[string]binding.Binding{}, cfg: map[string]json.RawMessage{}, bot: "bot-" + name,
		sess: wire.Session{LauncherType: "person", LauncherID: wire.ID("u-" + name), SenderID: wire.ID("u-" + name), BotUUID: "bot-" + name}}
	for _, p := range plugins {
		in.b[p] = binding.Binding{InstanceUUID: "instance-1", WorkspaceUUID: "ws-" + name, PlacementGeneration: 1,
			InstallationUUID: p + "-" + name, RuntimeRevision: 1, ArtifactDigest: "sha256:reliability"}
	}
	in.cfg[githubkit.Plugin] = s.githubConfig(name, 3600)
	in.cfg[takeover.Plugin] = json.RawMessage(`{"language":"en_US"}`)
	in.cfg[schenotify.Plugin] = json.RawMessage(`{"language":"en_US"}`)
	return in
}

// githubConfig is githubkit's config for an installation on the fake
// GitHub, polling every interval seconds.
func (s *stack) githubConfig(name string, interval int) json.RawMessage {
	cfg, _ := json.Marshal(map[string]any{"language": "en_US", "github_token": "token-" + name, "github_api_url": s.gh.URL, "poll_interval": interval})
	return cfg
}

// repoWithEvent makes the fake GitHub serve repo with one watch event of
// the given id, polled every second.
func (s *stack) repoWithEvent(repo string, id int64) {
	s.gh.SetPollInterval(repo, 1)
	s.gh.AddEvents(repo, fakegithub.Event("watch", id))
}

// publishAttach publishes an attach of in's current binding for plugin.
func (s *stack) publishAttach(in *install, plugin string, enabled bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := bus.PublishAttach(ctx, s.js, wire.Subjects{}, plugin, wire.Attach{Binding: in.b[plugin], Config: in.cfg[plugin], Enabled: enabled}, ""); err != nil {
		s.t.Fatal(err)
	}
}

// publishRevoke publishes a revoke of in's current binding for plugin.
func (s *stack) publishRevoke(in *install, plugin, reason string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := bus.PublishRevoke(ctx, s.js, wire.Subjects{}, plugin, wire.Revoke{Binding: in.b[plugin], Reason: reason}, ""); err != nil {
		s.t.Fatal(err)
	}
}

// waitLifecycle waits until plugin's lifecycle consumer has acked
// everything published so far.
func (s *stack) waitLifecycle(plugin string) {
	s.t.Helper()
	bustest.WaitLifecycle(s.t, s.js, wire.Subjects{}, plugin, 30*time.Second)
}

// attachAll attaches every installation to every plugin and waits.
func (s *stack) attachAll(ins ...*install) {
	s.t.Helper()
	for _, in := range ins {
		for _, p := range plugins {
			s.publishAttach(in, p, true)
		}
	}
	for _, p := range plugins {
		s.waitLifecycle(p)
	}
}

func (s *stack) newID() string { return fmt.Sprintf("rel-%d-%d", time.Now().UnixNano(), s.seq.Add(1)) }

// invoke calls an endpoint as the host does.
func (s *stack) invoke(plugin string, ep wire.Endpoint, id string, req *wire.Request) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.inv.Invoke(ctx, plugin, ep, id, req)
}

// tool calls a schenotify tool and returns its result object.
func (s *stack) scheTool(in *install, id, name string, params any) (map[string]any, error) {
	p, _ := json.Marshal(params)
	raw, err := s.invoke(schenotify.Plugin, wire.EndpointTool, id, &wire.Request{Binding: in.b[schenotify.Plugin],
		Config: in.cfg[schenotify.Plugin], Tool: &wire.Tool{Name: name, Parameters: p, Session: in.sess}})
	if err != nil {
		return nil, err
	}
	var reply struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return nil, fmt.Errorf("decode %s: %w", raw, err)
	}
	return reply.Result, nil
}

// reminders lists the ids of in's reminders through list_notifications.
func (s *stack) reminders(in *install) ([]string, error) {
	r, err := s.scheTool(in, s.newID(), schenotify.ToolList, map[string]any{})
	if err != nil {
		return nil, err
	}
	if r["status"] != "ok" {
		return nil, fmt.Errorf("list: %v", r)
	}
	var ids []string
	items, _ := r["reminders"].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		id, _ := m["id"].(string)
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// ghCmd runs "!gh <line>" and returns the reply text.
func (s *stack) ghCmd(in *install, id, line string) (string, error) {
	params := strings.Fields(line)
	raw, err := s.invoke(githubkit.Plugin, wire.EndpointCommand, id, &wire.Request{Binding: in.b[githubkit.Plugin],
		Config: in.cfg[githubkit.Plugin], Command: &wire.Command{Name: "gh", Params: params, FullText: "!gh " + line,
			Prefix: "!", Session: in.sess, Privilege: 1}})
	if err != nil {
		return "", err
	}
	var rep wire.CommandReply
	if err := json.Unmarshal(raw, &rep); err != nil || len(rep.Returns) == 0 {
		return "", fmt.Errorf("reply %s: %v", raw, err)
	}
	var b strings.Builder
	for _, r := range rep.Returns {
		b.WriteString(r.Text)
		b.WriteString("\n")
	}
	return b.String(), nil
}

// subscriptions reads in's subscribed repositories (lower-cased full
// names) from the records under its scope; !gh subs shows the same.
func (s *stack) subscriptions(in *install) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := s.js.KeyValue(ctx, bus.Bucket(githubkit.Plugin))
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeysFiltered(ctx, in.scope(githubkit.Plugin).String()+".>")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for k := range lister.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		var r githubkit.RepoRecord
		if json.Unmarshal(e.Value(), &r) != nil || r.FullName == "" {
			continue
		}
		if len(r.Subscribers) > 0 {
			out = append(out, strings.ToLower(r.FullName))
		}
	}
	sort.Strings(out)
	return out, nil
}

// message sends a PersonMessageReceived event from launcher lid.
func (s *stack) message(in *install, id, lid, text string) (wire.EventReply, error) {
	chain, _ := json.Marshal([]map[string]string{{"type": "Plain", "text": text}})
	data, _ := json.Marshal(map[string]any{"launcher_type": "person", "launcher_id": lid, "sender_id": lid,
		"message_chain": json.RawMessage(chain)})
	raw, err := s.invoke(takeover.Plugin, wire.EndpointEvent, id, &wire.Request{Binding: in.b[takeover.Plugin],
		Config: in.cfg[takeover.Plugin], Event: &wire.Event{Name: takeover.EventPersonMessage, BotUUID: in.bot, Data: data}})
	var r wire.EventReply
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(raw, &r)
}

// sid is the console session id of in's person chat with lid.
func (in *install) sid(lid string) string {
	return model.SID(model.SessionKey(in.bot, "person", lid))
}

// page calls a console operation; out receives the data when non-nil.
func (s *stack) page(in *install, id, method, endpoint string, body any, out any) error {
	raw, _ := json.Marshal(body)
	reply, err := s.invoke(takeover.Plugin, wire.EndpointPage, id, &wire.Request{Binding: in.b[takeover.Plugin],
		Config: in.cfg[takeover.Plugin], Page: &wire.Page{PageID: "console", Endpoint: endpoint, Method: method, Body: raw}})
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	var pr struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(reply, &pr); err != nil {
		return err
	}
	return json.Unmarshal(pr.Data, out)
}

// sessions lists in's console sessions: sid -> taken over.
func (s *stack) sessions(in *install) (map[string]bool, error) {
	var l takeover.SessionList
	if err := s.page(in, s.newID(), "GET", "/sessions", map[string]any{"limit": 500}, &l); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, x := range l.Sessions {
		out[x.SID] = x.Takeover != nil && x.Takeover.Active
	}
	return out, nil
}

// isCode reports whether err is a *wire.Error with the given code.
func isCode(err error, code int) bool {
	var e *wire.Error
	return errors.As(err, &e) && e.Code == code
}

func getenv(k string) string { return os.Getenv(k) }
