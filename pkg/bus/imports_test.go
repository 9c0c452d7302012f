package bus_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportsAsDocumented keeps the package doc's import rule: the
// standard library, pkg/binding, pkg/settings, the NATS client, OpenTelemetry's API and
// Prometheus' client, and nothing else (no NATS server, no service).
func TestImportsAsDocumented(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := []string{
		"github.com/langbot-nats/plugins/pkg/binding", "github.com/langbot-nats/plugins/pkg/settings",
		"github.com/langbot-nats/plugins/pkg/wire",
		"github.com/nats-io/nats.go", "github.com/nats-io/nuid", "github.com/nats-io/jwt/v2", "github.com/nats-io/nkeys",
		"go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes",
		"go.opentelemetry.io/otel/propagation", "go.opentelemetry.io/otel/trace",
		"github.com/prometheus/client_golang/prometheus",
	}
	for _, imp := range strings.Fields(string(out)) {
		if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
			continue // the standard library
		}
		ok := false
		for _, a := range allowed {
			if imp == a || strings.HasPrefix(imp, a+"/") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("pkg/bus imports %s, which its doc does not allow", imp)
		}
	}
}

// module is the module path; the architecture rule speaks of the paths
// below it.
const module = "github.com/langbot-nats/plugins"

// listedPackage is what the architecture rule reads of one package from
// go list: its non-test imports and everything they link.
type listedPackage struct {
	ImportPath string
	Name       string
	Imports    []string
	Deps       []string
}

// TestArchitectureRule checks every package of the module against the
// dependency rule of docs/architecture.md, from the non-test imports go
// list reports (tests may reach further: a service's tests use bustest,
// which starts a server).
func TestArchitectureRule(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command(gobin, "list", "-json=ImportPath,Name,Imports,Deps", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listedPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	// The rule must have something to hold for: the three service
	// binaries, the services and the shared packages.
	for _, want := range []string{"services/githubkit/cmd/githubkit", "services/schenotify/cmd/schenotify",
		"services/takeover/cmd/takeover", "services/takeover", "pkg/bus", "pkg/wire", "pkg/lbpkg", "cmd/builtin", "cmd/lbctl"} {
		if !slices.ContainsFunc(pkgs, func(p listedPackage) bool { return p.ImportPath == module+"/"+want }) {
			t.Fatalf("go list did not report %s", want)
		}
	}
	for _, v := range architectureViolations(pkgs) {
		t.Error(v)
	}
}

// TestArchitectureRuleCatches feeds the rule one made-up package per
// clause, so a rule that stops catching anything fails here rather than
// passing silently above.
func TestArchitectureRuleCatches(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	cases := []struct {
		name string
		pkg  listedPackage
		want string // in the violation; "" for none
	}{
		{"service imports another service",
			listedPackage{ImportPath: m("services/takeover"), Imports: []string{m("services/schenotify")}}, "another service"},
		{"service subpackage imports another service's subpackage",
			listedPackage{ImportPath: m("services/takeover/store"), Imports: []string{m("services/schenotify/when")}}, "another service"},
		{"service subpackage imports its service",
			listedPackage{ImportPath: m("services/takeover/console"), Imports: []string{m("services/takeover")}}, "its own service"},
		{"service imports a command's package",
			listedPackage{ImportPath: m("services/githubkit"), Imports: []string{m("cmd/lbctl")}}, "command"},
		{"pkg imports a service",
			listedPackage{ImportPath: m("pkg/bus"), Imports: []string{m("services/takeover/model")}}, "a service"},
		{"pkg imports a service's root",
			listedPackage{ImportPath: m("pkg/lbpkg"), Imports: []string{m("services/takeover")}}, "a service"},
		{"protocol imports the runtime",
			listedPackage{ImportPath: m("pkg/wire"), Imports: []string{m("pkg/binding"), "github.com/nats-io/nats.go"}}, "no runtime"},
		{"protocol imports the bus",
			listedPackage{ImportPath: m("pkg/wire"), Imports: []string{m("pkg/bus")}}, "no runtime"},
		{"package builder links the runtime",
			listedPackage{ImportPath: m("pkg/lbpkg"), Imports: []string{m("pkg/wire")},
				Deps: []string{"github.com/prometheus/client_golang/prometheus"}}, "links no service runtime"},
		{"fake LangBot links the runtime",
			listedPackage{ImportPath: m("cmd/fakelangbot"), Name: "main", Deps: []string{"github.com/nats-io/nats.go/micro"}}, "links no service runtime"},
		{"service binary links a server",
			listedPackage{ImportPath: m("services/githubkit/cmd/githubkit"), Name: "main",
				Imports: []string{m("services/githubkit")}, Deps: []string{"github.com/nats-io/nats-server/v2/server"}}, "NATS server"},
		{"pure core imports the bus",
			listedPackage{ImportPath: m("services/schenotify/when"), Imports: []string{m("pkg/bus")}}, "pure core"},
		{"unknown top-level folder",
			listedPackage{ImportPath: m("tools/x")}, "no rule"},
		{"builtin names the declarations",
			listedPackage{ImportPath: m("cmd/builtin"), Imports: []string{m("services/takeover"), m("pkg/plugin")}}, ""},
		{"protocol imports binding and settings",
			listedPackage{ImportPath: m("pkg/wire"), Imports: []string{m("pkg/binding"), m("pkg/settings"), "encoding/json"}}, ""},
		{"command imports services and pkg",
			listedPackage{ImportPath: m("cmd/lbctl"), Name: "main", Imports: []string{m("services/takeover/admin"), m("pkg/natsembed")},
				Deps: []string{"github.com/nats-io/nats-server/v2/server"}}, ""},
		{"service imports its subpackages and pkg",
			listedPackage{ImportPath: m("services/takeover"), Imports: []string{m("services/takeover/store"), m("pkg/bus")}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := architectureViolations([]listedPackage{c.pkg})
			switch {
			case c.want == "" && len(got) != 0:
				t.Errorf("violations %q, want none", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("violations %q, want one naming %q", got, c.want)
			}
		})
	}
}

// pureCores import the standard library and these only (docs/architecture.md:
// pure cores have no I/O).
var pureCores = map[string][]string{
	"services/takeover/model":  {module + "/pkg/settings"},
	"services/schenotify/when": {module + "/pkg/settings", "github.com/robfig/cron/v3", "github.com/6tail/lunar-go/HolidayUtil", "github.com/6tail/lunar-go/calendar"},
}

// wireImports is all the protocol package (pkg/wire) may import besides the
// standard library: it imports no runtime (no NATS client, no metrics, no
// tracing, not pkg/bus), so whoever speaks the protocol links none.
var wireImports = []string{module + "/pkg/binding", module + "/pkg/settings"}

// hostSide packages speak the protocol without running a service (the
// package builder, the runtime driver and the fake LangBot built on it):
// they link none of runtimeDeps.
var hostSide = []string{"pkg/lbpkg", "pkg/lbpkg/runtimetest", "cmd/fakelangbot"}

// runtimeDeps are the service runtime's libraries, by import path prefix.
var runtimeDeps = []string{"github.com/nats-io/nats.go/micro", "github.com/nats-io/nats.go/jetstream",
	"github.com/prometheus/", "go.opentelemetry.io/", module + "/pkg/bus"}

// architectureViolations applies docs/architecture.md's dependency rule:
//
//   - cmd/* (and services/<name>/cmd/*) may import services and pkg;
//   - services/<name>/... never imports another service, and its
//     subpackages never import services/<name> itself;
//   - pkg/* never imports services or commands (no exception);
//   - pkg/wire, the protocol, imports only wireImports and the standard
//     library, and the host-side packages link no service runtime;
//   - a service binary (services/<name>/cmd/*) links no NATS server;
//   - the pure cores import only what pureCores lists;
//   - reliability (the cross-service tests) may import what a command may.
func architectureViolations(pkgs []listedPackage) []string {
	var out []string
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		parts := strings.Split(rel, "/")
		switch {
		case parts[0] == "cmd" || parts[0] == "reliability":
			// commands and the system tests may import services and pkg
		case rel == "services":
			// the checks that span the three services: test files only
			if len(p.Imports) > 0 {
				out = append(out, p.ImportPath+" imports "+strings.Join(p.Imports, ", ")+": it holds test files only")
			}
		case parts[0] == "services" && len(parts) >= 3 && parts[2] == "cmd":
			svc := parts[1]
			for _, imp := range p.Imports {
				r, ok := strings.CutPrefix(imp, module+"/")
				if !ok {
					continue
				}
				if q := strings.Split(r, "/"); q[0] == "services" && q[1] != svc {
					out = append(out, p.ImportPath+" imports "+imp+": another service")
				}
			}
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/nats-io/nats-server/") {
					out = append(out, p.ImportPath+" links "+d+": a service binary links no NATS server")
					break
				}
			}
		case parts[0] == "services" && len(parts) >= 2:
			svc := parts[1]
			allowed, pure := pureCores[rel]
			for _, imp := range p.Imports {
				if pure && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") && !slices.Contains(allowed, imp) {
					out = append(out, p.ImportPath+" imports "+imp+": a pure core imports "+strings.Join(allowed, ", ")+" and the standard library only")
					continue
				}
				r, ok := strings.CutPrefix(imp, module+"/")
				if !ok {
					continue
				}
				q := strings.Split(r, "/")
				switch {
				case q[0] == "cmd" || slices.Contains(q, "cmd"):
					out = append(out, p.ImportPath+" imports "+imp+": a command")
				case q[0] == "services" && q[1] != svc:
					out = append(out, p.ImportPath+" imports "+imp+": another service")
				case q[0] == "services" && len(q) == 2 && len(parts) > 2:
					out = append(out, p.ImportPath+" imports "+imp+": its own service (subpackages never import it)")
				case q[0] != "services" && q[0] != "pkg":
					out = append(out, p.ImportPath+" imports "+imp+": neither pkg nor its own service")
				}
			}
		case parts[0] == "pkg":
			for _, imp := range p.Imports {
				r, ok := strings.CutPrefix(imp, module+"/")
				if !ok {
					continue
				}
				q := strings.Split(r, "/")
				if q[0] != "pkg" {
					out = append(out, p.ImportPath+" imports "+imp+": pkg never imports a service or a command")
				}
			}
			if rel == "pkg/wire" {
				for _, imp := range p.Imports {
					if strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") && !slices.Contains(wireImports, imp) {
						out = append(out, p.ImportPath+" imports "+imp+": the protocol imports no runtime (only "+strings.Join(wireImports, ", ")+" and the standard library)")
					}
				}
			}
		default:
			out = append(out, p.ImportPath+": no rule for this folder in docs/architecture.md")
		}
		if slices.Contains(hostSide, rel) {
			for _, d := range p.Deps {
				if slices.ContainsFunc(runtimeDeps, func(r string) bool { return strings.HasPrefix(d, r) }) {
					out = append(out, p.ImportPath+" links "+d+": the host side speaks the protocol (pkg/wire) and links no service runtime")
					break
				}
			}
		}
	}
	return out
}
