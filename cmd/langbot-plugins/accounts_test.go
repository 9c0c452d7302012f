package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAccountsMatchDeployment keeps the embedded copy of the accounts equal
// to the deployment's (go generate ./pkg/natsembed refreshes it).
func TestAccountsMatchDeployment(t *testing.T) {
	shipped, err := os.ReadFile(filepath.Join("..", "..", "deploy", "k8s", "base", "nats", "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if string(shipped) != accountsConf {
		t.Fatal("pkg/natsembed/accounts.conf differs from deploy/k8s/base/nats/accounts.conf: run go generate ./pkg/natsembed")
	}
	users, err := accountUsers()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"host": "HOST_PASSWORD", "githubkit": "GITHUBKIT_PASSWORD", "takeover": "TAKEOVER_PASSWORD",
		"schenotify": "SCHENOTIFY_PASSWORD", "langbot_pkg": "LANGBOT_PKG_PASSWORD", "admin": "ADMIN_PASSWORD", "sys": "SYS_PASSWORD"}
	got := map[string]string{}
	for _, u := range users {
		got[u.Name] = u.Var
	}
	for u, v := range want {
		if got[u] != v {
			t.Errorf("user %s: password variable %q, want %q (all: %v)", u, got[u], v, got)
		}
	}
}

func TestCredentialsWrittenOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	users, err := accountUsers()
	if err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	first, err := loadCredentials(dir, users, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, credentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("credentials mode %v, want 0600", st.Mode().Perm())
	}
	again, err := loadCredentials(dir, users, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, u := range users {
		if first[u.Name] == "" || first[u.Name] != again[u.Name] {
			t.Errorf("%s: password %q then %q", u.Name, first[u.Name], again[u.Name])
		}
		if seen[first[u.Name]] {
			t.Errorf("%s: password shared with another user", u.Name)
		}
		seen[first[u.Name]] = true
	}
	// the environment wins, and a malformed value is refused
	env := map[string]string{"HOST_PASSWORD": "fromTheEnvironment123"}
	got, err := loadCredentials(dir, users, func(k string) string { return env[k] })
	if err != nil || got["host"] != "fromTheEnvironment123" || got["admin"] != first["admin"] {
		t.Errorf("with HOST_PASSWORD set: host %q admin %q (%v)", got["host"], got["admin"], err)
	}
	env["HOST_PASSWORD"] = "short"
	if _, err := loadCredentials(dir, users, func(k string) string { return env[k] }); err == nil {
		t.Error("a malformed HOST_PASSWORD was accepted")
	}
}
