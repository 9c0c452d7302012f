package acceptance_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/cmd/builtin"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/lbpkg"
	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// Marker values of the package's NATS settings: PK-6 looks for them in
// every NATS body, log line and span attribute.
const (
	markerUser     = "pk6-user-c0ffee"
	markerPassword = "pk6-password-5ecret"
	markerToken    = "pk6-token-7oken"
)

// group is the chat every call of these tests comes from.
var group = runtimetest.Session{LauncherType: "group", LauncherID: "123456", SenderID: "42", BotUUID: "bot-1"}

// env is the three services, LangBot's real runtime and the three built
// packages installed in it.
type env struct {
	t     testing.TB
	stack *stack
	py    *runtimetest.Python
	rt    *runtimetest.Runtime
	pkgs  map[string]*lbpkg.Package
	ins   map[string]*runtimetest.Installation
}

// buildPackages builds the three packages with the wheel the runtime kit
// found (NATS_PY_WHEEL, as make packages takes it, overrides it).
func buildPackages(t testing.TB, py *runtimetest.Python) map[string]*lbpkg.Package {
	t.Helper()
	wheel := os.Getenv("NATS_PY_WHEEL")
	if wheel == "" {
		wheel = py.NatsWheel
	}
	if wheel == "" {
		runtimetest.Unavailable(t, "no nats-py wheel: set NATS_PY_WHEEL or LANGBOT_VENDOR")
	}
	out := map[string]*lbpkg.Package{}
	for _, name := range builtin.Names() {
		decl, err := builtin.Declaration(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := lbpkg.Build(decl, lbpkg.Options{WheelPath: wheel})
		if err != nil {
			t.Fatalf("build %s: %v", name, err)
		}
		out[name] = p
	}
	return out
}

// packageConfig is what an operator fills in LangBot's form: the NATS
// address (with the PK-6 markers as credentials; the test server has no
// auth, so it accepts them) and the service's own items.
func (s *stack) packageConfig(plugin string) map[string]any {
	cfg := map[string]any{"nats_url": s.srv.URL(), "nats_user": markerUser, "nats_password": markerPassword,
		"nats_token": markerToken, "subject_prefix": "langbot", "language": "en_US"}
	switch plugin {
	case githubkit.Plugin:
		cfg["poll_interval"] = 60
	case takeover.Plugin:
		cfg["takeover_timeout"] = 600
	case schenotify.Plugin:
		cfg["notify_prefix"] = "[Notify] "
	}
	return cfg
}

// newEnv starts everything and installs the packages named (all three when
// none), by upload and apply.
func newEnv(t testing.TB, plugins ...string) *env {
	t.Helper()
	e := startEnv(t)
	if len(plugins) == 0 {
		plugins = builtin.Names()
	}
	for _, p := range plugins {
		e.install(p)
	}
	// A service serves an installation only once the worker's attach,
	// published in the background at start, is applied (not_attached
	// before): wait for it as LangBot's first user message would not.
	for _, p := range plugins {
		e.waitApplied(p, e.ins[p])
	}
	return e
}

// waitApplied waits until in's attach is in the lifecycle stream and
// plugin's lifecycle consumer has applied everything published.
func (e *env) waitApplied(plugin string, in *runtimetest.Installation) {
	e.t.Helper()
	ctx := ctxT(e.t, time.Minute)
	bustest.EventuallyWithin(e.t, time.Minute, "attach of "+plugin, func() bool {
		_, m := e.lastAttach(ctx, plugin, in)
		return m.Sequence != 0
	})
	bustest.WaitLifecycle(e.t, e.stack.js, wire.Subjects{}, plugin, time.Minute)
}

// startEnv starts the services and the runtime and installs nothing.
func startEnv(t testing.TB) *env {
	t.Helper()
	py := runtimetest.FindPython(t)
	e := &env{t: t, stack: newStack(t), py: py, ins: map[string]*runtimetest.Installation{}}
	e.pkgs = buildPackages(t, py)
	e.stack.startAll()
	// One fake LLM model, for AI-written reminders (ai_test.go).
	e.rt = runtimetest.Start(t, py, runtimetest.Options{LLMModels: []string{fakeLLMModel}})
	return e
}

func (e *env) install(plugin string) *runtimetest.Installation {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pkg := e.pkgs[plugin]
	in, err := e.rt.Install(ctx, pkg.Data, pkg.Author, pkg.Name, e.stack.packageConfig(plugin))
	if err != nil {
		e.t.Fatalf("install %s: %v", plugin, err)
	}
	e.ins[plugin] = in
	return in
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
