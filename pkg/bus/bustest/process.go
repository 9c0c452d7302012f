package bustest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/natsembed"
)

// EnvServerBinary names the environment variable that makes NewBenchServer
// run a nats-server binary in a process of its own instead of embedding
// the server ("make bench-process" builds one from the module).
const EnvServerBinary = "BENCH_NATS_SERVER"

// NewBenchServer starts the server a benchmark measures against: the
// nats-server binary that BENCH_NATS_SERVER names, in its own process, or
// else an embedded one as NewServer does. A process of its own is how
// production runs it: the server's goroutines, heap and collector are
// then apart from the ones of the code under test. With an embedded
// server, the process runs until cleanup with the runtime settings lbctl
// dev gives itself (natsembed.Tune: the Ps of natsembed.Procs of the
// runtime's default, whatever -cpu says, and natsembed.GCPercent),
// unless GOMAXPROCS or GOGC is set in the environment.
func NewBenchServer(t testing.TB) *Server {
	t.Helper()
	if bin := os.Getenv(EnvServerBinary); bin != "" {
		return NewServerProcess(t, bin)
	}
	t.Cleanup(natsembed.Tune())
	return NewServer(t)
}

// NewServerProcess starts the nats-server binary bin as a single node
// configured as NewServer configures the embedded one (JetStream, file
// store with sync_interval always, 16 MiB payloads) and creates
// LANGBOT_LIFECYCLE. The returned Server's embedded Server field is nil;
// URL, Conn, JetStream, Restart and Stop work.
func NewServerProcess(t testing.TB, bin string) *Server {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	conf := filepath.Join(dir, "nats.conf")
	body := fmt.Sprintf("listen: 127.0.0.1:%d\nserver_name: test\nmax_payload: %d\nmax_pending: %d\njetstream {\n  store_dir: %q\n  sync_interval: always\n}\n",
		port, natsembed.DefaultMaxPayload, bus.MaxPendingFor(natsembed.DefaultMaxPayload), filepath.Join(dir, "store"))
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatalf("bustest: %v", err)
	}
	s := &Server{t: t, Dir: dir, Port: port, bin: bin, conf: conf}
	s.startProcess(t)
	t.Cleanup(s.shutdown)
	s.ensureLifecycle(t)
	return s
}

func (s *Server) startProcess(t testing.TB) {
	t.Helper()
	log, err := os.OpenFile(filepath.Join(s.Dir, "nats.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("bustest: %v", err)
	}
	defer log.Close() // the child holds its own descriptor
	cmd := exec.Command(s.bin, "-c", s.conf)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("bustest: start %s: %v", s.bin, err)
	}
	s.proc = cmd
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := s.jetStreamReady(); err == nil {
			return
		} else if time.Now().After(deadline) {
			s.shutdown()
			t.Fatalf("bustest: %s not ready after 20s: %v\n%s", s.bin, err, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// jetStreamReady connects once and asks for the account's JetStream info.
func (s *Server) jetStreamReady() error {
	nc, err := nats.Connect(s.URL(), nats.Timeout(time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// stopProcess asks the server to exit as an operator would (SIGTERM lets
// it flush and close its stores) and kills it if it has not within 30 s.
func (s *Server) stopProcess() {
	if s.proc == nil {
		return
	}
	cmd := s.proc
	s.proc = nil
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "nats.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-20, 0):], "\n")
}

// ProcessCPU is the CPU time the server's own process has used: zero for
// an embedded server, whose time is its host process's. It reads
// /proc/<pid>/stat (Linux; clock ticks of 10 ms).
func (s *Server) ProcessCPU() time.Duration {
	if s.proc == nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.proc.Process.Pid))
	if err != nil {
		return 0
	}
	// the fields after the command name, which is in parentheses and may
	// hold spaces: state is the first, utime the 12th, stime the 13th
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
