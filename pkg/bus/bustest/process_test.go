package bustest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/natsembed"
)

// serverBinary builds the nats-server of go.mod, as make bench-process does.
func serverBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(bustest.EnvServerBinary); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "nats-server")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput()
	if err != nil {
		t.Fatalf("build nats-server: %v\n%s", err, out)
	}
	return bin
}

// TestServerProcessKeepsAcknowledgedWrites: a server in a process of its
// own takes durable writes, keeps them over a restart, and its clients
// reconnect by themselves.
func TestServerProcessKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nats-server")
	}
	srv := bustest.NewServerProcess(t, serverBinary(t))
	if srv.Server != nil {
		t.Fatal("a process server has an embedded server")
	}
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.Stream(ctx, "LANGBOT_LIFECYCLE"); err != nil {
		t.Fatalf("lifecycle stream: %v", err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "P", Subjects: []string{"p.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "p.one", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	for range 500 { // work enough to show in the process's CPU time
		if _, err := js.Publish(ctx, "p.more", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if srv.ProcessCPU() <= 0 {
		t.Fatal("no CPU time read for the server process")
	}
	srv.Restart(t)
	var msg *jetstream.RawStreamMsg
	var err error
	for range 100 { // the client reconnects on its own
		var s jetstream.Stream
		if s, err = js.Stream(ctx, "P"); err == nil {
			if msg, err = s.GetLastMsgForSubject(ctx, "p.one"); err == nil {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if string(msg.Data) != "kept" {
		t.Fatalf("after restart: %q", msg.Data)
	}
	srv.Stop()
	sctx, scancel := context.WithTimeout(ctx, time.Second)
	defer scancel()
	if _, err := js.Stream(sctx, "P"); err == nil {
		t.Fatal("stream reachable after Stop")
	}
}

// TestBenchServerProcs: an embedded bench server runs its process with the
// Ps and the collector setting lbctl dev takes, the same for a second
// server, and cleanup gives both settings back.
func TestBenchServerProcs(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" || os.Getenv("GOGC") != "" || os.Getenv(bustest.EnvServerBinary) != "" {
		t.Skip("GOMAXPROCS, GOGC or BENCH_NATS_SERVER set")
	}
	gcPercent := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	before, gcBefore := runtime.GOMAXPROCS(0), gcPercent()
	t.Run("servers", func(t *testing.T) {
		bustest.NewBenchServer(t)
		first := runtime.GOMAXPROCS(0)
		if first < 4 || first < before {
			t.Fatalf("GOMAXPROCS %d with an embedded bench server, was %d", first, before)
		}
		if got := gcPercent(); got != natsembed.GCPercent {
			t.Fatalf("GC percent %d with an embedded bench server, want %d", got, natsembed.GCPercent)
		}
		bustest.NewBenchServer(t)
		if got := runtime.GOMAXPROCS(0); got != first {
			t.Fatalf("a second server moved GOMAXPROCS from %d to %d", first, got)
		}
	})
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS %d after cleanup, want %d", got, before)
	}
	if got := gcPercent(); got != gcBefore {
		t.Fatalf("GC percent %d after cleanup, want %d", got, gcBefore)
	}
}
