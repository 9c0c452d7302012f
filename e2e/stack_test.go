//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
)

// The stack's binaries and where the run writes its artefacts. run.sh sets
// these; each defaults to what a manual `go test -tags e2e ./e2e` after
// `make build` would find.
var (
	binDir      = envOr("E2E_BIN", "../bin")
	natsBin     = envOr("E2E_NATS_SERVER", "nats-server")
	jaegerBin   = envOr("E2E_JAEGER", "jaeger")
	outDir      = os.Getenv("E2E_OUT")
	benchN      = envOr("E2E_BENCH_N", "2000")
	accountsCfg = "../deploy/k8s/base/nats/accounts.conf"
)

// Plugins in the order the run starts them.
var plugins = []string{"githubkit", "takeover", "schenotify"}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// say logs a step of the run (go test -v shows it as it happens).
func say(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf(format, args...)
}

// loud prints a line that must stand out in the output of make e2e (SKIP
// and GAP notes) on stdout, as well as in the test log.
func loud(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	fmt.Println("e2e: " + msg)
	t.Log(msg)
}

func randToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// poll calls f until it reports done, failing t with what f last said
// when the deadline passes.
func poll(t *testing.T, timeout time.Duration, what string, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := f()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done after %v (last: %s)", what, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lineLog collects a process's output lines and copies them to a file.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	part  []byte
	file  *os.File
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		_, _ = l.file.Write(p)
	}
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.part[:i]))
		l.part = l.part[i+1:]
	}
	return len(p), nil
}

// Lines returns a copy of the complete lines so far.
func (l *lineLog) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// Find returns the first line matching match.
func (l *lineLog) Find(match func(string) bool) (string, bool) {
	for _, s := range l.Lines() {
		if match(s) {
			return s, true
		}
	}
	return "", false
}

// proc is one child process of the stack.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *lineLog
	done chan struct{}
	err  error
}

// start runs path with args and env (added to a cleaned environment), its
// output going to <out>/<name>.log, and stops it (SIGTERM, then SIGKILL
// after 10 s) when the test ends.
func (s *stack) start(name, path string, args []string, env map[string]string) *proc {
	t := s.t
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = cleanEnv(env)
	cmd.Dir = s.dir
	f, err := os.Create(filepath.Join(s.out, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, out: &lineLog{file: f}, done: make(chan struct{})}
	stopWait := 10 * time.Second
	if name == "jaeger" {
		stopWait = 2 * time.Second // it holds nothing worth a graceful stop
	}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopWait):
			t.Logf("%s did not stop in %v after SIGTERM; killing it", name, stopWait)
			_ = cmd.Process.Kill()
			<-p.done
		}
		f.Close()
	})
	return p
}

// exited reports whether p has stopped, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// cleanEnv is the test's environment without anything that configures
// NATS, the services or OpenTelemetry, plus env.
func cleanEnv(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") || strings.HasPrefix(k, "NATS_") || strings.HasPrefix(k, "LANGBOT_") ||
			strings.HasPrefix(k, "GITHUB") || strings.HasPrefix(k, "JAEGER") {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// stack is the running system: nats-server, Jaeger, the services and an
// lbctl host, each its own process on loopback.
type stack struct {
	t   *testing.T
	dir string // scratch: NATS store, configs
	out string // logs and artefacts

	natsURL   string
	auth      bool              // the deployment's accounts.conf is in force
	passwords map[string]string // NATS user -> password
	stateKey  string
	// issuerSeed is the auth callout's issuer (the services answer tenant
	// logins with it); the server names its public key.
	issuerSeed string

	jaegerURL string // query API
	otlpGRPC  string // OTLP/gRPC receiver, as an endpoint URL

	services map[string]*service
	host     *proc
	http     *http.Client
}

// service is a running plugin service.
type service struct {
	name string
	proc *proc
	http string // base URL of health, readiness and metrics
}

func newStack(t *testing.T) *stack {
	s := &stack{t: t, dir: t.TempDir(), services: map[string]*service{}, http: &http.Client{Timeout: 10 * time.Second}}
	s.out = outDir
	if s.out == "" {
		s.out = t.TempDir()
	}
	if err := os.MkdirAll(s.out, 0o755); err != nil {
		t.Fatal(err)
	}
	say(t, "logs and artefacts in %s", s.out)
	return s
}

// startNATS starts nats-server with JetStream (file store, fsync always) on
// a random loopback port, using the deployment's accounts and per-service
// users when deploy/k8s/base/nats/accounts.conf exists.
func (s *stack) startNATS() {
	t := s.t
	t.Helper()
	accounts, err := os.ReadFile(accountsCfg)
	include := ""
	env := map[string]string{}
	s.passwords = map[string]string{}
	if err == nil {
		s.auth = true
		if err := os.WriteFile(filepath.Join(s.dir, "accounts.conf"), accounts, 0o600); err != nil {
			t.Fatal(err)
		}
		include = "include ./accounts.conf\n"
		if s.issuerSeed, err = bus.NewIssuerSeed(); err != nil {
			t.Fatal(err)
		}
		if env["AUTH_ISSUER"], err = bus.IssuerPublicKey(s.issuerSeed); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"host", "admin", "githubkit", "takeover", "schenotify", "langbot_pkg", "sys"} {
			// the config parser reads an environment value as config text:
			// start with a letter, then [A-Za-z0-9]
			pw := "pw" + randToken(12)
			s.passwords[u] = pw
			env[strings.ToUpper(u)+"_PASSWORD"] = pw
		}
	} else {
		loud(t, "NOTE: %s not found (%v); NATS runs without accounts", accountsCfg, err)
	}
	conf := fmt.Sprintf(`listen: "127.0.0.1:-1"
server_name: e2e
max_payload: 32MB
ports_file_dir: %q
jetstream {
  store_dir: %q
  max_file_store: 2GB
  max_memory_store: 256MB
  sync_interval: always
}
%s`, s.dir, filepath.Join(s.dir, "js"), include)
	confPath := filepath.Join(s.dir, "nats.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	p := s.start("nats-server", natsBin, []string{"-c", confPath}, env)
	portsFile := filepath.Join(s.dir, fmt.Sprintf("%s_%d.ports", filepath.Base(natsBin), p.cmd.Process.Pid))
	poll(t, 30*time.Second, "nats-server ports file", func() (bool, string) {
		if done, err := p.exited(); done {
			t.Fatalf("nats-server exited: %v\n%s", err, strings.Join(p.out.Lines(), "\n"))
		}
		raw, err := os.ReadFile(portsFile)
		if err != nil {
			return false, err.Error()
		}
		var ports struct {
			Nats []string `json:"nats"`
		}
		if err := json.Unmarshal(raw, &ports); err != nil || len(ports.Nats) == 0 {
			return false, fmt.Sprintf("%s: %v", raw, err)
		}
		s.natsURL = ports.Nats[0]
		return true, ""
	})
	say(t, "nats-server at %s (accounts: %v)", s.natsURL, s.auth)
}

// startJaeger starts Jaeger v2 with in-memory storage, OTLP receivers and
// the query API on free loopback ports (config: e2e/jaeger.yaml).
func (s *stack) startJaeger() {
	t := s.t
	t.Helper()
	ports := map[string]int{}
	for _, k := range []string{"E2E_JAEGER_QUERY_HTTP", "E2E_JAEGER_QUERY_GRPC", "E2E_JAEGER_HEALTH", "E2E_JAEGER_OTLP_GRPC", "E2E_JAEGER_OTLP_HTTP"} {
		ports[k] = freePort(t)
	}
	env := map[string]string{}
	for k, v := range ports {
		env[k] = fmt.Sprint(v)
	}
	cfg, err := filepath.Abs("jaeger.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := s.start("jaeger", jaegerBin, []string{"--config", cfg}, env)
	s.jaegerURL = fmt.Sprintf("http://127.0.0.1:%d", ports["E2E_JAEGER_QUERY_HTTP"])
	s.otlpGRPC = fmt.Sprintf("http://127.0.0.1:%d", ports["E2E_JAEGER_OTLP_GRPC"])
	start := time.Now()
	poll(t, 60*time.Second, "jaeger query API", func() (bool, string) {
		if done, err := p.exited(); done {
			t.Fatalf("jaeger exited: %v\n%s", err, strings.Join(p.out.Lines(), "\n"))
		}
		resp, err := s.http.Get(s.jaegerURL + "/api/services")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	say(t, "jaeger query at %s, OTLP gRPC at %s (up in %v)", s.jaegerURL, s.otlpGRPC, time.Since(start).Round(time.Millisecond))
}

// otelEnv is the OpenTelemetry environment of every traced process.
func (s *stack) otelEnv(service string) map[string]string {
	return map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": s.otlpGRPC,
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_INSECURE": "true",
		"OTEL_SERVICE_NAME":           service,
		"OTEL_BSP_SCHEDULE_DELAY":     "100",
	}
}

// natsEnv is the NATS environment of a process connecting as user.
func (s *stack) natsEnv(user string) map[string]string {
	env := map[string]string{"NATS_URL": s.natsURL}
	if s.auth {
		env["NATS_USER"] = user
		env["NATS_PASSWORD"] = s.passwords[user]
		if slices.Contains(plugins, user) {
			env["LANGBOT_AUTH_ISSUER_SEED"] = s.issuerSeed
		}
	}
	return env
}

// lbctl runs an lbctl command as NATS user and returns its stdout.
func (s *stack) lbctl(user string, args ...string) (string, error) {
	return s.lbctlEnv(user, nil, args...)
}

// lbctlEnv is lbctl with extra environment.
func (s *stack) lbctlEnv(user string, extra map[string]string, args ...string) (string, error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "lbctl"), args...)
	env := s.natsEnv(user)
	for k, v := range extra {
		env[k] = v
	}
	cmd.Env = cleanEnv(env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("lbctl %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), err
}

// hasBinary reports whether run.sh built the service binary.
func hasBinary(name string) bool {
	_, err := os.Stat(filepath.Join(binDir, name))
	return err == nil
}

// startService starts a plugin service binary with extra env and waits
// until it reports its HTTP address and /readyz answers 200.
func (s *stack) startService(name string, extra map[string]string, args ...string) *service {
	t := s.t
	t.Helper()
	env := s.otelEnv(name)
	for k, v := range s.natsEnv(name) {
		env[k] = v
	}
	env["LANGBOT_HTTP_ADDR"] = "127.0.0.1:0"
	env["LANGBOT_STATE_KEY"] = s.stateKey
	env["LANGBOT_JS_REPLICAS"] = "1"
	env["LANGBOT_LOG_LEVEL"] = "debug" // the log scan covers every level
	for k, v := range extra {
		env[k] = v
	}
	p := s.start(name, filepath.Join(binDir, name), args, env)
	svc := &service{name: name, proc: p}
	poll(t, 60*time.Second, name+" start", func() (bool, string) {
		if done, err := p.exited(); done {
			t.Fatalf("%s exited: %v\n%s", name, err, strings.Join(p.out.Lines(), "\n"))
		}
		line, ok := p.out.Find(func(l string) bool { return strings.Contains(l, `"msg":"started"`) })
		if !ok {
			return false, "no started line yet"
		}
		var rec struct {
			HTTP string `json:"http"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.HTTP == "" {
			return false, line
		}
		svc.http = "http://" + rec.HTTP
		return true, ""
	})
	poll(t, 60*time.Second, name+" /readyz", func() (bool, string) {
		code, body := s.get(svc.http + "/readyz")
		return code == 200, fmt.Sprint(code, " ", body)
	})
	s.services[name] = svc
	return svc
}

// get returns the status and body of a GET (0 on a transport error).
func (s *stack) get(url string) (int, string) {
	resp, err := s.http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, string(b)
}

// startHost runs `lbctl host` in the background as the host user: it
// answers host actions and prints every send_message.
func (s *stack) startHost() {
	t := s.t
	t.Helper()
	env := s.natsEnv("host")
	s.host = s.start("lbctl-host", filepath.Join(binDir, "lbctl"), []string{"host"}, env)
	poll(t, 30*time.Second, "lbctl host", func() (bool, string) {
		if done, err := s.host.exited(); done {
			t.Fatalf("lbctl host exited: %v\n%s", err, strings.Join(s.host.out.Lines(), "\n"))
		}
		_, ok := s.host.out.Find(func(l string) bool { return strings.Contains(l, "answering host actions") })
		return ok, "no banner yet"
	})
}

// newStateKey returns a LANGBOT_STATE_KEY keyring with one random key.
func newStateKey() string {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return "e2e=" + base64.StdEncoding.EncodeToString(k)
}

// scanLines splits text into lines.
func scanLines(text string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
