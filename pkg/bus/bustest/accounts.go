package bustest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/natsembed"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Accounts is a server started from a deployment's accounts file, with
// every user's password and the auth callout's issuer key generated.
type Accounts struct {
	*Server
	// Passwords holds every user's password by name.
	Passwords map[string]string
	// IssuerSeed is the auth callout's issuer (LANGBOT_AUTH_ISSUER_SEED);
	// the server names its public key.
	IssuerSeed string
}

// NewAccountsServer starts a server from the accounts file at path (the
// shipped deploy/k8s/base/nats/accounts.conf), as the deployment does: each
// $..._PASSWORD variable gets a random password and $AUTH_ISSUER the public
// key of a new issuer. The lifecycle stream and the tenant bucket are
// created as lbctl setup creates them (user host).
func NewAccountsServer(t testing.TB, path string) *Accounts {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("bustest: accounts: %v", err)
	}
	a := &Accounts{Passwords: map[string]string{}}
	if a.IssuerSeed, err = bus.NewIssuerSeed(); err != nil {
		t.Fatal(err)
	}
	pub, err := bus.IssuerPublicKey(a.IssuerSeed)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "AUTH_ISSUER: %q\n", pub)
	for _, u := range natsembed.AccountUsers(string(text)) {
		raw := make([]byte, 16)
		if _, err := rand.Read(raw); err != nil {
			t.Fatal(err)
		}
		a.Passwords[u.Name] = "pw" + hex.EncodeToString(raw)
		fmt.Fprintf(&b, "%s: %q\n", u.Var, a.Passwords[u.Name])
	}
	if len(a.Passwords) == 0 {
		t.Fatalf("bustest: %s names no user", path)
	}
	b.Write(text)
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	a.Server = NewServerWithConfig(t, conf)
	host := a.ConnAs(t, "host")
	js, err := jetstream.New(host)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := bus.EnsureLifecycleStream(ctx, js, wire.Subjects{}, 1); err != nil {
		t.Fatalf("bustest: lifecycle stream: %v", err)
	}
	if _, err := bus.EnsureTenantBucket(ctx, js, 1); err != nil {
		t.Fatalf("bustest: tenant bucket: %v", err)
	}
	return a
}

// ConnAs connects as one of the accounts' users with the inbox prefix
// pkg/bus uses, closed at cleanup.
func (a *Accounts) ConnAs(t testing.TB, user string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	pw, ok := a.Passwords[user]
	if !ok {
		t.Fatalf("bustest: the accounts have no user %s", user)
	}
	return a.Conn(t, append([]nats.Option{nats.UserInfo(user, pw),
		nats.CustomInboxPrefix(wire.InboxPrefixFor(user))}, opts...)...)
}

// StartAuthCallout runs the tenant login responder on a connection of the
// service user svc until cleanup.
func (a *Accounts) StartAuthCallout(t testing.TB, svc string) *bus.AuthCallout {
	t.Helper()
	ac, err := bus.NewAuthCallout(bus.AuthCalloutConfig{Conn: a.ConnAs(t, svc), IssuerSeed: a.IssuerSeed, Account: bus.TenantAccount})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ac.Start(ctx); err != nil {
		t.Fatalf("bustest: auth callout: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ac.Stop(ctx)
	})
	return ac
}

// TenantBucket returns the tenant bucket on a connection of user admin.
func (a *Accounts) TenantBucket(t testing.TB) jetstream.KeyValue {
	t.Helper()
	js, err := jetstream.New(a.ConnAs(t, "admin"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, bus.TenantBucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}
