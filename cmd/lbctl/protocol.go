package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/telemetry"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// connFlags are the flags that say how to reach NATS.
type connFlags struct {
	url, user, creds, prefix string
	getenv                   func(string) string
}

func addConnFlags(fs *flag.FlagSet, io stdio) *connFlags {
	c := &connFlags{getenv: io.getenv}
	def := io.getenv("NATS_URL")
	if def == "" {
		def = nats.DefaultURL
	}
	prefix := io.getenv("LANGBOT_SUBJECT_PREFIX")
	if prefix == "" {
		prefix = wire.DefaultPrefix
	}
	fs.StringVar(&c.url, "nats", def, "NATS server URL (NATS_URL)")
	fs.StringVar(&c.user, "user", io.getenv("NATS_USER"), "NATS user; the password comes from NATS_PASSWORD")
	fs.StringVar(&c.creds, "creds", io.getenv("NATS_CREDS"), "NATS credentials file")
	fs.StringVar(&c.prefix, "prefix", prefix, "subject prefix")
	return c
}

// tracing returns a tracer provider exporting to the OTEL_* endpoint, if
// any, so lbctl's requests appear in traces as the host's spans; shutdown
// flushes it.
func (c *connFlags) tracing(ctx context.Context) (trace.TracerProvider, func(), error) {
	tp, err := telemetry.NewTracerProvider(ctx, "lbctl", c.getenv)
	if err != nil {
		return nil, nil, err
	}
	return tp, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}, nil
}

func (c *connFlags) connect(ctx context.Context) (*nats.Conn, wire.Subjects, error) {
	subj, err := wire.NewSubjects(c.prefix)
	if err != nil {
		return nil, subj, err
	}
	nc, err := bus.Connect(ctx, bus.ConnConfig{URL: c.url, Name: "lbctl", User: c.user, Password: c.getenv("NATS_PASSWORD"), CredsFile: c.creds})
	return nc, subj, err
}

// connectJS connects and opens JetStream; close the connection when done.
func (c *connFlags) connectJS(ctx context.Context) (*nats.Conn, wire.Subjects, jetstream.JetStream, error) {
	nc, subj, err := c.connect(ctx)
	if err != nil {
		return nil, subj, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, subj, nil, err
	}
	return nc, subj, js, nil
}

// bindingFlags are the flags that name an installation's binding.
type bindingFlags struct {
	scope, digest string
	gen, rev      int64
	config        string
}

func addBindingFlags(fs *flag.FlagSet) *bindingFlags {
	b := &bindingFlags{}
	fs.StringVar(&b.scope, "scope", "dev-instance.dev-workspace.dev-installation", "installation scope <instance>.<workspace>.<installation>")
	fs.Int64Var(&b.gen, "gen", 1, "placement_generation")
	fs.Int64Var(&b.rev, "rev", 1, "runtime_revision")
	fs.StringVar(&b.digest, "digest", "sha256:dev", "artifact_digest")
	fs.StringVar(&b.config, "config", "{}", "installation config: JSON, or @file")
	return b
}

func (b *bindingFlags) binding() (binding.Binding, error) {
	sc, err := binding.ParseScope(b.scope)
	if err != nil {
		return binding.Binding{}, err
	}
	bd := binding.Binding{InstanceUUID: sc.Instance(), WorkspaceUUID: sc.Workspace(), InstallationUUID: sc.Installation(),
		PlacementGeneration: b.gen, RuntimeRevision: b.rev, ArtifactDigest: b.digest}
	return bd, bd.Validate()
}

func (b *bindingFlags) configJSON() (json.RawMessage, error) {
	return jsonArg("config", b.config)
}

// jsonArg reads a JSON object given inline or as @file.
func jsonArg(name, v string) (json.RawMessage, error) {
	raw := []byte(v)
	if strings.HasPrefix(v, "@") {
		var err error
		if raw, err = os.ReadFile(v[1:]); err != nil {
			return nil, fmt.Errorf("--%s: %w", name, err)
		}
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("--%s is not valid JSON", name)
	}
	return json.RawMessage(bytes.TrimSpace(raw)), nil
}

// sessionFlags describe the chat an invocation comes from.
type sessionFlags struct {
	launcher, sender, bot string
}

func addSessionFlags(fs *flag.FlagSet) *sessionFlags {
	s := &sessionFlags{}
	fs.StringVar(&s.launcher, "session", "person:dev-user", "chat as <person|group>:<id>")
	fs.StringVar(&s.sender, "sender", "dev-user", "sender id")
	fs.StringVar(&s.bot, "bot", "dev-bot", "bot uuid")
	return s
}

func (s *sessionFlags) session() (wire.Session, error) {
	typ, id, ok := strings.Cut(s.launcher, ":")
	if !ok || (typ != wire.LauncherPerson && typ != wire.LauncherGroup) || id == "" {
		return wire.Session{}, errors.New("--session must be person:<id> or group:<id>")
	}
	return wire.Session{LauncherType: typ, LauncherID: wire.ID(id), SenderID: wire.ID(s.sender), BotUUID: s.bot}, nil
}

// parseCommandText splits "!sche add in 1m x" into prefix, name and params
// as a host does.
func parseCommandText(text string) (prefix, name string, params []string, ok bool) {
	text = strings.TrimSpace(text)
	for _, p := range []string{"!", "！", "/"} {
		if strings.HasPrefix(text, p) {
			fields := strings.Fields(text[len(p):])
			if len(fields) == 0 {
				return "", "", nil, false
			}
			return p, fields[0], fields[1:], true
		}
	}
	return "", "", nil, false
}

func runInvoke(ctx context.Context, args []string, io stdio) error {
	if len(args) == 0 {
		return errors.New("usage: lbctl invoke {command|event|tool|page} [flags]")
	}
	ep := wire.Endpoint(args[0])
	fs := flag.NewFlagSet("invoke "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	bf := addBindingFlags(fs)
	sf := addSessionFlags(fs)
	plugin := fs.String("plugin", "", "plugin name (githubkit, takeover, schenotify)")
	id := fs.String("id", "", "invocation id (default: random; reuse one to retry)")
	text := fs.String("text", "", "command: the whole message, e.g. '!sche add in 1m stretch'")
	privilege := fs.Int("privilege", 1, "command: 1 user, 2 admin")
	name := fs.String("name", "", "event, tool: name; page: endpoint")
	data := fs.String("data", "{}", "event: data; tool: parameters; page: body (JSON or @file)")
	method := fs.String("method", "GET", "page: method")
	pageID := fs.String("page-id", "console", "page: page id")
	timeout := fs.Duration("timeout", 30*time.Second, "reply timeout")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *plugin == "" {
		return errors.New("--plugin is required")
	}
	b, err := bf.binding()
	if err != nil {
		return err
	}
	cfg, err := bf.configJSON()
	if err != nil {
		return err
	}
	sess, err := sf.session()
	if err != nil {
		return err
	}
	payload, err := jsonArg("data", *data)
	if err != nil {
		return err
	}
	req := &wire.Request{Binding: b, Config: cfg}
	switch ep {
	case wire.EndpointCommand:
		prefix, word, params, ok := parseCommandText(*text)
		if !ok {
			return errors.New("--text must be a command such as '!sche'")
		}
		req.Command = &wire.Command{Name: word, Params: params, FullText: *text, Prefix: prefix, Session: sess, Privilege: *privilege, QueryUUID: wire.ID(bus.NewInvocationID())}
	case wire.EndpointEvent:
		req.Event = &wire.Event{Name: *name, BotUUID: sess.BotUUID, Data: payload, QueryUUID: wire.ID(bus.NewInvocationID())}
	case wire.EndpointTool:
		req.Tool = &wire.Tool{Name: *name, Parameters: payload, Session: sess, QueryUUID: wire.ID(bus.NewInvocationID())}
	case wire.EndpointPage:
		req.Page = &wire.Page{PageID: *pageID, Endpoint: *name, Method: *method, Body: payload}
	default:
		return fmt.Errorf("unknown endpoint %q", ep)
	}
	nc, subj, err := conn.connect(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	if *id == "" {
		*id = bus.NewInvocationID()
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	tp, shutdown, err := conn.tracing(ctx)
	if err != nil {
		return err
	}
	defer shutdown()
	out, err := bus.NewInvoker(nc, subj, tp).Invoke(ctx, *plugin, ep, *id, req)
	if len(out) > 0 {
		printJSON(io, out)
	}
	return err
}

func printJSON(io stdio, raw []byte) {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		buf.Reset()
		buf.Write(raw)
	}
	fmt.Fprintln(io.out, buf.String())
}

func runAttach(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("attach", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	bf := addBindingFlags(fs)
	plugin := fs.String("plugin", "", "plugin name")
	enabled := fs.Bool("enabled", true, "whether the installation is enabled")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := bf.binding()
	if err != nil {
		return err
	}
	cfg, err := bf.configJSON()
	if err != nil {
		return err
	}
	if *plugin == "" {
		return errors.New("--plugin is required")
	}
	nc, subj, js, err := conn.connectJS(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	seq, err := bus.PublishAttach(ctx, js, subj, *plugin, wire.Attach{Binding: b, Config: cfg, Enabled: *enabled}, "")
	if err != nil {
		return err
	}
	fmt.Fprintf(io.out, "attach published, stream sequence %d\n", seq)
	return nil
}

func runRevoke(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("revoke", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	bf := addBindingFlags(fs)
	plugin := fs.String("plugin", "", "plugin name")
	reason := fs.String("reason", wire.ReasonDisable, "uninstall, workspace_removed, disable, upgrade or config_change")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := bf.binding()
	if err != nil {
		return err
	}
	if *plugin == "" {
		return errors.New("--plugin is required")
	}
	switch *reason {
	case wire.ReasonUninstall, wire.ReasonWorkspaceRemoved, wire.ReasonDisable, wire.ReasonUpgrade, wire.ReasonConfigChange:
	default:
		return fmt.Errorf("unknown --reason %q", *reason)
	}
	nc, subj, js, err := conn.connectJS(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	seq, err := bus.PublishRevoke(ctx, js, subj, *plugin, wire.Revoke{Binding: b, Reason: *reason}, "")
	if err != nil {
		return err
	}
	fmt.Fprintf(io.out, "revoke published, stream sequence %d\n", seq)
	return nil
}

func runSetup(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	replicas := fs.Int("replicas", 1, "replicas of the lifecycle stream and the tenant bucket (3 in production)")
	firstFile := fs.String("first-tenant-secret-file", "", "issue the claimable tenant t-first with the secret in this file, into a tenant bucket that never held a record (the single-host set-ups)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var firstSecret string
	if *firstFile != "" {
		raw, err := os.ReadFile(*firstFile)
		if err != nil {
			return fmt.Errorf("--first-tenant-secret-file: %w", err)
		}
		firstSecret = strings.TrimSpace(string(raw))
	}
	nc, subj, js, err := conn.connectJS(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := bus.EnsureLifecycleStream(ctx, js, subj, *replicas); err != nil {
		return err
	}
	fmt.Fprintf(io.out, "stream %s ready (%d replicas)\n", wire.LifecycleStream, *replicas)
	kv, err := bus.EnsureTenantBucket(ctx, js, *replicas)
	if err != nil {
		return err
	}
	fmt.Fprintf(io.out, "bucket %s ready (%d replicas)\n", bus.TenantBucket, *replicas)
	if firstSecret == "" {
		return nil
	}
	_, _, err = bus.IssueTenant(ctx, kv, bus.IssueRequest{Name: bus.FirstTenant, Claim: true, Secret: firstSecret, IfBucketNew: true}, time.Now())
	switch {
	case errors.Is(err, bus.ErrTenantExists):
		fmt.Fprintf(io.out, "first tenant: the bucket already held tenants; none issued\n")
	case err != nil:
		return err
	default:
		fmt.Fprintf(io.out, "issued the first tenant %s: in every LangBot plugin form put nats_user %s and nats_password the content of %s; the first package that logs in binds it to its LangBot instance\n",
			bus.FirstTenant, bus.FirstTenant, *firstFile)
	}
	return nil
}

func runHost(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	if err := fs.Parse(args); err != nil {
		return err
	}
	nc, subj, err := conn.connect(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	tp, shutdown, err := conn.tracing(ctx)
	if err != nil {
		return err
	}
	defer shutdown()
	h, err := startHost(nc, subj, io.out, tp, nil)
	if err != nil {
		return err
	}
	defer h.Unsubscribe()
	fmt.Fprintf(io.out, "answering host actions on %s; Ctrl-C to stop\n", subj.HostAll())
	<-ctx.Done()
	return nil
}
