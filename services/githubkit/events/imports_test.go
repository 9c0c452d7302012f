package events_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsAsDocumented keeps the package doc's rule: nothing this
// package links (its non-test imports and theirs) is pkg/bus, NATS or the
// service root.
func TestImportsAsDocumented(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	refused := []string{
		"github.com/langbot-nats/plugins/pkg/bus", "github.com/nats-io/",
		"github.com/langbot-nats/plugins/services/githubkit",
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/langbot-nats/plugins/services/githubkit/ghclient" || dep == "github.com/langbot-nats/plugins/services/githubkit/events" {
			continue // the two pure halves (events imports ghclient)
		}
		for _, r := range refused {
			if dep == r || strings.HasPrefix(dep, r) && (strings.HasSuffix(r, "/") || strings.HasPrefix(dep, r+"/")) {
				t.Errorf("events links %s, which its doc does not allow", dep)
			}
		}
	}
}
