package takeover_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// TestAsyncAPIDocumentsInternalSubjects keeps docs/asyncapi.json and
// takeover's own subject kinds in step: the document's takeover channels are
// exactly the subjects the service builds (store.SubjectKinds, the list the
// timer stream is made from), and every Kind constant of store/names.go is
// in that list, so a new kind without its channel fails here (the
// protocol's channels are pkg/bus's test).
func TestAsyncAPIDocumentsInternalSubjects(t *testing.T) {
	documented := slices.DeleteFunc(bustest.AsyncAPIAddresses(t, "../../docs/asyncapi.json"), func(a string) bool {
		return !strings.HasPrefix(a, "{prefix}."+store.Plugin+".")
	})
	s := wire.Subjects{Prefix: bustest.DocPrefix}
	sc := bustest.DocScope(t)
	token := map[string]string{"sid": bustest.DocID, "shard": bustest.DocShard}
	var built, listed []string
	for _, k := range store.SubjectKinds() {
		var ids []string
		for _, id := range k.IDs {
			v, ok := token[id]
			if !ok {
				t.Fatalf("kind %s: unknown id token %q", k.Kind, id)
			}
			ids = append(ids, v)
		}
		subj, err := s.Internal(store.Plugin, k.Kind, sc, ids...)
		if err != nil {
			t.Fatal(err)
		}
		built = append(built, bustest.DocAddress(subj))
		listed = append(listed, k.Kind)
	}
	slices.Sort(built)
	if !slices.Equal(documented, built) {
		t.Fatalf("docs/asyncapi.json and takeover disagree\ndocumented: %v\nbuilt:      %v", documented, built)
	}
	declared := kindConstants(t, "store/names.go")
	slices.Sort(listed)
	if !slices.Equal(declared, listed) {
		t.Fatalf("store.SubjectKinds lists %v, store/names.go declares the kinds %v", listed, declared)
	}
}

// kindConstants is the values of the string constants named Kind* in a
// Go file.
func kindConstants(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Kind") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: %s is not a string literal", path, name.Name)
				}
				v, _ := strconv.Unquote(lit.Value)
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s declares no Kind constants", path)
	}
	slices.Sort(out)
	return out
}
