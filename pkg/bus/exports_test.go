package bus_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// serviceRoots are the packages whose exported names must each have a user
// outside the package (issue 27: godoc of a service is the map of what the
// rest of the module may use).
var serviceRoots = []string{"services/takeover", "services/schenotify", "services/githubkit"}

// goFile is one parsed Go file of the module, by its module-relative
// directory.
type goFile struct {
	Dir  string // module-relative, slash-separated
	Test bool   // a _test.go file
	File *ast.File
}

// TestServiceRootsExportOnlyWhatIsUsed parses every Go file of the module
// and fails for each top-level name a service root exports that nothing
// outside the package uses. Black-box test files beside it (package
// <name>_test) count as users; its own files and internal test files do
// not. A name only tests need belongs in export_test.go (STYLE 2.19). A
// type that a used name's declaration shows (a parameter, a result, an
// exported field's type, an exported method's signature) is used with it:
// unexporting it would hide part of an API others call.
func TestServiceRootsExportOnlyWhatIsUsed(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := strings.TrimSpace(string(out))
	var files []goFile
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		files = append(files, goFile{Dir: filepath.ToSlash(rel), Test: strings.HasSuffix(path, "_test.go"), File: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range serviceRoots {
		if !slices.ContainsFunc(files, func(f goFile) bool { return f.Dir == want }) {
			t.Fatalf("no Go file in %s", want)
		}
	}
	for _, v := range unusedServiceExports(files) {
		t.Error(v)
	}
}

// TestServiceExportRuleCatches feeds the rule a made-up service root with
// one name used from a command, one used by its black-box tests only, two
// shown by a used function's parameter and result, one used by its internal tests only,
// one held only by an unexported field and one used by nobody: the last
// three must be named, the first three not.
func TestServiceExportRuleCatches(t *testing.T) {
	parse := func(dir, name, src string) goFile {
		t.Helper()
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		return goFile{Dir: dir, Test: strings.HasSuffix(name, "_test.go"), File: f}
	}
	files := []goFile{
		parse("services/takeover", "service.go", `package takeover
type Config struct{}
func New(cfg Config) {}
type Options struct{}
func Open(o Options) {}
type Result struct { Part Piece; hidden Hidden }
type Piece struct{}
type Hidden struct{}
func Run() Result { return Result{} }
const ForTests = 1
const ForInternal = 2
var Unused, used = 3, 4
func (Config) Method() {}`),
		parse("services/takeover", "service_internal_test.go", `package takeover
var _ = ForInternal`),
		parse("services/takeover", "service_test.go", `package takeover_test
import "github.com/langbot-nats/plugins/services/takeover"
var _ = takeover.ForTests`),
		parse("cmd/lbctl", "main.go", `package main
import tk "github.com/langbot-nats/plugins/services/takeover"
func main() { tk.New(tk.Config{}); _ = tk.Run() }
func open(o any) { tk.Open(o) }`),
	}
	got := unusedServiceExports(files)
	slices.Sort(got)
	if len(got) != 3 || !strings.Contains(got[0], "ForInternal") || !strings.Contains(got[1], "Hidden") || !strings.Contains(got[2], "Unused") {
		t.Fatalf("violations %q, want ForInternal, Hidden and Unused named", got)
	}
}

// unusedServiceExports returns one line per exported top-level name of a
// service root (serviceRoots) that no file outside the package names.
func unusedServiceExports(files []goFile) []string {
	var out []string
	for _, svc := range serviceRoots {
		name := svc[strings.LastIndex(svc, "/")+1:]
		exported := map[string]bool{}
		var own []*ast.File
		for _, f := range files {
			if f.Dir != svc || f.Test || f.File.Name.Name != name {
				continue
			}
			own = append(own, f.File)
			for _, n := range topLevelExported(f.File) {
				exported[n] = true
			}
		}
		used := map[string]bool{}
		for _, f := range files {
			if f.Dir == svc && f.File.Name.Name == name {
				continue // the package itself, internal tests included
			}
			local := importName(f.File, module+"/"+svc, name)
			if local == "" {
				continue
			}
			ast.Inspect(f.File, func(n ast.Node) bool {
				if s, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := s.X.(*ast.Ident); ok && x.Name == local {
						used[s.Sel.Name] = true
					}
				}
				return true
			})
		}
		shownBy := shownNames(own, exported)
		for queue := slices.Collect(maps.Keys(used)); len(queue) > 0; {
			n := queue[0]
			queue = queue[1:]
			for _, m := range shownBy[n] {
				if !used[m] {
					used[m] = true
					queue = append(queue, m)
				}
			}
		}
		var unused []string
		for n := range exported {
			if !used[n] {
				unused = append(unused, n)
			}
		}
		slices.Sort(unused)
		for _, n := range unused {
			out = append(out, svc+" exports "+n+", which nothing outside it uses: unexport it (tests: export_test.go)")
		}
	}
	return out
}

// shownNames maps each exported top-level name of a package's files to the
// package's exported names its declaration shows to a user: the types of a
// function's parameters and results, a variable's or constant's type, a
// type's definition (exported fields and embedded types only) and the
// signatures of its exported methods.
func shownNames(files []*ast.File, exported map[string]bool) map[string][]string {
	out := map[string][]string{}
	var collect func(from string, n ast.Node)
	collect = func(from string, n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				return false // another package's name
			case *ast.StructType:
				for _, f := range n.Fields.List {
					if len(f.Names) == 0 || slices.ContainsFunc(f.Names, func(id *ast.Ident) bool { return id.IsExported() }) {
						collect(from, f.Type) // unexported fields are not shown
					}
				}
				return false
			case *ast.Ident:
				if exported[n.Name] && n.Name != from {
					out[from] = append(out[from], n.Name)
				}
			}
			return true
		})
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				switch {
				case d.Recv == nil:
					collect(d.Name.Name, d.Type)
				case d.Name.IsExported() && len(d.Recv.List) == 1:
					recv := d.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if id, ok := recv.(*ast.Ident); ok {
						collect(id.Name, d.Type)
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						collect(s.Name.Name, s.Type)
					case *ast.ValueSpec:
						for _, id := range s.Names {
							collect(id.Name, s.Type)
						}
					}
				}
			}
		}
	}
	return out
}

// topLevelExported lists a file's exported package-level names (not
// methods, not fields).
func topLevelExported(f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.IsExported() {
				out = append(out, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						out = append(out, s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// importName returns the name under which f imports path ("" if it does
// not); def is the package's own name.
func importName(f *ast.File, path, def string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return def
		}
	}
	return ""
}
