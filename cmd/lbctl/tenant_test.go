package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

// TestTenantCommands runs lbctl tenant against the shipped accounts as an
// operator does (admin; sys for the kick), and checks that bad input is
// refused before anything is written.
func TestTenantCommands(t *testing.T) {
	srv := bustest.NewAccountsServer(t, "../../deploy/k8s/base/nats/accounts.conf")
	env := map[string]string{"NATS_URL": srv.URL(), "NATS_USER": "admin", "NATS_PASSWORD": srv.Passwords["admin"]}
	lbctl := func(extra map[string]string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, stdio{out: &out, err: &errb, getenv: func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return env[k]
		}})
		return out.String(), errb.String(), code
	}
	for name, args := range map[string][]string{
		"dotted instance":        {"tenant", "issue", "--instance", "a.b"},
		"wildcard workspace":     {"tenant", "issue", "--instance", "i", "--workspace", "*"},
		"claim and instance":     {"tenant", "issue", "--instance", "i", "--claim"},
		"neither":                {"tenant", "issue"},
		"not a tenant name":      {"tenant", "issue", "--instance", "i", "--name", "host"},
		"revoke without a name":  {"tenant", "revoke", "--no-kick"},
		"revoke without sys":     {"tenant", "revoke", "--name", "t-x"},
		"revoke an unknown name": {"tenant", "revoke", "--name", "t-unknown", "--no-kick"},
	} {
		if _, errText, code := lbctl(nil, args...); code == 0 {
			t.Errorf("%s: accepted (%s)", name, errText)
		}
	}
	out, _, code := lbctl(nil, "tenant", "list")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("bad input wrote something: %q", out)
	}

	out, errText, code := lbctl(nil, "tenant", "issue", "--instance", "inst-1", "--workspace", "ws-1", "--name", "t-acme")
	if code != 0 || !strings.Contains(out, "nats_user      t-acme") || !strings.Contains(out, "nats_password  s") {
		t.Fatalf("issue: %d %s %s", code, out, errText)
	}
	if _, _, code := lbctl(nil, "tenant", "issue", "--instance", "inst-2", "--name", "t-acme"); code == 0 {
		t.Fatal("a second t-acme was issued")
	}
	out, _, _ = lbctl(nil, "tenant", "list")
	if !strings.Contains(out, "t-acme") || !strings.Contains(out, "inst-1.ws-1") {
		t.Fatalf("list: %s", out)
	}
	out, errText, code = lbctl(map[string]string{"NATS_SYS_PASSWORD": srv.Passwords["sys"]}, "tenant", "revoke", "--name", "t-acme")
	if code != 0 || !strings.Contains(out, "closed 0 open connection") {
		t.Fatalf("revoke: %d %s %s", code, out, errText)
	}
	if _, _, err := bus.LookupTenant(t.Context(), srv.TenantBucket(t), "t-acme"); err == nil {
		t.Fatal("revoked tenant still has a record")
	}
}
