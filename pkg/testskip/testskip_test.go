package testskip_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/testskip"
)

// TestSkipRecords checks that a skip lands in the report file with its
// group and enabling command.
func TestSkipRecords(t *testing.T) {
	report := filepath.Join(t.TempDir(), "skips.txt")
	t.Setenv(testskip.EnvReport, report)
	g := testskip.Group{Name: "demo tests", Enable: "scripts/test-deps.sh", Required: "TESTSKIP_DEMO_REQUIRED"}
	t.Run("skipped", func(t *testing.T) { g.Skip(t, "demo part missing") })
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), "demo tests\tscripts/test-deps.sh\tdemo part missing\n"; got != want {
		t.Fatalf("report = %q, want %q", got, want)
	}
	if !strings.Contains(string(data), "scripts/test-deps.sh") {
		t.Fatal("enabling command missing")
	}
}
