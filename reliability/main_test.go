package reliability_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binDir holds the service binaries the process tests run; TestMain
// creates and removes it, and binaries builds them once on first use, so
// that runs without the process tests (-run) do not pay for the build.
var (
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "langbot-reliability-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// binaries builds the three service binaries with go build (once per test
// binary) and returns their directory.
func binaries(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		for _, p := range plugins {
			out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, p),
				"github.com/langbot-nats/plugins/services/"+p+"/cmd/"+p).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", p, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}
