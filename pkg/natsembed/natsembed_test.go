package natsembed_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/natsembed"
)

func TestStartRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  natsembed.Config
	}{
		{"no store directory", natsembed.Config{Port: -1}},
		{"bad route", natsembed.Config{Dir: t.TempDir(), Port: -1, Cluster: &natsembed.Cluster{Name: "c", Port: -1, Routes: []string{"nats-route://%zz"}}}},
		{"missing config file", natsembed.Config{Dir: t.TempDir(), Port: -1, ConfigFile: "/nonexistent/nats.conf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := natsembed.Start(tc.cfg)
			if !errors.Is(err, natsembed.ErrStart) {
				if s != nil {
					s.Shutdown()
				}
				t.Fatalf("Start: got %v, want ErrStart", err)
			}
		})
	}
}

func TestStartServesJetStream(t *testing.T) {
	s, err := natsembed.Start(natsembed.Config{Dir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.JetStreamEnabled() {
		t.Fatal("JetStream off")
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.MaxPayload(); got != 16<<20 {
		t.Fatalf("max payload %d, want %d", got, 16<<20)
	}
}

func TestProcs(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{1, 4}, {2, 4}, {3, 6}, {8, 16}} {
		if got := natsembed.Procs(tc.in); got != tc.want {
			t.Errorf("Procs(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestServiceBinariesDoNotLinkServer keeps the reason this package exists:
// a service binary only connects to a server, so none of its dependencies
// may be nats-server (nor this package, which imports it).
func TestServiceBinariesDoNotLinkServer(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	for _, name := range []string{"githubkit", "takeover", "schenotify"} {
		cmd := exec.Command(gobin, "list", "-deps", "./services/"+name+"/cmd/"+name)
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", name, err)
		}
		for _, pkg := range strings.Fields(string(out)) {
			if strings.HasPrefix(pkg, "github.com/nats-io/nats-server/") || pkg == "github.com/langbot-nats/plugins/pkg/natsembed" {
				t.Errorf("%s links %s", name, pkg)
			}
		}
	}
}
