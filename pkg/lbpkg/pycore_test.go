package lbpkg_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/lbpkg"
	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
)

// pythonEnv finds python3 and the Python path under which the SDK
// classes the core subclasses and nats-py import: pip-installed modules
// when they import as they are, else the SDK's src/ under $LANGBOT_VENDOR
// (default ../shared/vendor beside the repo) plus the extra site folders
// in $LANGBOT_PY_EXTRA_PATH (default /usr/lib/python3/dist-packages, where
// Debian puts httpx and the other pure-Python packages the SDK imports).
// It skips, saying why, when neither works.
func pythonEnv(t *testing.T) (python string, path []string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		runtimetest.Unavailable(t, "PK-8 skipped: no python3 on PATH")
	}
	probe := func(path []string) error {
		code := "import sys; sys.path[:0] = sys.argv[1:]; import langbot_plugin.api.definition.plugin, langbot_plugin.api.definition.components.page"
		out, err := exec.Command(python, append([]string{"-c", code}, path...)...).CombinedOutput()
		if err != nil {
			return &exec.ExitError{Stderr: out}
		}
		return nil
	}
	if probe(nil) == nil {
		return python, nil
	}
	path = []string{filepath.Join(vendorDir(t), "langbot-plugin-sdk-0.5.5", "src")}
	extra := os.Getenv("LANGBOT_PY_EXTRA_PATH")
	if extra == "" {
		extra = "/usr/lib/python3/dist-packages"
	}
	for _, p := range filepath.SplitList(extra) {
		if _, err := os.Stat(p); err == nil {
			path = append(path, p)
		}
	}
	if err := probe(path); err != nil {
		runtimetest.Unavailable(t, fmt.Sprintf("PK-8 skipped: the LangBot plugin SDK does not import (pip install langbot-plugin, or set LANGBOT_VENDOR to a folder with langbot-plugin-sdk-0.5.5/src and LANGBOT_PY_EXTRA_PATH to where httpx and pydantic live): %s",
			strings.TrimSpace(string(err.(*exec.ExitError).Stderr))))
	}
	return python, path
}

// TestPythonCore is PK-8: the forwarding core's own unittest suite, run
// against each built package (its generated.json and bundled nats-py)
// and a real embedded NATS server with JetStream.
func TestPythonCore(t *testing.T) {
	python, path := pythonEnv(t)
	wheel := wheelPath(t)
	srv := bustest.NewServer(t)
	tests, err := filepath.Abs(filepath.Join("pycore", "tests"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range declarations(t) {
		t.Run(d.Plugin, func(t *testing.T) {
			p, err := lbpkg.Build(d, lbpkg.Options{WheelPath: wheel})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := p.WriteDir(dir); err != nil {
				t.Fatal(err)
			}
			// The package comes first, as its main.py arranges in a worker.
			sysPath := append([]string{dir, tests}, path...)
			code := "import sys, unittest; sys.path[:0] = sys.argv[2:]; " +
				"sys.exit(0 if unittest.main(module=None, argv=['pycore', 'discover', '-s', sys.argv[1], '-t', sys.argv[1], '-v'], exit=False).result.wasSuccessful() else 1)"
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, append([]string{"-B", "-c", code, tests}, sysPath...)...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "LANGBOT_NATS_TEST_URL="+srv.URL(), "PYTHONDONTWRITEBYTECODE=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("python unittest failed: %v\n%s", err, out)
			}
			t.Logf("%s", out)
			if !strings.Contains(string(out), "OK") {
				t.Fatalf("no OK in unittest output:\n%s", out)
			}
		})
	}
}
