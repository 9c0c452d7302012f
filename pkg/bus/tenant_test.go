package bus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// shippedAccounts is the deployment's accounts file: the tests run the
// NATS configuration that ships.
const shippedAccounts = "../../deploy/k8s/base/nats/accounts.conf"

// recorder is a connection that keeps the asynchronous errors the server
// sends it (permissions violations arrive that way).
type recorder struct {
	name string
	nc   *nats.Conn
	mu   sync.Mutex
	errs []error
}

func (r *recorder) onErr(_ *nats.Conn, _ *nats.Subscription, err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

// violated waits for a permissions violation of kind ("Publish to",
// "Subscription to") on subject.
func (r *recorder) violated(t *testing.T, kind, subject string) bool {
	t.Helper()
	want := strings.ToLower(fmt.Sprintf("%s %q", kind, subject))
	found := false
	bustest.EventuallyWithin(t, 10*time.Second, "", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, err := range r.errs {
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(strings.ToLower(err.Error()), want) {
				found = true
			}
		}
		return found
	})
	return found
}

func (r *recorder) deniedPub(t *testing.T, subject string) {
	t.Helper()
	if err := r.nc.Publish(subject, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if !r.violated(t, "Publish to", subject) {
		t.Errorf("%s: publish to %s was not refused", r.name, subject)
	}
}

func (r *recorder) deniedSub(t *testing.T, subject, queue string) {
	t.Helper()
	sub, err := r.nc.QueueSubscribeSync(subject, queue)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if !r.violated(t, "Subscription to", subject) {
		t.Errorf("%s: subscription to %s (queue %q) was not refused", r.name, subject, queue)
	}
}

func (r *recorder) clean(t *testing.T) {
	t.Helper()
	if err := r.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, err := range r.errs {
		t.Errorf("%s: unexpected asynchronous error: %v", r.name, err)
	}
	r.errs = nil
}

// tenantConn logs in with a tenant credential as a LangBot package does:
// user and password, inbox prefix _INBOX_<user>, the package's
// connection name.
func tenantConn(url, user, secret, name string, opts ...nats.Option) (*recorder, error) {
	r := &recorder{name: user}
	nc, err := nats.Connect(url, append([]nats.Option{nats.UserInfo(user, secret), nats.Name(name),
		nats.CustomInboxPrefix(wire.InboxPrefixFor(user)),
		nats.ErrorHandler(r.onErr)}, opts...)...)
	r.nc = nc
	return r, err
}

func mustScope(t *testing.T, s string) binding.Scope {
	t.Helper()
	sc, err := binding.ParseScope(s)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestTenantCredentials runs the shipped accounts with the auth callout and
// two tenants, A (a whole instance) and B (one workspace of another), and
// proves that NATS itself keeps each to its own subjects while its own
// traffic (invoke, attach, serve a host action) works; that revoking A
// closes its connections and refuses its logins; and that the legacy user
// and wrong credentials behave as documented.
func TestTenantCredentials(t *testing.T) {
	srv := bustest.NewAccountsServer(t, shippedAccounts)
	srv.StartAuthCallout(t, "takeover")
	kv := srv.TenantBucket(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	subj := wire.Subjects{}

	ta, secretA, err := bus.IssueTenant(ctx, kv, bus.IssueRequest{Instance: "inst-a"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tb, secretB, err := bus.IssueTenant(ctx, kv, bus.IssueRequest{Name: "t-bravo", Instance: "inst-b", Workspace: "ws-b"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bus.IssueTenant(ctx, kv, bus.IssueRequest{Name: "t-bravo", Instance: "inst-c"}, time.Now()); !errors.Is(err, bus.ErrTenantExists) {
		t.Fatalf("issue t-bravo again: got %v, want %v", err, bus.ErrTenantExists)
	}
	scA := mustScope(t, "inst-a.ws-1.ins-a1")
	scA2 := mustScope(t, "inst-a.ws-2.ins-a2") // another workspace of A's instance
	scB := mustScope(t, "inst-b.ws-b.ins-b1")
	scBOther := mustScope(t, "inst-b.ws-x.ins-b2") // B's instance, not B's workspace

	a, err := tenantConn(srv.URL(), ta.Name, secretA, wire.PackageConnName("schenotify", scA))
	if err != nil {
		t.Fatalf("tenant A login: %v", err)
	}
	defer a.nc.Close()
	b, err := tenantConn(srv.URL(), tb.Name, secretB, wire.PackageConnName("schenotify", scB))
	if err != nil {
		t.Fatalf("tenant B login: %v", err)
	}
	defer b.nc.Close()

	// The service side: schenotify answers every invocation and sends host
	// actions; it must not see its own replies taken by a tenant.
	svc := srv.ConnAs(t, "schenotify")
	served, err := svc.QueueSubscribe("langbot.plugin.schenotify.>", "schenotify", func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"served":"` + m.Subject + `"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer served.Unsubscribe()
	if err := svc.Flush(); err != nil {
		t.Fatal(err)
	}

	own := func(t *testing.T, r *recorder, sc binding.Scope) {
		t.Helper()
		// invoke each endpoint of its own scope
		for _, ep := range wire.Endpoints {
			s := subj.Invocation("schenotify", ep, sc)
			m, err := r.nc.RequestWithContext(ctx, s, []byte(`{}`))
			if err != nil {
				t.Fatalf("%s: invoke %s: %v", r.name, s, err)
			}
			if want := `{"served":"` + s + `"}`; string(m.Data) != want {
				t.Fatalf("%s: invoke %s: got %s, want %s", r.name, s, m.Data, want)
			}
		}
		// attach: a JetStream publish with its PubAck on the tenant's inbox
		js, err := jetstream.New(r.nc)
		if err != nil {
			t.Fatal(err)
		}
		ack, err := js.Publish(ctx, subj.Lifecycle("schenotify", wire.LifecycleAttach, sc), []byte(`{"enabled":true}`))
		if err != nil || ack.Stream != wire.LifecycleStream {
			t.Fatalf("%s: attach %s: %+v %v", r.name, sc, ack, err)
		}
		// serve its host actions in the installation's queue group
		hs, err := r.nc.QueueSubscribe(subj.HostAction("*", sc), "schenotify-"+sc.Installation(), func(m *nats.Msg) {
			_ = m.Respond([]byte(`{"from":"` + r.name + `"}`))
		})
		if err != nil {
			t.Fatal(err)
		}
		defer hs.Unsubscribe()
		if err := r.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		m, err := svc.RequestWithContext(ctx, subj.HostAction(wire.ActionSendMessage, sc), []byte(`{}`))
		if err != nil {
			t.Fatalf("%s: host action on %s: %v", r.name, sc, err)
		}
		if want := `{"from":"` + r.name + `"}`; string(m.Data) != want {
			t.Fatalf("%s: host action: got %s, want %s", r.name, m.Data, want)
		}
		r.clean(t)
	}
	t.Run("own traffic", func(t *testing.T) {
		own(t, a, scA)
		own(t, a, scA2) // an instance credential covers every workspace
		own(t, b, scB)
	})

	t.Run("A cannot reach B", func(t *testing.T) {
		for _, ep := range wire.Endpoints {
			a.deniedPub(t, subj.Invocation("schenotify", ep, scB))
			a.deniedPub(t, subj.Invocation("takeover", ep, scB))
		}
		a.deniedPub(t, subj.Lifecycle("schenotify", wire.LifecycleAttach, scB))
		a.deniedPub(t, subj.Lifecycle("schenotify", wire.LifecycleRevoke, scA)) // no revoke, even its own
		a.deniedSub(t, subj.HostAll(), "")
		a.deniedSub(t, "langbot.host.*.*.*.*", "")
		a.deniedSub(t, subj.HostAction(wire.ActionSendMessage, scB), "")
		// B's queue group, with its predictable name
		a.deniedSub(t, subj.HostAction("*", scB), "schenotify-"+scB.Installation())
		a.deniedSub(t, wire.InboxPrefixFor(tb.Name)+".>", "")
		a.deniedSub(t, "_INBOX_schenotify.>", "")
		a.deniedSub(t, "_INBOX.>", "")
		a.deniedSub(t, ">", "")
		a.deniedPub(t, "_INBOX_schenotify.forged")
		a.deniedPub(t, "$JS.API.INFO")
		a.deniedPub(t, "$JS.API.STREAM.INFO.LANGBOT_LIFECYCLE")
		a.deniedPub(t, "$JS.API.DIRECT.GET.KV_langbot_tenants."+"$KV.langbot_tenants."+tb.Name)
		a.deniedPub(t, "$KV.langbot_tenants."+ta.Name)
		a.deniedPub(t, bus.AuthCalloutSubject)
		a.deniedSub(t, bus.AuthCalloutSubject, bus.AuthCalloutQueue)
		a.deniedPub(t, "langbot.schenotify.due."+scA.String()+".r1")
		a.deniedPub(t, "$SRV.PING")
	})

	t.Run("B cannot reach its instance's other workspaces", func(t *testing.T) {
		b.deniedPub(t, subj.Invocation("schenotify", wire.EndpointCommand, scBOther))
		b.deniedPub(t, subj.Lifecycle("schenotify", wire.LifecycleAttach, scBOther))
		b.deniedSub(t, subj.HostAction("*", scBOther), "")
		b.deniedPub(t, subj.Invocation("schenotify", wire.EndpointCommand, scA))
	})

	t.Run("refused logins", func(t *testing.T) {
		for _, c := range []struct{ name, user, secret string }{
			{"wrong secret", ta.Name, secretB},
			{"unknown tenant", "t-nobody", secretA},
			{"not a tenant name", "mallory", secretA},
			{"legacy user with a tenant secret", "langbot_pkg", secretA},
		} {
			t.Run(c.name, func(t *testing.T) {
				r, err := tenantConn(srv.URL(), c.user, c.secret, "x", nats.NoReconnect())
				if err == nil {
					r.nc.Close()
					t.Fatal("login passed")
				}
				if !errors.Is(err, nats.ErrAuthorization) {
					t.Fatalf("got %v, want %v", err, nats.ErrAuthorization)
				}
			})
		}
	})

	t.Run("legacy user still logs in", func(t *testing.T) {
		nc := srv.ConnAs(t, "langbot_pkg")
		if _, err := nc.RequestWithContext(ctx, subj.Invocation("schenotify", wire.EndpointCommand, scB), []byte(`{}`)); err != nil {
			t.Fatalf("langbot_pkg invoke: %v", err)
		}
	})

	t.Run("list", func(t *testing.T) {
		ts, err := bus.ListTenants(ctx, kv)
		if err != nil {
			t.Fatal(err)
		}
		scopes := map[string]string{}
		for _, x := range ts {
			scopes[x.Name] = x.Scope()
		}
		if len(ts) != 2 || scopes[ta.Name] != "inst-a.*" || scopes[tb.Name] != "inst-b.ws-b" {
			t.Fatalf("list: got %+v", ts)
		}
		for _, x := range ts {
			if strings.Contains(fmt.Sprint(x), secretA) || strings.Contains(fmt.Sprint(x), secretB) {
				t.Fatal("a record holds a secret in clear")
			}
		}
	})

	t.Run("revoke", func(t *testing.T) {
		reconnected := make(chan struct{}, 1)
		a2, err := tenantConn(srv.URL(), ta.Name, secretA, "second worker",
			nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1),
			nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} }))
		if err != nil {
			t.Fatal(err)
		}
		defer a2.nc.Close()
		began := time.Now()
		if err := bus.RemoveTenant(ctx, kv, ta.Name); err != nil {
			t.Fatal(err)
		}
		if err := bus.RemoveTenant(ctx, kv, ta.Name); !errors.Is(err, bus.ErrTenantNotFound) {
			t.Fatalf("revoke twice: got %v, want %v", err, bus.ErrTenantNotFound)
		}
		sys := srv.ConnAs(t, "sys")
		n, err := bus.KickUser(ctx, sys, ta.Name)
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Fatalf("kicked %d connections, want 2", n)
		}
		bustest.Eventually(t, "A's connections down", func() bool { return !a.nc.IsConnected() && !a2.nc.IsConnected() })
		// the revocation latency an operator sees (a figure, not a check)
		t.Logf("revoke: record removed and %d connections closed %v after the revoke began", n, time.Since(began).Round(time.Millisecond))
		// A keeps trying to reconnect and every login is refused.
		bustest.Eventually(t, "A's reconnects refused", func() bool {
			a2.mu.Lock()
			defer a2.mu.Unlock()
			for _, e := range a2.errs {
				if errors.Is(e, nats.ErrAuthorization) || strings.Contains(strings.ToLower(e.Error()), "authorization") {
					return true
				}
			}
			return false
		})
		select {
		case <-reconnected:
			t.Fatal("a revoked tenant reconnected")
		default:
		}
		if r, err := tenantConn(srv.URL(), ta.Name, secretA, "new", nats.NoReconnect()); !errors.Is(err, nats.ErrAuthorization) {
			if err == nil {
				r.nc.Close()
			}
			t.Fatalf("login after revoke: got %v, want %v", err, nats.ErrAuthorization)
		}
		// B is untouched.
		if _, err := b.nc.RequestWithContext(ctx, subj.Invocation("schenotify", wire.EndpointTool, scB), []byte(`{}`)); err != nil {
			t.Fatalf("B after A's revoke: %v", err)
		}
	})
}

// TestTenantClaim: the single-host set-ups issue their first credential
// before any LangBot connected; its first login from a package binds it to
// that package's instance, and from then on it is that instance's.
func TestTenantClaim(t *testing.T) {
	srv := bustest.NewAccountsServer(t, shippedAccounts)
	srv.StartAuthCallout(t, "githubkit")
	kv := srv.TenantBucket(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	tc, secret, err := bus.IssueTenant(ctx, kv, bus.IssueRequest{Name: "t-first", Claim: true, IfBucketNew: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !tc.Claimable() || tc.Scope() != "unclaimed" {
		t.Fatalf("got %+v, want an unclaimed credential", tc)
	}
	if _, err := tenantConn(srv.URL(), tc.Name, secret, "not a package", nats.NoReconnect()); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("claim without a package name: got %v, want %v", err, nats.ErrAuthorization)
	}
	mine := mustScope(t, "inst-home.default.ins-1")
	r, err := tenantConn(srv.URL(), tc.Name, secret, wire.PackageConnName("githubkit", mine))
	if err != nil {
		t.Fatalf("first login: %v", err)
	}
	defer r.nc.Close()
	got, _, err := bus.LookupTenant(ctx, kv, tc.Name)
	if err != nil || got.Instance != "inst-home" || got.ClaimedAt == nil {
		t.Fatalf("after the first login: %+v %v", got, err)
	}
	// A second login naming another instance gets the claimed instance's
	// grants only.
	other := mustScope(t, "inst-other.default.ins-9")
	r2, err := tenantConn(srv.URL(), tc.Name, secret, wire.PackageConnName("githubkit", other))
	if err != nil {
		t.Fatal(err)
	}
	defer r2.nc.Close()
	r2.deniedPub(t, wire.Subjects{}.Invocation("githubkit", wire.EndpointCommand, other))
	// The set-up does not bring a first tenant back once the bucket held one.
	if _, _, err := bus.IssueTenant(ctx, kv, bus.IssueRequest{Name: "t-again", Claim: true, IfBucketNew: true}, time.Now()); !errors.Is(err, bus.ErrTenantExists) {
		t.Fatalf("second first tenant: got %v, want %v", err, bus.ErrTenantExists)
	}
}

func TestTenantGrants(t *testing.T) {
	g, err := bus.Tenant{Name: "t-x", Instance: "i1", Workspace: "w1", SecretSHA256: strings.Repeat("0", 64)}.Grants(wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	want := bus.TenantGrants{
		Publish: []string{"langbot.plugin.*.command.i1.w1.*", "langbot.plugin.*.event.i1.w1.*", "langbot.plugin.*.tool.i1.w1.*",
			"langbot.plugin.*.page.i1.w1.*", "langbot.lifecycle.*.attach.i1.w1.*"},
		Subscribe: []string{"langbot.host.*.i1.w1.*", "_INBOX_t-x.>"},
	}
	if fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", g, want)
	}
	for name, bad := range map[string]bus.Tenant{
		"unclaimed":           {Name: "t-x", SecretSHA256: strings.Repeat("0", 64)},
		"wildcard instance":   {Name: "t-x", Instance: "*", SecretSHA256: strings.Repeat("0", 64)},
		"dotted workspace":    {Name: "t-x", Instance: "i", Workspace: "a.b", SecretSHA256: strings.Repeat("0", 64)},
		"name not a tenant's": {Name: "host", Instance: "i", SecretSHA256: strings.Repeat("0", 64)},
		"no hash":             {Name: "t-x", Instance: "i"},
	} {
		if _, err := bad.Grants(wire.Subjects{}); !errors.Is(err, bus.ErrTenant) {
			t.Errorf("%s: got %v, want %v", name, err, bus.ErrTenant)
		}
	}
}

// TestLegacyUserWarning: while packages log in as the shared legacy user,
// the responder warns, naming the risk, and never logs a secret.
func TestLegacyUserWarning(t *testing.T) {
	srv := bustest.NewAccountsServer(t, shippedAccounts)
	var logs bustest.LogBuffer
	ac, err := bus.NewAuthCallout(bus.AuthCalloutConfig{Conn: srv.ConnAs(t, "schenotify"), IssuerSeed: srv.IssuerSeed,
		Account: "LANGBOT", Logger: slog.New(slog.NewJSONHandler(&logs, nil)), LegacyCheck: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := ac.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ac.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	if strings.Contains(logs.String(), "legacy user") {
		t.Fatalf("a warning before any legacy connection: %s", logs.String())
	}
	srv.ConnAs(t, bus.LegacyPackageUser)
	bustest.Eventually(t, "the legacy warning", func() bool {
		return strings.Contains(logs.String(), `"connections":1`) && strings.Contains(logs.String(), "act as the host of every installation")
	})
	if strings.Contains(logs.String(), srv.Passwords[bus.LegacyPackageUser]) {
		t.Fatal("a password in the log")
	}
}

func ExampleTenant_Grants() {
	g, _ := bus.Tenant{Name: "t-acme", Instance: "inst-1", SecretSHA256: strings.Repeat("0", 64)}.Grants(wire.Subjects{})
	for _, s := range g.Publish {
		fmt.Println("publish  ", s)
	}
	for _, s := range g.Subscribe {
		fmt.Println("subscribe", s)
	}
	// Output:
	// publish   langbot.plugin.*.command.inst-1.*.*
	// publish   langbot.plugin.*.event.inst-1.*.*
	// publish   langbot.plugin.*.tool.inst-1.*.*
	// publish   langbot.plugin.*.page.inst-1.*.*
	// publish   langbot.lifecycle.*.attach.inst-1.*.*
	// subscribe langbot.host.*.inst-1.*.*
	// subscribe _INBOX_t-acme.>
}

// TestAuthCalloutRefusals: a package that retries a refused login every
// second is logged once a minute per user and reason, counted every time,
// and its secret never reaches the log.
func TestAuthCalloutRefusals(t *testing.T) {
	srv := bustest.NewAccountsServer(t, shippedAccounts)
	var logs bustest.LogBuffer
	reg := prometheus.NewRegistry()
	ac, err := bus.NewAuthCallout(bus.AuthCalloutConfig{Conn: srv.ConnAs(t, "githubkit"), IssuerSeed: srv.IssuerSeed,
		Account: "LANGBOT", Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := ac.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ac.Stop(context.Background()) }()
	ten, secret, err := bus.IssueTenant(t.Context(), srv.TenantBucket(t), bus.IssueRequest{Instance: "inst-1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	const wrong = "sWrongSecretThatMustNotBeLogged0"
	for range 3 {
		if r, err := tenantConn(srv.URL(), ten.Name, wrong, "x", nats.NoReconnect()); !errors.Is(err, nats.ErrAuthorization) {
			if err == nil {
				r.nc.Close()
			}
			t.Fatalf("wrong secret: %v", err)
		}
	}
	r, err := tenantConn(srv.URL(), ten.Name, secret, "x")
	if err != nil {
		t.Fatal(err)
	}
	r.nc.Close()
	if n := strings.Count(logs.String(), "tenant login refused"); n != 1 {
		t.Errorf("%d refusal lines for three refusals of one user, want 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), wrong) || strings.Contains(logs.String(), secret) {
		t.Error("a secret in the log")
	}
	want := map[string]float64{"refused": 3, "accepted": 1}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "langbot_tenant_logins_total" {
			for _, m := range mf.GetMetric() {
				got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("langbot_tenant_logins_total %v, want %v", got, want)
	}
}

// TestAuthCalloutBeforeSetup: a service that starts before lbctl setup
// created the tenant bucket runs, refuses tenant logins, and serves them
// once the bucket exists, without a restart.
func TestAuthCalloutBeforeSetup(t *testing.T) {
	srv := bustest.NewAccountsServer(t, shippedAccounts)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	admin, err := jetstream.New(srv.ConnAs(t, "admin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteKeyValue(ctx, bus.TenantBucket); err != nil {
		t.Fatal(err)
	}
	srv.StartAuthCallout(t, "schenotify")
	if _, err := tenantConn(srv.URL(), "t-early", "s0123456789abcdef0123", "x", nats.NoReconnect()); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("a login before setup: got %v, want %v", err, nats.ErrAuthorization)
	}
	host, err := jetstream.New(srv.ConnAs(t, "host"))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := bus.EnsureTenantBucket(ctx, host, 1)
	if err != nil {
		t.Fatal(err)
	}
	ten, secret, err := bus.IssueTenant(ctx, kv, bus.IssueRequest{Instance: "inst-1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r, err := tenantConn(srv.URL(), ten.Name, secret, "x")
	if err != nil {
		t.Fatalf("a login after setup: %v", err)
	}
	r.nc.Close()
}

// BenchmarkTenantLogin measures a tenant login through the auth callout
// (KV read, JWT signed) next to its floor, a login of a user of
// accounts.conf on the same server.
func BenchmarkTenantLogin(b *testing.B) {
	srv := bustest.NewAccountsServer(b, shippedAccounts)
	ac, err := bus.NewAuthCallout(bus.AuthCalloutConfig{Conn: srv.ConnAs(b, "takeover"), IssuerSeed: srv.IssuerSeed,
		Account: "LANGBOT", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if err := ac.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ac.Stop(context.Background()) }()
	ten, secret, err := bus.IssueTenant(context.Background(), srv.TenantBucket(b), bus.IssueRequest{Instance: "inst-1"}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	login := func(b *testing.B, user, password string) {
		for b.Loop() {
			nc, err := nats.Connect(srv.URL(), nats.UserInfo(user, password))
			if err != nil {
				b.Fatal(err)
			}
			nc.Close()
		}
	}
	b.Run("floor-config-user", func(b *testing.B) { login(b, "host", srv.Passwords["host"]) })
	b.Run("tenant", func(b *testing.B) { login(b, ten.Name, secret) })
}
