package binding_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// tokenRE is the independent oracle for scope tokens (DESIGN 3).
var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"a.b.c", "a.*.c", "a.>.c", "a..c", "a b.c.d", strings.Repeat("x", 65) + ".b.c", "ä.b.c", "a.b.c.d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := binding.ParseScope(s)
		parts := strings.Split(s, ".")
		want := len(parts) == 3 && tokenRE.MatchString(parts[0]) && tokenRE.MatchString(parts[1]) && tokenRE.MatchString(parts[2])
		if want != (err == nil) {
			t.Fatalf("ParseScope(%q) err=%v, oracle says valid=%v", s, err, want)
		}
		if err == nil && sc.String() != s {
			t.Fatalf("round trip %q -> %q", s, sc.String())
		}
	})
}

func FuzzBindingJSON(f *testing.F) {
	f.Add([]byte(`{"instance_uuid":"i","workspace_uuid":"w","placement_generation":1,"installation_uuid":"n","runtime_revision":1,"artifact_digest":"d"}`))
	f.Add([]byte(`{"instance_uuid":"a.b","workspace_uuid":"w","placement_generation":1,"installation_uuid":"n","runtime_revision":1,"artifact_digest":"d"}`))
	f.Add([]byte(`{"placement_generation":"1"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var b binding.Binding
		if json.Unmarshal(raw, &b) != nil {
			return
		}
		if b.Validate() != nil {
			return
		}
		sc, err := b.Scope()
		if err != nil {
			t.Fatalf("valid binding has invalid scope: %v", err)
		}
		for _, tok := range strings.Split(sc.String(), ".") {
			if !tokenRE.MatchString(tok) {
				t.Fatalf("valid binding gives unsafe token %q", tok)
			}
		}
		if b.Compare(b) != 0 {
			t.Fatal("Compare not reflexive")
		}
	})
}

func FuzzToken(f *testing.F) {
	for _, s := range []string{"", "a", "owner/repo", "b:group_1", strings.Repeat("z", 200), "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok := binding.Token(s)
		if tok == "" || strings.ContainsAny(tok, ". *>\t\r\n") {
			t.Fatalf("Token(%q) = %q is not subject-safe", s, tok)
		}
		if back, err := binding.DecodeToken(tok); err == nil && back != s {
			t.Fatalf("DecodeToken(Token(%q)) = %q", s, back)
		}
		if len(s) <= 192 {
			if back, err := binding.DecodeToken(tok); err != nil || back != s {
				t.Fatalf("short text not reversible: %q -> %q -> %q, %v", s, tok, back, err)
			}
		}
	})
}
