package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/pkg/natsembed"
	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/pkg/telemetry"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Dev installation identity: one installation per plugin in one workspace.
const (
	devInstance  = "dev-instance"
	devWorkspace = "dev-workspace"
)

func devBinding(plugin string) binding.Binding {
	return binding.Binding{InstanceUUID: devInstance, WorkspaceUUID: devWorkspace, InstallationUUID: "dev-" + plugin,
		PlacementGeneration: 1, RuntimeRevision: 1, ArtifactDigest: "sha256:dev"}
}

// devStack is everything lbctl dev runs.
type devStack struct {
	io       stdio
	subj     wire.Subjects
	nc       *nats.Conn // the host's connection
	invoker  *bus.Invoker
	services []devService
	env      map[string]*svcmain.Env
	httpAddr string
	log      *slog.Logger

	mu      sync.Mutex
	session wire.Session
	admin   bool
	prefix  string
}

func runDev(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(io.err)
	listen := fs.String("listen", "127.0.0.1:4222", "address of the embedded NATS server")
	dataDir := fs.String("data", ".data/dev", "data directory: JetStream store and the state key")
	httpAddr := fs.String("http", "127.0.0.1:8080", "HTTP address: health, metrics, takeover console")
	noPrompt := fs.Bool("no-prompt", false, "run without the interactive prompt (until interrupted)")
	logLevel := fs.String("log-level", "warn", "services' log level")
	services := devServices()
	for _, s := range services {
		if s.DevFlags != nil {
			s.DevFlags(fs)
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, portText, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		return err
	}
	keyring, err := devKeyring(*dataDir)
	if err != nil {
		return err
	}
	acc, err := devAccounts(*dataDir)
	if err != nil {
		return err
	}
	natsembed.Tune() // for the life of the process: nothing to restore
	srv, err := natsembed.Start(natsembed.Config{Dir: filepath.Join(*dataDir, "jetstream"), Host: host, Port: port, ServerName: "lbctl-dev",
		ConfigFile: acc.conf, MaxPending: bus.MaxPendingFor(natsembed.DefaultMaxPayload)})
	_ = os.Remove(acc.conf)
	if err != nil {
		return err
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	url := srv.ClientURL()

	level, err := telemetry.ParseLevel(*logLevel)
	if err != nil {
		return err
	}
	log := telemetry.NewLogger(io.err, level, "lbctl-dev")
	subj := wire.Subjects{}
	nc, err := bus.Connect(ctx, bus.ConnConfig{URL: url, Name: "lbctl-dev-host", Logger: log})
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := bus.EnsureLifecycleStream(ctx, js, subj, 1); err != nil {
		return err
	}
	stopAuth, err := devTenants(ctx, nc, js, acc, log)
	if err != nil {
		return err
	}
	defer stopAuth()
	d := &devStack{io: io, subj: subj, nc: nc, invoker: bus.NewInvoker(nc, subj, nil), services: services,
		env: map[string]*svcmain.Env{}, httpAddr: *httpAddr, log: log, prefix: "!",
		session: wire.Session{LauncherType: wire.LauncherPerson, LauncherID: "dev-user", SenderID: "dev-user", BotUUID: "dev-bot"}}
	hostSub, err := startHost(nc, subj, io.out, nil, nil)
	if err != nil {
		return err
	}
	defer hostSub.Unsubscribe()

	// Services, each on its own connection as in production.
	reg := telemetry.NewRegistry()
	var ready []svcmain.Service
	mux := telemetry.Mux(reg, func() error {
		for _, s := range ready {
			if !s.Ready() {
				return telemetry.ErrNotReady
			}
		}
		return nil
	})
	runCtx, stopServices := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// The services stop before their connections drain: a connection
	// drained under a running service fails its subscriptions, which it
	// reports as an error on a normal shutdown.
	var conns []*nats.Conn
	defer func() {
		stopServices()
		wg.Wait()
		for _, c := range conns {
			_ = c.Drain()
		}
	}()
	for _, s := range services {
		// each service logs as itself: the one logger constructor sets the
		// service attribute, as a service binary's does
		svcLog := telemetry.NewLogger(io.err, level, s.Plugin)
		snc, err := bus.Connect(ctx, bus.ConnConfig{URL: url, Name: s.Plugin, Logger: svcLog})
		if err != nil {
			return err
		}
		conns = append(conns, snc)
		if s.Upgrade != nil {
			report, err := s.Upgrade(ctx, js, subj)
			if err != nil {
				return fmt.Errorf("%s: %w", s.Plugin, err)
			}
			if report != "" {
				fmt.Fprintf(io.out, "%s: %s", s.Plugin, report)
			}
		}
		env := &svcmain.Env{
			Options: svcmain.Options{HTTPAddr: *httpAddr, Replicas: 1, Prefix: subj.Prefix},
			Conn:    snc, Subjects: subj, Keyring: keyring, Logger: svcLog,
			Registry: reg, Mux: mux, Getenv: io.getenv,
		}
		svc, err := s.Build(ctx, env)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Plugin, err)
		}
		d.env[s.Plugin] = env
		ready = append(ready, svc)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := svc.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintf(io.err, "%s stopped: %v\n", s.Plugin, err)
			}
		}()
	}
	hs, err := httpserve.Listen(*httpAddr, mux, httpserve.Limits{})
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()

	attached := map[string]uint64{}
	for _, s := range services {
		cfg := s.Config
		if len(cfg) == 0 {
			cfg = json.RawMessage("{}")
		}
		seq, err := bus.PublishAttach(ctx, js, subj, s.Plugin, wire.Attach{Binding: devBinding(s.Plugin), Config: cfg, Enabled: true}, "")
		if err != nil {
			return err
		}
		attached[s.Plugin] = seq
	}
	if err := d.waitReady(ctx, ready); err != nil {
		return err
	}
	// a service refuses an installation until its attach is applied
	// (not_attached): the prompt opens once every attach is
	if err := waitAttached(ctx, js, attached); err != nil {
		return err
	}
	d.banner(url, hs.Addr(), *dataDir, acc)
	if *noPrompt {
		<-ctx.Done()
		return nil
	}
	return d.prompt(ctx, io.in)
}

// devAccountFiles is what devAccounts prepared: the server's config (read
// once at start, then removed) and the files of the data directory that
// hold the auth callout's issuer and the first tenant's secret.
type devAccountFiles struct {
	conf            string
	issuerSeed      string
	firstSecret     string
	firstSecretFile string
}

// devAccounts prepares the deployment's accounts for the dev server
// (natsembed.Accounts, with the auth callout), so that tenant credentials
// work in dev as deployed. Every user gets a new random password at each
// start; a client without credentials is let in as admin (no_auth_user),
// so the dev tools, the services in process and a LangBot with an empty
// form keep working without any. The issuer key and the first tenant's
// secret are kept in the data directory.
func devAccounts(dir string) (devAccountFiles, error) {
	f := devAccountFiles{conf: filepath.Join(dir, "nats.conf"), firstSecretFile: filepath.Join(dir, "tenant-first.secret")}
	var err error
	if f.issuerSeed, err = devSecretFile(filepath.Join(dir, "auth-issuer.seed"), bus.NewIssuerSeed); err != nil {
		return f, err
	}
	if f.firstSecret, err = devSecretFile(f.firstSecretFile, bus.NewTenantSecret); err != nil {
		return f, err
	}
	issuer, err := bus.IssuerPublicKey(f.issuerSeed)
	if err != nil {
		return f, err
	}
	var b strings.Builder
	b.WriteString("# written by lbctl dev at start and removed once read\n")
	fmt.Fprintf(&b, "AUTH_ISSUER: %q\nno_auth_user: admin\n", issuer)
	for _, u := range natsembed.AccountUsers(natsembed.Accounts) {
		pw, err := bus.NewTenantSecret() // any random token the config parser reads back
		if err != nil {
			return f, err
		}
		fmt.Fprintf(&b, "%s: %q\n", u.Var, "p"+pw)
	}
	b.WriteString(natsembed.Accounts)
	return f, os.WriteFile(f.conf, []byte(b.String()), 0o600)
}

// devSecretFile returns the secret kept in path, generating it with gen on
// first use.
func devSecretFile(path string, gen func() (string, error)) (string, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(raw)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	v, err := gen()
	if err != nil {
		return "", err
	}
	return v, os.WriteFile(path, []byte(v+"\n"), 0o600)
}

// devTenants creates the tenant bucket and the first tenant (claimable,
// into a new bucket) as lbctl setup does, and answers tenant logins as the
// services do; it returns what stops the responder.
func devTenants(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, acc devAccountFiles, log *slog.Logger) (func(), error) {
	kv, err := bus.EnsureTenantBucket(ctx, js, 1)
	if err != nil {
		return nil, err
	}
	if _, _, err := bus.IssueTenant(ctx, kv, bus.IssueRequest{Name: bus.FirstTenant, Claim: true, Secret: acc.firstSecret, IfBucketNew: true},
		time.Now()); err != nil && !errors.Is(err, bus.ErrTenantExists) {
		return nil, err
	}
	ac, err := bus.NewAuthCallout(bus.AuthCalloutConfig{Conn: nc, IssuerSeed: acc.issuerSeed, Account: bus.TenantAccount,
		Logger: log.With("part", "auth-callout")})
	if err != nil {
		return nil, err
	}
	if err := ac.Start(ctx); err != nil {
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ac.Stop(sctx)
	}, nil
}

// devKeyring loads the dev state key from the data directory, creating it
// on first use, so sealed values stay readable across restarts.
func devKeyring(dir string) (*bus.Keyring, error) {
	path := filepath.Join(dir, "state.key")
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key, kerr := bus.NewKeyString("dev1")
		if kerr != nil {
			return nil, kerr
		}
		if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
			return nil, err
		}
		raw = []byte(key)
	} else if err != nil {
		return nil, err
	}
	return bus.ParseKeyring(strings.TrimSpace(string(raw)))
}

// waitAttached waits until each plugin's lifecycle consumer has
// acknowledged the attach published at seq.
func waitAttached(ctx context.Context, js jetstream.JetStream, seqs map[string]uint64) error {
	deadline := time.Now().Add(30 * time.Second)
	for plugin, seq := range seqs {
		for {
			c, err := js.Consumer(ctx, wire.LifecycleStream, bus.LifecycleConsumer(plugin))
			if err == nil {
				if info, err := c.Info(ctx); err == nil && info.AckFloor.Stream >= seq {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not apply its attach within 30s", plugin)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

func (d *devStack) waitReady(ctx context.Context, svcs []svcmain.Service) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		all := true
		for _, s := range svcs {
			all = all && s.Ready()
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("services not ready after 30s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (d *devStack) banner(natsURL, httpAddr, dataDir string, acc devAccountFiles) {
	w := d.io.out
	fmt.Fprintf(w, "LangBot plugin dev stack\n  NATS     %s (JetStream in %s)\n  HTTP     http://%s (/healthz /readyz /metrics)\n", natsURL, dataDir, httpAddr)
	fmt.Fprintf(w, "  LangBot  plugin forms: nats_url %s, nats_user %s, nats_password the content of %s\n"+
		"           (the first LangBot that logs in owns it; empty user and password: admin, dev only)\n", natsURL, bus.FirstTenant, acc.firstSecretFile)
	if len(d.services) == 0 {
		fmt.Fprintln(w, "  services none registered yet")
	}
	for _, s := range d.services {
		words := ""
		if len(s.CommandWords) > 0 {
			words = " commands: !" + strings.Join(s.CommandWords, " !")
		}
		fmt.Fprintf(w, "  service  %-11s scope %s%s\n", s.Plugin, bus.ScopeOf(devBinding(s.Plugin)), words)
		if s.Banner != nil {
			for _, line := range s.Banner(&DevEnv{HTTPAddr: httpAddr, Scope: bus.ScopeOf(devBinding(s.Plugin)).String(), Getenv: d.io.getenv}) {
				fmt.Fprintf(w, "           %s\n", line)
			}
		}
	}
	fmt.Fprintln(w, "Type a chat message, or /help.")
}

const promptHelp = `Chat as a user: a line is a chat message; "!<word> ..." is a plugin command.
  /as person <id> | /as group <id>   chat in another session
  /sender <id>                       speak as another user
  /bot <uuid>                        use another bot
  /admin                             toggle admin privilege for commands
  /tool <plugin> <name> [json]       call a plugin's LLM tool
  /whoami                            show the current session
  /quit                              stop the stack`

func (d *devStack) prompt(ctx context.Context, in io.Reader) error {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		fmt.Fprint(d.io.out, d.promptText())
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				return nil
			}
			if quit := d.handleLine(ctx, strings.TrimSpace(line)); quit {
				return nil
			}
		}
	}
}

func (d *devStack) promptText() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Sprintf("%s:%s@%s> ", d.session.LauncherType, d.session.LauncherID, d.session.BotUUID)
}

// handleLine runs one prompt line; it reports whether to quit.
func (d *devStack) handleLine(ctx context.Context, line string) bool {
	if line == "" {
		return false
	}
	if strings.HasPrefix(line, "/") {
		return d.meta(ctx, line)
	}
	d.chat(ctx, line)
	return false
}

func (d *devStack) meta(ctx context.Context, line string) bool {
	f := strings.Fields(line)
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.io.out
	switch f[0] {
	case "/quit", "/exit":
		return true
	case "/help":
		fmt.Fprintln(out, promptHelp)
	case "/as":
		if len(f) != 3 || (f[1] != wire.LauncherPerson && f[1] != wire.LauncherGroup) {
			fmt.Fprintln(out, "usage: /as person|group <id>")
			break
		}
		d.session.LauncherType, d.session.LauncherID = f[1], wire.ID(f[2])
		if f[1] == wire.LauncherPerson {
			d.session.SenderID = wire.ID(f[2])
		}
	case "/sender":
		if len(f) == 2 {
			d.session.SenderID = wire.ID(f[1])
		}
	case "/bot":
		if len(f) == 2 {
			d.session.BotUUID = f[1]
		}
	case "/admin":
		d.admin = !d.admin
		fmt.Fprintf(out, "admin privilege: %v\n", d.admin)
	case "/whoami":
		fmt.Fprintf(out, "%s %s, sender %s, bot %s, admin %v\n", d.session.LauncherType, d.session.LauncherID, d.session.SenderID, d.session.BotUUID, d.admin)
	case "/tool":
		if len(f) < 3 {
			fmt.Fprintln(out, "usage: /tool <plugin> <name> [json]")
			break
		}
		params := json.RawMessage("{}")
		if rest := strings.TrimSpace(strings.Join(f[3:], " ")); rest != "" {
			if !json.Valid([]byte(rest)) {
				fmt.Fprintln(out, "parameters must be JSON")
				break
			}
			params = json.RawMessage(rest)
		}
		req := &wire.Request{Binding: devBinding(f[1]), Config: d.configOf(f[1]),
			Tool: &wire.Tool{Name: f[2], Parameters: params, Session: d.session, QueryUUID: wire.ID(bus.NewInvocationID())}}
		raw, err := d.invoker.Invoke(ctx, f[1], wire.EndpointTool, bus.NewInvocationID(), req)
		d.printReply(raw, err)
	default:
		fmt.Fprintln(out, "unknown; /help lists the prompt commands")
	}
	return false
}

func (d *devStack) configOf(plugin string) json.RawMessage {
	for _, s := range d.services {
		if s.Plugin == plugin && len(s.Config) > 0 {
			return s.Config
		}
	}
	return json.RawMessage("{}")
}

func (d *devStack) printReply(raw json.RawMessage, err error) {
	if err != nil {
		fmt.Fprintf(d.io.out, "error: %v\n", err)
		return
	}
	printJSON(d.io, raw)
}

// chat delivers one user message as LangBot would: message events first
// (a plugin may block the query), then a command, or else the simulated
// AI's answer, itself offered to the plugins before it is "sent".
func (d *devStack) chat(ctx context.Context, text string) {
	d.mu.Lock()
	sess, admin := d.session, d.admin
	d.mu.Unlock()
	chain := wire.Plain(text)
	eventName := "PersonMessageReceived"
	msgEvent := map[string]any{"type": "FriendMessage", "sender": map[string]any{"id": sess.SenderID, "nickname": string(sess.SenderID)}, "message_chain": chain, "time": time.Now().Unix()}
	if sess.LauncherType == wire.LauncherGroup {
		eventName = "GroupMessageReceived"
		msgEvent = map[string]any{"type": "GroupMessage", "sender": map[string]any{"id": sess.SenderID, "member_name": string(sess.SenderID), "permission": "MEMBER",
			"group": map[string]any{"id": sess.LauncherID, "name": "Dev group " + string(sess.LauncherID)}}, "message_chain": chain, "time": time.Now().Unix()}
	}
	data, _ := json.Marshal(map[string]any{"launcher_type": sess.LauncherType, "launcher_id": sess.LauncherID, "sender_id": sess.SenderID,
		"message_event": msgEvent, "message_chain": chain})
	if d.emit(ctx, eventName, sess.BotUUID, data) {
		fmt.Fprintln(d.io.out, "(a plugin took this message: no command, no AI reply)")
		return
	}
	if prefix, word, params, ok := parseCommandText(text); ok {
		d.command(ctx, prefix, word, params, text, sess, admin)
		return
	}
	answer := "(simulated AI) you said: " + text
	resp, _ := json.Marshal(map[string]any{"launcher_type": sess.LauncherType, "launcher_id": sess.LauncherID, "sender_id": sess.SenderID,
		"session": sess, "prefix": "", "response_text": answer, "finish_reason": "stop", "funcs_called": []string{}})
	if d.emit(ctx, "NormalMessageResponded", sess.BotUUID, resp) {
		fmt.Fprintln(d.io.out, "(the AI reply was blocked by a plugin)")
		return
	}
	fmt.Fprintf(d.io.out, "[AI] %s\n", answer)
}

// emit sends an event to every plugin that takes events; it reports
// whether one prevented the default.
func (d *devStack) emit(ctx context.Context, name, bot string, data json.RawMessage) bool {
	prevented := false
	for _, s := range d.services {
		if !s.Events {
			continue
		}
		req := &wire.Request{Binding: devBinding(s.Plugin), Config: d.configOf(s.Plugin),
			Event: &wire.Event{Name: name, BotUUID: bot, Data: data, QueryUUID: wire.ID(bus.NewInvocationID())}}
		raw, err := d.invoker.Invoke(ctx, s.Plugin, wire.EndpointEvent, bus.NewInvocationID(), req)
		if err != nil {
			fmt.Fprintf(d.io.out, "(%s event error: %v)\n", s.Plugin, err)
			continue
		}
		var r wire.EventReply
		if json.Unmarshal(raw, &r) == nil && r.PreventDefault {
			prevented = true
		}
	}
	return prevented
}

func (d *devStack) command(ctx context.Context, prefix, word string, params []string, text string, sess wire.Session, admin bool) {
	for _, s := range d.services {
		for _, w := range s.CommandWords {
			if !strings.EqualFold(w, word) {
				continue
			}
			priv := 1
			if admin {
				priv = 2
			}
			req := &wire.Request{Binding: devBinding(s.Plugin), Config: d.configOf(s.Plugin),
				Command: &wire.Command{Name: strings.ToLower(word), Params: params, FullText: text, Prefix: prefix, Session: sess, Privilege: priv, QueryUUID: wire.ID(bus.NewInvocationID())}}
			raw, err := d.invoker.Invoke(ctx, s.Plugin, wire.EndpointCommand, bus.NewInvocationID(), req)
			if err != nil {
				fmt.Fprintf(d.io.out, "error: %v\n", err)
				return
			}
			var r wire.CommandReply
			if err := json.Unmarshal(raw, &r); err != nil {
				fmt.Fprintf(d.io.out, "malformed reply: %v\n", err)
				return
			}
			for _, ret := range r.Returns {
				fmt.Fprintf(d.io.out, "[%s] %s\n", s.Plugin, ret.Text)
			}
			return
		}
	}
	fmt.Fprintf(d.io.out, "no plugin serves the command %q\n", word)
}
