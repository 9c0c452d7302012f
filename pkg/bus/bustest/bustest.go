// Package bustest starts real NATS servers for tests, the way
// net/http/httptest starts real HTTP servers: in process, on random
// loopback ports, JetStream on with a file store in a temporary directory
// and fsync on every write, the lifecycle stream created by the
// deployment's own function, and teardown registered with t.Cleanup.
//
// It is also the one test harness every service's tests share: Start runs
// a service until cleanup and waits until it is ready, Eventually polls a
// condition, Clock is a clock tests move forward, Attach and Revoke publish
// lifecycle messages and wait until the plugin acknowledged them,
// WaitAuthority waits for a replica's authority view, LogBuffer collects
// logs, and Host is the one fake LangBot host (answers host actions and
// records them). Beside those: an open-loop load generator, and the bus
// floor (pkg/busbench, wrapped for testing.TB) that benchmarks report
// their figures against. A service's own harness keeps only what is about
// that service.
//
// Only tests and benchmarks import it. It may import pkg/binding,
// pkg/bus, pkg/wire, pkg/busbench, pkg/natsembed, nats-server, the NATS client and
// Prometheus' client.
package bustest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/natsembed"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Server is one NATS server with JetStream: embedded, or a process of its
// own (NewServerProcess), in which case the embedded Server is nil.
type Server struct {
	*server.Server
	t    testing.TB
	cfg  natsembed.Config
	Dir  string
	Port int

	bin, conf string    // a process: its binary and config file
	proc      *exec.Cmd // the running process
}

// URL returns the client URL.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.Port) }

// NewServer starts a single-node server and creates LANGBOT_LIFECYCLE.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := startServer(t, natsembed.Config{Dir: t.TempDir(), Port: -1, ServerName: "test"})
	s.ensureLifecycle(t)
	return s
}

// NewServerMaxPayload is NewServer with a message size limit of maxPayload
// bytes, as a deployment sets it (32 MiB for takeover attachments).
func NewServerMaxPayload(t testing.TB, maxPayload int32) *Server {
	t.Helper()
	s := startServer(t, natsembed.Config{Dir: t.TempDir(), Port: -1, ServerName: "test", MaxPayload: maxPayload})
	s.ensureLifecycle(t)
	return s
}

// ensureLifecycle creates LANGBOT_LIFECYCLE, as the deployment does.
func (s *Server) ensureLifecycle(t testing.TB) {
	t.Helper()
	js, _ := jetstream.New(s.Conn(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := bus.EnsureLifecycleStream(ctx, js, wire.Subjects{}, 1); err != nil {
		t.Fatalf("bustest: lifecycle stream: %v", err)
	}
}

// NewServerWithConfig starts a server from a NATS config file (accounts,
// users), for permission tests. The lifecycle stream is not created.
func NewServerWithConfig(t testing.TB, file string) *Server {
	t.Helper()
	return startServer(t, natsembed.Config{Dir: t.TempDir(), Port: -1, ServerName: "test", ConfigFile: file})
}

func startServer(t testing.TB, cfg natsembed.Config) *Server {
	t.Helper()
	if cfg.ConfigFile == "" {
		// as deployed: room for bus.BodiesInFlight maximum-size messages
		payload := int64(cfg.MaxPayload)
		if payload == 0 {
			payload = natsembed.DefaultMaxPayload
		}
		cfg.MaxPending = bus.MaxPendingFor(payload)
	}
	srv, err := natsembed.Start(cfg)
	if err != nil {
		t.Fatalf("bustest: %v", err)
	}
	if cfg.Port < 0 {
		// the server bound a free port itself (no window in which another
		// test's listener can take it); a restart binds the same one
		addr, ok := srv.Addr().(*net.TCPAddr)
		if !ok {
			t.Fatalf("bustest: the server listens on %v", srv.Addr())
		}
		cfg.Port = addr.Port
	}
	s := &Server{Server: srv, t: t, cfg: cfg, Dir: cfg.Dir, Port: cfg.Port}
	t.Cleanup(func() { s.shutdown() })
	return s
}

func (s *Server) shutdown() {
	if s.bin != "" {
		s.stopProcess()
		return
	}
	if s.Server != nil {
		s.Server.Shutdown()
		s.Server.WaitForShutdown()
	}
}

// Restart stops the server and starts it again on the same port and store,
// as a crash-free restart would: everything acknowledged must survive.
// Existing clients reconnect by themselves.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.shutdown()
	if s.bin != "" {
		s.startProcess(t)
		return
	}
	srv, err := natsembed.Start(s.cfg)
	if err != nil {
		t.Fatalf("bustest: restart: %v", err)
	}
	s.Server = srv
	waitJetStream(t, s)
}

// Stop shuts the server down (Restart brings it back).
func (s *Server) Stop() { s.shutdown() }

// Conn returns a new client connection, closed at cleanup. It reconnects
// forever, so it survives Restart.
func (s *Server) Conn(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)
	nc, err := nats.Connect(s.URL(), opts...)
	if err != nil {
		t.Fatalf("bustest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream returns a JetStream context on a new connection.
func (s *Server) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(s.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func waitJetStream(t testing.TB, s *Server) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if s.JetStreamEnabled() && s.Server.JetStreamIsCurrent() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("bustest: JetStream not ready")
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("bustest: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Cluster is an in-process JetStream cluster.
type Cluster struct {
	Servers []*Server
}

// NewCluster starts an n-node JetStream cluster, waits until it has a meta
// leader, and creates LANGBOT_LIFECYCLE with n replicas.
func NewCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	clientPorts := make([]int, n)
	routePorts := make([]int, n)
	for i := range n {
		clientPorts[i], routePorts[i] = freePort(t), freePort(t)
	}
	var routes []string
	for _, p := range routePorts {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	c := &Cluster{}
	for i := range n {
		cfg := natsembed.Config{
			Dir: t.TempDir(), Port: clientPorts[i], ServerName: fmt.Sprintf("n%d", i+1),
			Cluster: &natsembed.Cluster{Name: "test-cluster", Port: routePorts[i], Routes: routes},
		}
		c.Servers = append(c.Servers, startServer(t, cfg))
	}
	c.WaitLeader(t)
	js, err := jetstream.New(c.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := bus.EnsureLifecycleStream(ctx, js, wire.Subjects{}, n)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bustest: cluster lifecycle stream: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return c
}

// URLs returns the comma-separated client URLs of all nodes.
func (c *Cluster) URLs() string {
	u := ""
	for i, s := range c.Servers {
		if i > 0 {
			u += ","
		}
		u += s.URL()
	}
	return u
}

// Conn returns a client connected to the cluster.
func (c *Cluster) Conn(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)
	nc, err := nats.Connect(c.URLs(), opts...)
	if err != nil {
		t.Fatalf("bustest: connect cluster: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// WaitLeader waits until the JetStream meta group has a leader.
func (c *Cluster) WaitLeader(t testing.TB) *Server {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range c.Servers {
			if s.Server != nil && s.Running() && s.JetStreamIsLeader() {
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("bustest: no JetStream meta leader")
	return nil
}

// StreamLeader returns the node leading a stream (or bucket stream
// "KV_<bucket>"), waiting until there is one.
func (c *Cluster) StreamLeader(t testing.TB, stream string) *Server {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range c.Servers {
			if s.Server != nil && s.Running() && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("bustest: no leader for stream %s", stream)
	return nil
}
