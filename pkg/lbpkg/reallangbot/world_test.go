package reallangbot_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/langbot-nats/plugins/cmd/builtin"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/lbpkg"
	"github.com/langbot-nats/plugins/pkg/lbpkg/reallangbot"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// world is one real LangBot with the three packages' services on an
// embedded NATS server, a fake GitHub and a fake LLM.
type world struct {
	t     *testing.T
	lb    *reallangbot.LangBot
	srv   *bustest.Server
	gh    *fakegithub.Server
	llm   *reallangbot.FakeLLM
	logs  *bustest.LogBuffer
	pkgs  map[string]*lbpkg.Package // by plugin
	ids   map[string]string         // plugin -> author/name in LangBot
	setup reallangbot.ChatSetup

	schenotifyMetrics *prometheus.Registry

	mu       sync.Mutex
	attaches map[string]int64       // plugin -> highest revision attached
	sends    []sent                 // send_message requests, in order
	replies  map[string]*wire.Error // by reply subject: nil for a success
	// takeover's event requests, in order: the event's name, whether the
	// package's event gate had let it pass, and its Plain text
	takeoverEvents []seenEvent
}

// seenEvent is one event request of the HumanTakeover package.
type seenEvent struct {
	name   string
	passed bool
	body   string
}

// sent is one send_message request a service made.
type sent struct {
	body     string
	revision int64 // of the binding it carries
	reply    string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	env := reallangbot.Find(t)
	w := &world{t: t, srv: bustest.NewServer(t), logs: &bustest.LogBuffer{},
		pkgs: map[string]*lbpkg.Package{}, ids: map[string]string{}, attaches: map[string]int64{},
		replies: map[string]*wire.Error{}, schenotifyMetrics: prometheus.NewRegistry()}
	w.gh = fakegithub.New(fakegithub.Options{AutoRepos: true})
	t.Cleanup(w.gh.Close)
	w.llm = reallangbot.NewFakeLLM()
	t.Cleanup(w.llm.Close)
	for _, name := range builtin.Names() {
		decl, err := builtin.Declaration(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := lbpkg.Build(decl, lbpkg.Options{WheelPath: env.NatsWheel})
		if err != nil {
			t.Fatalf("build %s: %v", name, err)
		}
		w.pkgs[name] = p
		w.ids[name] = p.Author + "/" + p.Name
	}
	w.startServices()
	w.watch()
	w.lb = reallangbot.Boot(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	setup, err := w.lb.SetUpChat(ctx, w.llm.URL())
	if err != nil {
		t.Fatal(err)
	}
	w.setup = setup
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("services log (tail):\n%s", tail(w.logs.String(), 6000))
		}
	})
	return w
}

// startServices runs one replica of each service, as the package
// acceptance tests do.
func (w *world) startServices() {
	t := w.t
	key, err := bus.NewKeyString("k1")
	if err != nil {
		t.Fatal(err)
	}
	kr, err := bus.ParseKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	deps := func(plugin string) bus.Deps {
		log := slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("service", plugin)
		reg := prometheus.NewRegistry()
		if plugin == schenotify.Plugin {
			reg = w.schenotifyMetrics
		}
		return bus.Deps{Conn: w.srv.Conn(t), Keyring: kr, Logger: log, Registerer: reg}
	}
	gk, err := githubkit.New(githubkit.Config{Replicas: 1, AllowHTTP: true, AllowPrivateNetworks: true, DefaultAPIURL: w.gh.URL,
		HostTimeout: 5 * time.Second, GitHubTimeout: 5 * time.Second, MinPollInterval: 1, InvocationTimeout: 10 * time.Second}, deps(githubkit.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	bustest.Start(t, gk)
	to, err := takeover.New(takeover.Config{Replicas: 1, HostTimeout: 5 * time.Second, MinTakeoverTimeout: time.Second,
		NoticeRetry: []time.Duration{50 * time.Millisecond}}, deps(takeover.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	bustest.Start(t, to)
	sn, err := schenotify.New(schenotify.Config{Replicas: 1, DefaultZone: "UTC", SweepDelay: -1, SweepInterval: time.Hour,
		HostTimeout: 5 * time.Second, MinEvery: time.Second, InvocationTimeout: 10 * time.Second,
		Retry: schenotify.RetryPolicy{Cap: 4 * time.Second}}, deps(schenotify.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	bustest.Start(t, sn)
}

// config is what an operator types into a package's form: the NATS
// address and the service's own items.
func (w *world) config(plugin string, extra map[string]any) map[string]any {
	cfg := map[string]any{"nats_url": w.srv.URL(), "subject_prefix": "langbot", "language": "en_US"}
	for k, v := range extra {
		cfg[k] = v
	}
	return cfg
}

// install uploads plugin's package through LangBot's API and waits for
// the task; it returns the task as LangBot reports it.
func (w *world) install(t testing.TB, ctx context.Context, plugin string) reallangbot.Task {
	t.Helper()
	p := w.pkgs[plugin]
	id, err := w.lb.Install(ctx, p.FileName, p.Data)
	if err != nil {
		t.Fatalf("install %s: %v", plugin, err)
	}
	task, err := w.lb.WaitTask(ctx, id)
	if err != nil {
		t.Fatalf("install %s: %v", plugin, err)
	}
	return task
}

// chat opens a new web chat with the test's bot.
func (w *world) chat(t testing.TB, ctx context.Context) *reallangbot.Chat {
	t.Helper()
	c, err := w.lb.OpenChat(ctx, w.setup.Bot)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// say sends text and waits for an assistant message containing want.
func say(t *testing.T, ctx context.Context, c *reallangbot.Chat, text, want string) reallangbot.Received {
	t.Helper()
	n := len(c.Received())
	if err := c.Send(text); err != nil {
		t.Fatal(err)
	}
	got, err := c.WaitFor(ctx, n, want)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return got
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// watch records what the packages publish on NATS: every attach (the
// signal that a worker under a new revision is up), every send_message
// request a service makes (the signal that a delivery was attempted) and
// the package's answer to it (LangBot's, mapped: 404 for "Bot with
// bot_uuid ... not found").
func (w *world) watch() {
	t := w.t
	nc := w.srv.Conn(t)
	subj := wire.Subjects{}
	if _, err := nc.Subscribe(subj.LifecycleAll(), func(m *nats.Msg) {
		plugin, kind, _, err := subj.ParseLifecycle(m.Subject)
		if err != nil || kind != "attach" {
			return
		}
		var a struct {
			Binding struct {
				Revision int64 `json:"runtime_revision"`
			} `json:"binding"`
		}
		if json.Unmarshal(m.Data, &a) == nil {
			w.mu.Lock()
			w.attaches[plugin] = max(w.attaches[plugin], a.Binding.Revision)
			w.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe(subj.HostActionAll("send_message"), func(m *nats.Msg) {
		var req wire.HostRequest
		_ = json.Unmarshal(m.Data, &req)
		w.mu.Lock()
		w.sends = append(w.sends, sent{body: string(m.Data), revision: req.Binding.RuntimeRevision, reply: m.Reply})
		w.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe(subj.InvocationAll(takeover.Plugin, wire.EndpointEvent), func(m *nats.Msg) {
		var req wire.Request
		if json.Unmarshal(m.Data, &req) != nil || req.Event == nil {
			return
		}
		w.mu.Lock()
		w.takeoverEvents = append(w.takeoverEvents, seenEvent{name: req.Event.Name, passed: req.Event.Passed, body: string(req.Event.Data)})
		w.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	// The services' connections use the default inbox prefix (no NATS
	// user here): every reply to their requests passes this subscription.
	if _, err := nc.Subscribe(nats.InboxPrefix+">", func(m *nats.Msg) {
		w.mu.Lock()
		w.replies[m.Subject] = wire.DecodeReply(m.Header, m.Data)
		w.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// takeoverEventsSince returns the HumanTakeover event requests after the
// first n.
func (w *world) takeoverEventsSince(n int) []seenEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]seenEvent(nil), w.takeoverEvents[min(n, len(w.takeoverEvents)):]...)
}

// revision returns the highest runtime revision plugin's workers attached
// with so far.
func (w *world) revision(plugin string) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.attaches[plugin]
}

// sendsWith returns how many send_message requests so far carry substr.
func (w *world) sendsWith(substr string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, s := range w.sends {
		if strings.Contains(s.body, substr) {
			n++
		}
	}
	return n
}

// refusedSends returns how many send_message requests carrying substr,
// under a binding of revision rev or later, the package answered with
// code (LangBot's refusal as the package maps it).
func (w *world) refusedSends(substr string, rev int64, code int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, s := range w.sends {
		if e := w.replies[s.reply]; e != nil && e.Code == code && s.revision >= rev && strings.Contains(s.body, substr) {
			n++
		}
	}
	return n
}

// deliveries reads ScheNotify's schenotify_deliveries_total for outcome.
func (w *world) deliveries(t testing.TB, outcome string) float64 {
	t.Helper()
	families, err := w.schenotifyMetrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "schenotify_deliveries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("schenotify_deliveries_total{outcome=%q} not registered", outcome)
	return 0
}

// saveConfig saves plugin's form through LangBot's API and waits until
// the worker LangBot restarts under the new revision has attached (LangBot
// itself does not wait for it).
func (w *world) saveConfig(t testing.TB, ctx context.Context, plugin string, extra map[string]any) {
	t.Helper()
	before := w.revision(plugin)
	if err := w.lb.SetConfig(ctx, w.ids[plugin], w.config(plugin, extra)); err != nil {
		t.Fatalf("%s: saving the form: %v", plugin, err)
	}
	waitUntil(t, ctx, plugin+"'s worker attached under a new revision", func() bool { return w.revision(plugin) > before })
}

// waitUntil polls cond until it holds, or fails t when ctx ends.
func waitUntil(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// within returns a context for one step of a scenario.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
