package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// TestBinaryTenantCredentials runs the binary as an operator does and uses
// it as LangBot packages do: the first start issues the claimable first
// tenant and says where it goes; a package logs in with it (binding it to
// its instance), attaches and is served by the real service; lbctl tenant
// issues a second tenant, which NATS keeps off the first one's subjects,
// lists both and revokes the second, closing its connection; with
// -legacy-pkg-user=false the shared user is gone and the tenants stay.
func TestBinaryTenantCredentials(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(fakegithub.Options{AutoRepos: true})
	defer gh.Close()
	in := newInstall(t, gh)
	p, _ := in.start()
	if st, err := os.Stat(filepath.Join(in.dir, authIssuerFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, want mode 0600", authIssuerFile, err)
	}
	log := p.out.String()
	if !strings.Contains(log, "first tenant credential issued") || !strings.Contains(log, "credentials "+bus.FirstTenant) {
		t.Errorf("the first start does not say where the first tenant goes:\n%s", log)
	}
	if !strings.Contains(log, "legacy NATS user langbot_pkg is on") {
		t.Errorf("no warning about the legacy user:\n%s", log)
	}
	secret := in.password(bus.FirstTenant)
	if strings.Contains(log, secret) {
		t.Fatal("the first tenant's secret is in the log")
	}
	home, err := binding.ParseScope("inst-home.default.in-schenotify")
	if err != nil {
		t.Fatal(err)
	}
	pkg := packageConn(t, in, bus.FirstTenant, secret, home)
	serve(t, pkg, home)

	// a second tenant, for another instance, from lbctl
	out, err := in.lbctl("admin", "tenant", "issue", "--instance", "inst-other")
	if err != nil {
		t.Fatalf("lbctl tenant issue: %s %v", out, err)
	}
	user := regexp.MustCompile(`nats_user\s+(\S+)`).FindStringSubmatch(out)
	pw := regexp.MustCompile(`nats_password\s+(\S+)`).FindStringSubmatch(out)
	if user == nil || pw == nil {
		t.Fatalf("lbctl tenant issue does not say what goes in the form:\n%s", out)
	}
	other, err := binding.ParseScope("inst-other.ws-9.in-schenotify")
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan error, 8)
	pkg2 := packageConn(t, in, user[1], pw[1], other, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))
	serve(t, pkg2, other)
	if err := pkg2.Publish(wire.Subjects{}.Invocation("schenotify", wire.EndpointCommand, home), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-refused:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("invoking the first tenant's installation: %v, want a permissions violation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second tenant invoked the first tenant's installation")
	}

	out, err = in.lbctl("admin", "tenant", "list")
	if err != nil || !regexp.MustCompile(bus.FirstTenant+`\s+inst-home\.\*`).MatchString(out) ||
		!regexp.MustCompile(user[1]+`\s+inst-other\.\*`).MatchString(out) {
		t.Fatalf("lbctl tenant list:\n%s %v", out, err)
	}
	cmd := exec.Command(filepath.Join(binDir, "lbctl"), "tenant", "revoke", "--name", user[1])
	cmd.Env = append(in.env, "NATS_URL=nats://"+in.natsAddr, "NATS_USER=admin", "NATS_PASSWORD="+in.password("admin"),
		"NATS_SYS_PASSWORD="+in.password("sys"))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "closed 1 open connection") {
		t.Fatalf("lbctl tenant revoke: %s %v", out, err)
	}
	bustest.Eventually(t, "the revoked tenant's connection closed", func() bool { return !pkg2.IsConnected() })
	if nc, err := nats.Connect("nats://"+in.natsAddr, nats.UserInfo(user[1], pw[1]), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("a revoked tenant logged in")
	}
	if !pkg.IsConnected() {
		t.Fatal("revoking one tenant closed another's connection")
	}

	// the operator switches the legacy user off
	p.stop(t)
	in.start("-legacy-pkg-user=false")
	if nc, err := nats.Connect("nats://"+in.natsAddr, nats.UserInfo("langbot_pkg", in.password("langbot_pkg")), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("langbot_pkg logged in with -legacy-pkg-user=false")
	}
	pkg3 := packageConn(t, in, bus.FirstTenant, secret, home)
	serve(t, pkg3, home)
}

// packageConn logs in as a LangBot package does: the tenant's user and
// password, inbox prefix _INBOX_<user>, its connection name.
func packageConn(t *testing.T, in *install, user, secret string, sc binding.Scope, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("nats://"+in.natsAddr, append([]nats.Option{nats.UserInfo(user, secret),
		nats.Name(wire.PackageConnName("schenotify", sc)),
		nats.CustomInboxPrefix(wire.InboxPrefixFor(user))}, opts...)...)
	if err != nil {
		t.Fatalf("package login as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// serve attaches the installation sc of schenotify over nc and has the
// service answer "!sche" for it.
func serve(t *testing.T, nc *nats.Conn, sc binding.Scope) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	b := binding.Binding{InstanceUUID: sc.Instance(), WorkspaceUUID: sc.Workspace(), InstallationUUID: sc.Installation(),
		PlacementGeneration: 1, RuntimeRevision: 1, ArtifactDigest: "sha256:tenant"}
	if _, err := bus.PublishAttach(ctx, js, wire.Subjects{}, "schenotify", wire.Attach{Binding: b, Config: []byte(`{}`), Enabled: true}, ""); err != nil {
		t.Fatalf("attach %s: %v", sc, err)
	}
	inv := bus.NewInvoker(nc, wire.Subjects{}, nil)
	req := &wire.Request{Binding: b, Config: []byte(`{}`), Command: &wire.Command{Name: "sche", FullText: "!sche", Prefix: "!",
		Session:   wire.Session{LauncherType: wire.LauncherPerson, LauncherID: "u1", SenderID: "u1", BotUUID: "bot-1"},
		Privilege: 1, QueryUUID: wire.ID(bus.NewInvocationID())}}
	bustest.EventuallyWithin(t, 30*time.Second, "schenotify serves "+sc.String(), func() bool {
		raw, err := inv.Invoke(ctx, "schenotify", wire.EndpointCommand, bus.NewInvocationID(), req)
		return err == nil && strings.Contains(string(raw), "returns")
	})
}
