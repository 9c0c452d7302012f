package bus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

func TestKeyringSealOpenRotate(t *testing.T) {
	k1, _ := bus.NewKeyString("k1")
	k2, _ := bus.NewKeyString("k2")
	old, err := bus.ParseKeyring(k1)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := binding.ParseScope("i.w.a")
	b, _ := binding.ParseScope("i.w.b")
	sealed, err := old.Seal(a, []byte("ghp_token"))
	if err != nil || !strings.HasPrefix(sealed, "v1:k1:") || strings.Contains(sealed, "ghp_token") {
		t.Fatalf("sealed = %q, %v", sealed, err)
	}
	if pt, err := old.Open(a, sealed); err != nil || string(pt) != "ghp_token" {
		t.Fatalf("open = %q, %v", pt, err)
	}
	if _, err := old.Open(b, sealed); !errors.Is(err, bus.ErrSealed) {
		t.Fatalf("opened in another scope: %v", err)
	}
	rotated, err := bus.ParseKeyring(k2 + "," + k1)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := rotated.Open(a, sealed); err != nil || string(pt) != "ghp_token" {
		t.Fatalf("old value after rotation: %q, %v", pt, err)
	}
	if s2, _ := rotated.Seal(a, []byte("x")); bus.SealedBy(s2) != "k2" {
		t.Fatalf("rotated keyring seals with %q", bus.SealedBy(s2))
	}
	// Change the last two characters to something else than they are (a
	// fixed "AA" would change nothing for a value already ending so).
	tail := "AA"
	if strings.HasSuffix(sealed, tail) {
		tail = "BB"
	}
	tampered := sealed[:len(sealed)-2] + tail
	if _, err := old.Open(a, tampered); !errors.Is(err, bus.ErrSealed) {
		t.Fatalf("tampered value opened: %v", err)
	}
	for _, bad := range []string{"", "k1", "k1=short", "k1=" + strings.Repeat("A", 44) + ",k1=" + strings.Repeat("A", 44), "a.b=" + strings.Repeat("A", 44)} {
		if _, err := bus.ParseKeyring(bad); !errors.Is(err, bus.ErrKeyring) {
			t.Errorf("ParseKeyring(%q) = %v", bad, err)
		}
	}
}

// TestSecretsNotReadableInKV: the token of an attach is sealed in the
// authority record, opens for the right scope, and is resealed under a new
// key on the next write.
func TestSecretsNotReadableInKV(t *testing.T) {
	k1, _ := bus.NewKeyString("k1")
	kr, _ := bus.ParseKeyring(k1)
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls), SecretFields: []string{"github_token"}}, bus.Deps{Keyring: kr})
	b := bindingFor("i", "w", "n", 1, 1)
	h.attach(b, true, `{"github_token":"ghp_SECRET123","language":"en_US"}`)
	a := h.waitAuthority(bus.ScopeOf(b), func(a *bus.Authority) bool { return a != nil })
	kv, _ := h.js.KeyValue(context.Background(), bus.Bucket(plugin))
	raw, err := kv.Get(context.Background(), bus.AuthorityKey(bus.ScopeOf(b)))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw.Value(), []byte("ghp_SECRET123")) {
		t.Fatalf("raw KV value holds the token: %s", raw.Value())
	}
	opened, err := h.runner.OpenConfig(bus.ScopeOf(b), a)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]string
	_ = json.Unmarshal(opened, &cfg)
	if cfg["github_token"] != "ghp_SECRET123" || cfg["language"] != "en_US" {
		t.Fatalf("opened config = %s", opened)
	}
	// the invocation path seals too
	b2 := bindingFor("i", "w", "n", 1, 2)
	req := &wire.Request{Binding: b2, Config: json.RawMessage(`{"github_token":"ghp_OTHER456"}`), Command: &wire.Command{Name: "x", Params: []string{"p"}}}
	if _, err := h.invoker.Invoke(context.Background(), plugin, wire.EndpointCommand, "seal-2", req); err != nil {
		t.Fatal(err)
	}
	h.waitAuthority(bus.ScopeOf(b), func(a *bus.Authority) bool { return a.Binding == b2 })
	raw, _ = kv.Get(context.Background(), bus.AuthorityKey(bus.ScopeOf(b)))
	if bytes.Contains(raw.Value(), []byte("ghp_OTHER456")) {
		t.Fatalf("raw KV value holds the token: %s", raw.Value())
	}
}
