package main

// Acceptance tests of the binary as an operator runs it: built with go
// build, started as a process on a data directory, with the test as the
// LangBot host on the server's client port (a fake host subscriber,
// bustest.Host) and the fake GitHub.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// binDir holds the binaries TestMain built.
var binDir string

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "langbot-plugins-test")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		for pkg, out := range map[string]string{".": name, "../lbctl": "lbctl"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, out), pkg)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "go build %s: %v\n", pkg, err)
				return 1
			}
		}
		binDir = dir
		return m.Run()
	}()
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// install is where one binary runs: its data directory and addresses.
type install struct {
	t                  *testing.T
	dir                string
	natsAddr, httpAddr string
	env                []string
	started            bool // the addresses are in use: a restart keeps them
}

func newInstall(t *testing.T, gh *fakegithub.Server) *install {
	return &install{t: t, dir: filepath.Join(t.TempDir(), "data"), natsAddr: freeAddr(t), httpAddr: freeAddr(t),
		env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TZ=UTC", "LANGBOT_LOG_LEVEL=info",
			"GITHUB_API_URL=" + gh.URL, "GITHUB_ALLOW_HTTP=true", "GITHUB_ALLOW_PRIVATE_NETWORKS=true"}}
}

// TestStartAgainOnTakenPort: a first start whose HTTP port was taken
// between freeAddr and the bind starts again on new addresses.
func TestStartAgainOnTakenPort(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(fakegithub.Options{})
	defer gh.Close()
	in := newInstall(t, gh)
	taken := in.httpAddr
	ln, err := net.Listen("tcp", taken)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p, _ := in.start("-nats-only")
	if in.httpAddr == taken {
		t.Fatalf("started on the taken address %s", taken)
	}
	p.stop(t)
}

// proc is one run of the binary.
type proc struct {
	cmd  *exec.Cmd
	out  *bustest.LogBuffer
	done chan error
}

// start runs the binary on the install and waits until /readyz answers
// 200 (with -nats-only, until the server is up); it returns how long that
// took.
//
// freeAddr's ports are only free when it returns: a parallel test's
// socket may take one before the binary binds it. So a first start that
// fails on a taken address starts again on new ones (nothing has been
// given the old ones yet); a restart keeps its addresses.
func (in *install) start(args ...string) (*proc, time.Duration) {
	in.t.Helper()
	for attempt := 1; ; attempt++ {
		p, took, err := in.try(args...)
		if err == nil {
			in.started = true
			return p, took
		}
		if in.started || attempt == 3 || !strings.Contains(p.out.String(), "address already in use") {
			in.t.Fatal(err)
		}
		in.t.Logf("start %d: a port was taken meanwhile; again on new ones", attempt)
		in.natsAddr, in.httpAddr = freeAddr(in.t), freeAddr(in.t)
	}
}

// try is one start: the running process, or why it is not ready.
func (in *install) try(args ...string) (*proc, time.Duration, error) {
	t := in.t
	t.Helper()
	p := &proc{out: &bustest.LogBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(filepath.Join(binDir, name), append([]string{"-data", in.dir, "-nats-listen", in.natsAddr, "-http", in.httpAddr}, args...)...)
	p.cmd.Env = in.env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	began := time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	// bounded: whatever else holds the port may accept and never answer
	probe := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case err := <-p.done:
			return p, 0, fmt.Errorf("%s exited before ready: %v\n%s", name, err, p.out.String())
		default:
		}
		if resp, err := probe.Get("http://" + in.httpAddr + "/readyz"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, time.Since(began), nil
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 90s\n%s", name, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit 60s after SIGTERM\n%s", p.out.String())
	}
	p.done <- nil // for the cleanup's wait, should it run
}

// password reads a user's password with the credentials command.
func (in *install) password(user string) string {
	in.t.Helper()
	out, err := exec.Command(filepath.Join(binDir, name), "credentials", "-data", in.dir, user).Output()
	if err != nil {
		in.t.Fatalf("credentials %s: %v", user, err)
	}
	return strings.TrimSpace(string(out))
}

// lbctl runs lbctl against the install's server as user.
func (in *install) lbctl(user string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "lbctl"), args...)
	cmd.Env = append(in.env, "NATS_URL=nats://"+in.natsAddr, "NATS_USER="+user, "NATS_PASSWORD="+in.password(user))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// host is the test acting as LangBot.
type host struct {
	t    *testing.T
	nc   *nats.Conn
	js   jetstream.JetStream
	inv  *bus.Invoker
	fake *bustest.Host
	gh   *fakegithub.Server
	cfg  map[string]json.RawMessage
	b    map[string]binding.Binding
	sess wire.Session
}

func connectHost(t *testing.T, in *install, gh *fakegithub.Server) *host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, err := bus.Connect(ctx, bus.ConnConfig{URL: "nats://" + in.natsAddr, Name: "test-host", User: "host", Password: in.password("host")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	h := &host{t: t, nc: nc, js: js, inv: bus.NewInvoker(nc, wire.Subjects{}, nil), fake: bustest.NewHost(t, nc, wire.Subjects{}), gh: gh,
		cfg: map[string]json.RawMessage{}, b: map[string]binding.Binding{},
		sess: wire.Session{LauncherType: wire.LauncherPerson, LauncherID: "u1", SenderID: "u1", BotUUID: "bot-1"}}
	h.cfg["githubkit"] = json.RawMessage(fmt.Sprintf(`{"language":"en_US","github_token":"tok-acceptance","github_api_url":%q,"poll_interval":60}`, gh.URL))
	h.cfg["takeover"] = json.RawMessage(`{"language":"en_US","takeover_timeout":3600}`)
	h.cfg["schenotify"] = json.RawMessage(`{"language":"en_US","timezone":"UTC"}`)
	for _, p := range []string{"githubkit", "takeover", "schenotify"} {
		h.b[p] = binding.Binding{InstanceUUID: "inst-1", WorkspaceUUID: "ws-1", InstallationUUID: "in-" + p,
			PlacementGeneration: 1, RuntimeRevision: 1, ArtifactDigest: "sha256:acceptance"}
	}
	return h
}

func (h *host) invoke(plugin string, ep wire.Endpoint, req *wire.Request) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req.Binding, req.Config = h.b[plugin], h.cfg[plugin]
	return h.inv.Invoke(ctx, plugin, ep, bus.NewInvocationID(), req)
}

func (h *host) attachAll() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for p, b := range h.b {
		if _, err := bus.PublishAttach(ctx, h.js, wire.Subjects{}, p, wire.Attach{Binding: b, Config: h.cfg[p], Enabled: true}, ""); err != nil {
			h.t.Fatal(err)
		}
	}
	// served once each lifecycle consumer applied its attach
	for p, req := range map[string]*wire.Request{
		"githubkit":  h.command("!gh help"),
		"schenotify": h.command("!sche"),
		"takeover":   {Page: &wire.Page{PageID: "console", Endpoint: "/info", Method: "GET", Body: json.RawMessage(`{}`)}},
	} {
		ep := wire.EndpointCommand
		if p == "takeover" {
			ep = wire.EndpointPage
		}
		bustest.EventuallyWithin(h.t, 30*time.Second, p+" serves its installation", func() bool { _, err := h.invoke(p, ep, req); return err == nil })
	}
}

func (h *host) command(text string) *wire.Request {
	f := strings.Fields(text)
	return &wire.Request{Command: &wire.Command{Name: strings.TrimPrefix(f[0], "!"), Params: f[1:], FullText: text, Prefix: "!",
		Session: h.sess, Privilege: 1, QueryUUID: wire.ID(bus.NewInvocationID())}}
}

// message sends a person chat message to takeover and returns whether it
// blocked the AI.
func (h *host) message(text string) (bool, error) {
	chain, _ := json.Marshal([]map[string]string{{"type": "Plain", "text": text}})
	data, _ := json.Marshal(map[string]any{"launcher_type": "person", "launcher_id": "u1", "sender_id": "u1", "message_chain": json.RawMessage(chain)})
	raw, err := h.invoke("takeover", wire.EndpointEvent, &wire.Request{Event: &wire.Event{Name: takeover.EventPersonMessage, BotUUID: "bot-1", Data: data}})
	if err != nil {
		return false, err
	}
	var r wire.EventReply
	return r.PreventDefault, json.Unmarshal(raw, &r)
}

// state is the work the tests leave pending across a restart.
type state struct {
	reminder string // text of a reminder not due yet
	due      time.Time
	repo     string
	eventID  int64
}

// prepare subscribes to a repository, sets a reminder due after `after`,
// and takes the chat u1 over.
func (h *host) prepare(tag string, after time.Duration) state {
	t := h.t
	t.Helper()
	st := state{reminder: "acceptance reminder " + tag, repo: "acme/" + tag, eventID: 7000}
	h.gh.SetPollInterval(st.repo, 1)
	h.gh.AddEvents(st.repo, fakegithub.Event("watch", st.eventID))
	raw, err := h.invoke("githubkit", wire.EndpointCommand, h.command("!gh sub "+st.repo))
	if err != nil || !strings.Contains(string(raw), st.repo) {
		t.Fatalf("!gh sub: %s %v", raw, err)
	}
	st.due = time.Now().Add(after).Truncate(time.Second)
	params, _ := json.Marshal(map[string]string{"message": st.reminder, "time_str": st.due.UTC().Format(time.RFC3339)})
	raw, err = h.invoke("schenotify", wire.EndpointTool, &wire.Request{Tool: &wire.Tool{Name: "schedule_notify", Parameters: params, Session: h.sess, QueryUUID: "q"}})
	if err != nil || !strings.Contains(string(raw), `"ok"`) {
		t.Fatalf("schedule_notify: %s %v", raw, err)
	}
	if _, err := h.message("hello"); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"sid": model.SID(model.SessionKey("bot-1", "person", "u1"))})
	if raw, err := h.invoke("takeover", wire.EndpointPage, &wire.Request{Page: &wire.Page{PageID: "console", Endpoint: "/takeover", Method: "POST", Body: body}}); err != nil {
		t.Fatalf("take over: %s %v", raw, err)
	}
	if blocked, err := h.message("are you a bot?"); err != nil || !blocked {
		t.Fatalf("the taken-over chat is not blocked before the restart: %v %v", blocked, err)
	}
	return st
}

// sends counts the host's send_message calls of plugin whose text holds want.
func (h *host) sends(plugin, want string) int {
	n := 0
	for _, c := range h.fake.Sends() {
		if c.Scope.Installation() == "in-"+plugin && strings.Contains(string(c.Request.Data), want) {
			n++
		}
	}
	return n
}

// verify checks, after a restart, that the pending work of st behaves:
// the takeover blocks, new GitHub activity is pushed by the subscription's
// next poll, the reminder arrives once.
func (h *host) verify(st state) {
	t := h.t
	t.Helper()
	var blocked bool
	bustest.EventuallyWithin(t, 30*time.Second, "takeover answers after the restart", func() bool {
		var err error
		blocked, err = h.message("still there?")
		return err == nil
	})
	if !blocked {
		t.Error("the taken-over chat is not blocked after the restart")
	}
	h.gh.AddEvents(st.repo, fakegithub.Event("release_full", st.eventID+1))
	polls := h.gh.Count(func(r fakegithub.Request) bool { return strings.Contains(r.Path, st.repo) })
	// the first poll is due a full interval (60 s, the floor) after the subscription
	bustest.EventuallyWithin(t, 120*time.Second, "the release pushed by a poll after the restart", func() bool { return h.sends("githubkit", st.repo) > 0 })
	if after := h.gh.Count(func(r fakegithub.Request) bool { return strings.Contains(r.Path, st.repo) }); after <= polls {
		t.Errorf("no poll of %s after the restart (%d requests before, %d after)", st.repo, polls, after)
	}
	bustest.EventuallyWithin(t, 60*time.Second, "the reminder delivered", func() bool { return h.sends("schenotify", st.reminder) > 0 })
	// everything else has settled by now (the poll came well after the due time)
	if n := h.sends("schenotify", st.reminder); n != 1 {
		t.Errorf("the reminder was delivered %d times, want once", n)
	}
	if n := h.sends("githubkit", st.repo); n != 1 {
		t.Errorf("the release was pushed %d times, want once", n)
	}
}

// discovery collects the names answering $SRV.PING.
func discovery(t *testing.T, nc *nats.Conn, want int) map[string]bool {
	t.Helper()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest("$SRV.PING", inbox, nil); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < want && time.Now().Before(deadline) {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			break
		}
		var ping struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(m.Data, &ping); err != nil {
			t.Errorf("malformed $SRV.PING reply %s", m.Data)
		}
		seen[ping.Name] = true
	}
	return seen
}

func TestBinaryServesAndRestartKeepsEverything(t *testing.T) {
	t.Parallel() // waits on timers, not the CPU
	gh := fakegithub.New(fakegithub.Options{AutoRepos: true})
	defer gh.Close()
	in := newInstall(t, gh)
	p, took := in.start()
	t.Logf("first start (empty data directory) ready in %v", took.Round(time.Millisecond))
	for _, f := range []string{credentialsFile, stateKeyFile, consoleKeyFile} {
		st, err := os.Stat(filepath.Join(in.dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", f, st.Mode(), err)
		}
	}
	if strings.Contains(p.out.String(), in.password("host")) {
		t.Error("a password is in the log")
	}

	t.Run("wrong credentials", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, cc := range []bus.ConnConfig{
			{User: "host", Password: "wrong-password"},
			{User: "admin", Password: in.password("host")},
			{}, // no user at all
		} {
			cc.URL = "nats://" + in.natsAddr
			if nc, err := bus.Connect(ctx, cc); err == nil {
				nc.Close()
				t.Errorf("user %q with a wrong password was let in", cc.User)
			} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(err.Error(), "Authorization") {
				t.Errorf("user %q: %v, want an authorization error", cc.User, err)
			}
		}
	})

	h := connectHost(t, in, gh)
	if seen := discovery(t, h.nc, 3); !seen["githubkit"] || !seen["takeover"] || !seen["schenotify"] {
		t.Errorf("$SRV.PING lists %v, want all three services", seen)
	}
	h.attachAll()
	raw, err := h.invoke("githubkit", wire.EndpointCommand, h.command("!gh repo "+fakegithub.DefaultRepo))
	if err != nil || !strings.Contains(string(raw), fakegithub.DefaultRepo) {
		t.Fatalf("!gh repo: %s %v", raw, err)
	}
	// the lbctl invoke path, as an operator would check an installation
	out, err := in.lbctl("host", "invoke", "command", "--plugin", "schenotify", "--scope", "inst-1.ws-1.in-schenotify",
		"--config", string(h.cfg["schenotify"]), "--text", "!sche")
	if err != nil || !strings.Contains(out, "returns") {
		t.Fatalf("lbctl invoke: %s %v", out, err)
	}

	st := h.prepare("restart", 25*time.Second)
	began := time.Now()
	p.stop(t)
	stopped := time.Since(began)
	p, took = in.start()
	t.Logf("restart: SIGTERM to exit %v, start to ready %v, SIGTERM to ready %v", stopped.Round(time.Millisecond),
		took.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	if time.Now().After(st.due) {
		t.Logf("the restart ended after the reminder's due time; it is checked as one due during the outage")
	}
	if seen := discovery(t, h.nc, 3); len(seen) != 3 {
		t.Errorf("$SRV.PING after the restart lists %v", seen)
	}
	h.verify(st)
	p.stop(t)
}

func TestBackupRestoreIntoFreshDataDirectory(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(fakegithub.Options{AutoRepos: true})
	defer gh.Close()
	in := newInstall(t, gh)
	p, _ := in.start()
	h := connectHost(t, in, gh)
	h.attachAll()
	st := h.prepare("backup", 40*time.Second)

	backup := filepath.Join(t.TempDir(), "backup")
	began := time.Now()
	out, err := in.lbctl("admin", "backup", "--dir", backup)
	if err != nil {
		t.Fatalf("lbctl backup: %s %v", out, err)
	}
	var size int64
	_ = filepath.Walk(backup, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			size += fi.Size()
		}
		return nil
	})
	t.Logf("backup of the running binary: %v, %d bytes on disk: %s", time.Since(began).Round(time.Millisecond), size, strings.TrimSpace(out))
	if out, err := in.lbctl("host", "backup", "--dir", filepath.Join(t.TempDir(), "refused")); err == nil {
		t.Errorf("the host user could snapshot streams: %s", out)
	}
	p.stop(t)

	// a fresh data directory with the old one's secrets: the sealed
	// configs need the state key, LangBot keeps its password
	fresh := *in
	fresh.dir = filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(fresh.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{credentialsFile, stateKeyFile, consoleKeyFile} {
		raw, err := os.ReadFile(filepath.Join(in.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fresh.dir, f), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := fresh.startNATSOnly()
	began = time.Now()
	if out, err := fresh.lbctl("admin", "restore", "--dir", backup); err != nil {
		t.Fatalf("lbctl restore: %s %v", out, err)
	} else {
		t.Logf("restore: %v: %s", time.Since(began).Round(time.Millisecond), strings.TrimSpace(out))
	}
	if out, err := fresh.lbctl("admin", "restore", "--dir", backup); err == nil || !strings.Contains(out, "nothing restored") {
		t.Errorf("a second restore over the restored streams: %s %v", out, err)
	}
	srv.stop(t)
	p, _ = fresh.start()
	if time.Now().After(st.due) {
		t.Logf("the restored binary started after the reminder's due time; it is checked as one due during the outage")
	}
	h.verify(st)
	p.stop(t)
}

// startNATSOnly runs the binary's server alone and waits for its port.
func (in *install) startNATSOnly() *proc {
	in.t.Helper()
	p, _ := in.start("-nats-only")
	return p
}
