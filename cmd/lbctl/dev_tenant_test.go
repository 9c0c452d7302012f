package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// TestDevTenantCredential: lbctl dev runs the deployment's accounts with
// the auth callout; its banner says what goes in LangBot's plugin forms,
// and a package logging in with the first tenant credential (claiming it
// for the dev instance) is served, while another instance's scopes are
// refused by NATS.
func TestDevTenantCredential(t *testing.T) {
	dir := t.TempDir()
	d := startDev(t, "--data", dir)
	secretFile := filepath.Join(dir, "tenant-first.secret")
	if !strings.Contains(d.out.String(), "nats_user "+bus.FirstTenant+", nats_password the content of "+secretFile) {
		t.Fatalf("the banner does not say what goes in the forms:\n%s", d.out.String())
	}
	raw, err := os.ReadFile(secretFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(string(raw))
	if strings.Contains(d.out.String(), secret) {
		t.Fatal("the banner prints the secret")
	}
	b := devBinding("schenotify")
	sc, _ := b.Scope()
	errs := make(chan error, 4)
	nc, err := nats.Connect(natsURL(t, d.out.String()), nats.UserInfo(bus.FirstTenant, secret),
		nats.Name(wire.PackageConnName("schenotify", sc)), nats.CustomInboxPrefix(wire.InboxPrefixFor(bus.FirstTenant)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	if err != nil {
		t.Fatalf("t-first login: %v", err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req := &wire.Request{Binding: b, Config: []byte(`{}`), Command: &wire.Command{Name: "sche", FullText: "!sche", Prefix: "!",
		Session:   wire.Session{LauncherType: wire.LauncherPerson, LauncherID: "u1", SenderID: "u1", BotUUID: "bot-1"},
		Privilege: 1, QueryUUID: wire.ID(bus.NewInvocationID())}}
	if raw, err := bus.NewInvoker(nc, wire.Subjects{}, nil).Invoke(ctx, "schenotify", wire.EndpointCommand, bus.NewInvocationID(), req); err != nil || !strings.Contains(string(raw), "returns") {
		t.Fatalf("!sche as t-first: %s %v", raw, err)
	}
	if err := nc.Publish("langbot.plugin.schenotify.command.other-instance.ws.x", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Fatalf("another instance's invocation: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("t-first invoked another instance's installation")
	}
}
