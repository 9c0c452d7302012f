package githubkit_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// TestRunLeavesNoGoroutine checks that no worker, consumer or HTTP
// connection of the service outlives Run.
func TestRunLeavesNoGoroutine(t *testing.T) {
	h := newHarness(t)
	a := newInst(t, "a", h.baseConfig("en_US", "t", 120))
	// warm the harness's own connections first
	h.addEvents(hw, 100, "watch")
	if _, err := h.js.AccountInfo(context.Background()); err != nil { // the conn's reply subscription
		t.Fatal(err)
	}
	before := clientGoroutines()
	kr, _ := bus.ParseKeyring(h.keyStr)
	svc, err := githubkit.New(githubkit.Config{AllowHTTP: true, AllowPrivateNetworks: true}, bus.Deps{Conn: h.nc, Keyring: kr})
	if err != nil {
		t.Fatal(err)
	}
	run := bustest.Start(t, svc)
	h.attach(a, true)
	h.cmd(a, "sub "+hw)
	h.addEvents(hw, 101, "release_full")
	h.runs = append(h.runs, &running{svc: svc, hasReg: false})
	h.fire(a, hw)
	h.runs = nil
	if len(h.sends()) != 1 {
		t.Fatal("no push")
	}
	if err := run.Stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if svc.Ready() {
		t.Fatal("ready after Run returned")
	}
	deadline := time.Now().Add(bustest.WaitTimeout)
	for clientGoroutines() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines after Run, %d before:\n%s", clientGoroutines(), before, buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// clientGoroutines counts goroutines outside the embedded NATS server
// (whose streams and consumers the service created, and which outlive it).
func clientGoroutines() int {
	buf := make([]byte, 4<<20)
	n := runtime.Stack(buf, true)
	count := 0
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.TrimSpace(g) != "" && !strings.Contains(g, "nats-server/v2/server") {
			count++
		}
	}
	return count
}
