package bus_test

import (
	"os/exec"
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
		"github.com/nats-io/nats.go", "github.com/nats-io/nuid",
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
