package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/lbpkg"
)

// TestPackageCommand runs lbctl package for one plugin and checks that it
// prints "sha256  file" with the file's real digest, and refuses a
// missing wheel.
func TestPackageCommand(t *testing.T) {
	wheel := os.Getenv("NATS_PY_WHEEL")
	if wheel == "" {
		wheel = filepath.Join("..", "..", "..", "shared", "vendor", "wheels", lbpkg.NatsPyWheelFile)
	}
	if _, err := os.Stat(wheel); err != nil {
		t.Skipf("no nats-py wheel (set NATS_PY_WHEEL): %v", err)
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	io := stdio{out: &stdout, err: &stderr, getenv: func(string) string { return "" }}
	if code := run(context.Background(), []string{"package", "--plugin", "schenotify", "--out", out, "--nats-py-wheel", wheel}, io); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	fields := strings.Fields(stdout.String())
	if len(fields) != 2 || !strings.HasSuffix(fields[1], "langbot-nats-ScheNotify-"+lbpkg.DefaultVersion+".lbpkg") {
		t.Fatalf("output %q", stdout.String())
	}
	data, err := os.ReadFile(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != fields[0] {
		t.Errorf("printed digest %s is not the file's", fields[0])
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"package", "--out", out}, io); code == 0 || !strings.Contains(stderr.String(), "--nats-py-wheel") {
		t.Errorf("no wheel: exit %d, %q", code, stderr.String())
	}
}
