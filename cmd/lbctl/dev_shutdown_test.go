package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

// TestDevStopsQuietly: lbctl dev, at its default log level, stopped as an
// interrupt stops it (main cancels run's context on SIGINT/SIGTERM), exits
// 0 and prints no error or warning on the way out.
func TestDevStopsQuietly(t *testing.T) {
	out, errOut := &bustest.LogBuffer{}, &bustest.LogBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := []string{"dev", "--listen", anyPort, "--http", "127.0.0.1:0",
		"--data", t.TempDir(), "--no-prompt", "--fake-github"}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, stdio{in: strings.NewReader(""), out: out, err: errOut, getenv: func(string) string { return "" }})
	}()
	bustest.EventuallyWithin(t, 60*time.Second, "the banner", func() bool { return strings.Contains(out.String(), "NATS") })
	before := errOut.String()
	cancel()
	var code int
	select {
	case code = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("lbctl dev did not stop")
	}
	after := strings.TrimPrefix(errOut.String(), before)
	if code != 0 {
		t.Errorf("exit code %d, want 0; stderr:\n%s", code, errOut.String())
	}
	for _, line := range strings.Split(after, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "error") || strings.Contains(l, "warn") || strings.Contains(l, "stopped:") || strings.Contains(l, "fail") {
			t.Errorf("shutdown printed %q", line)
		}
	}
	if before != "" {
		t.Logf("stderr before the stop:\n%s", before)
	}
}
