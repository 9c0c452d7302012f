package binding_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
)

func valid() binding.Binding {
	return binding.Binding{
		InstanceUUID: "inst-1", WorkspaceUUID: "ws_1", InstallationUUID: "A9z",
		PlacementGeneration: 1, RuntimeRevision: 1, ArtifactDigest: "sha256:abc",
	}
}

func TestParseScope(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
	}{
		{"a.b.c", false},
		{"inst-1.ws_1.A9z", false},
		{strings.Repeat("x", 64) + ".b.c", false},
		{strings.Repeat("x", 65) + ".b.c", true},
		{"a.*.c", true},
		{"a.>.c", true},
		{"a.b", true},
		{"a.b.c.d", true},
		{"a..c", true},
		{"a.b c.d", true},
		{"a. b.c", true},
		{"", true},
		{"a.b.ç", true},
		{"a.b.c\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := binding.ParseScope(tt.in)
			if tt.wantErr {
				if !errors.Is(err, binding.ErrInvalidScope) {
					t.Fatalf("ParseScope(%q) = %v, %v; want ErrInvalidScope", tt.in, s, err)
				}
				if !s.IsZero() {
					t.Fatalf("ParseScope(%q) returned non-zero scope on error", tt.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseScope(%q): %v", tt.in, err)
			}
			if s.String() != tt.in {
				t.Fatalf("round trip: got %q want %q", s.String(), tt.in)
			}
		})
	}
}

func TestBindingValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*binding.Binding)
		ok     bool
	}{
		{"valid", func(*binding.Binding) {}, true},
		{"no instance", func(b *binding.Binding) { b.InstanceUUID = "" }, false},
		{"dotted workspace", func(b *binding.Binding) { b.WorkspaceUUID = "a.b" }, false},
		{"wildcard installation", func(b *binding.Binding) { b.InstallationUUID = "*" }, false},
		{"generation 0", func(b *binding.Binding) { b.PlacementGeneration = 0 }, false},
		{"revision negative", func(b *binding.Binding) { b.RuntimeRevision = -3 }, false},
		{"empty digest", func(b *binding.Binding) { b.ArtifactDigest = "" }, false},
		{"digest with space", func(b *binding.Binding) { b.ArtifactDigest = "sha256 x" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := valid()
			tt.mutate(&b)
			err := b.Validate()
			if tt.ok != (err == nil) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, binding.ErrInvalidBinding) {
				t.Fatalf("Validate() = %v, want ErrInvalidBinding", err)
			}
		})
	}
}

func TestBindingJSONNames(t *testing.T) {
	raw := `{"instance_uuid":"i","workspace_uuid":"w","placement_generation":2,"installation_uuid":"n","runtime_revision":7,"artifact_digest":"d"}`
	var b binding.Binding
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		t.Fatal(err)
	}
	want := binding.Binding{InstanceUUID: "i", WorkspaceUUID: "w", PlacementGeneration: 2, InstallationUUID: "n", RuntimeRevision: 7, ArtifactDigest: "d"}
	if b != want {
		t.Fatalf("got %+v want %+v", b, want)
	}
	out, _ := json.Marshal(b)
	if string(out) != raw {
		t.Fatalf("marshal: got %s want %s", out, raw)
	}
}

func TestCompare(t *testing.T) {
	mk := func(g, r int64) binding.Binding {
		b := valid()
		b.PlacementGeneration, b.RuntimeRevision = g, r
		return b
	}
	tests := []struct {
		a, b binding.Binding
		want int
	}{
		{mk(1, 1), mk(1, 1), 0},
		{mk(1, 2), mk(1, 1), 1},
		{mk(1, 1), mk(1, 2), -1},
		{mk(2, 1), mk(1, 9), 1},
		{mk(1, 9), mk(2, 1), -1},
	}
	for _, tt := range tests {
		if got := tt.a.Compare(tt.b); got != tt.want {
			t.Errorf("(%d,%d).Compare(%d,%d) = %d, want %d", tt.a.PlacementGeneration, tt.a.RuntimeRevision,
				tt.b.PlacementGeneration, tt.b.RuntimeRevision, got, tt.want)
		}
	}
}

func TestToken(t *testing.T) {
	for _, text := range []string{"", "a", "langbot-app/LangBot", "b1:group_123", "日本語 text.with*dots>", strings.Repeat("x", 192)} {
		tok := binding.Token(text)
		if strings.ContainsAny(tok, ".*> \t") {
			t.Fatalf("Token(%q) = %q has subject-unsafe characters", text, tok)
		}
		back, err := binding.DecodeToken(tok)
		if err != nil || back != text {
			t.Fatalf("DecodeToken(Token(%q)) = %q, %v", text, back, err)
		}
	}
	long := strings.Repeat("y", 193)
	tok := binding.Token(long)
	if !strings.HasPrefix(tok, "=") || len(tok) != 65 {
		t.Fatalf("Token(long) = %q, want = + 64 hex", tok)
	}
	if _, err := binding.DecodeToken(tok); err == nil {
		t.Fatal("DecodeToken(hashed) succeeded")
	}
}

func TestHashToken(t *testing.T) {
	if got := binding.HashToken("abc", 32); got != "ba7816bf8f01cfea414140de5dae2223" {
		t.Fatalf("HashToken = %s", got)
	}
}
