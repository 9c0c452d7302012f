package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/natsembed"
	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// adminUser is the user of accounts.conf that sets the deployment up.
const adminUser = "admin"

// embedded is the server side of the binary: its flags and the
// svcmain.Embedding that starts the server before the services and stops
// it after them.
type embedded struct {
	getenv func(string) string

	dir, listen         string
	cert, key, clientCA string
	logging             bool
	natsOnly            bool
	legacyPkgUser       bool
}

func (e *embedded) register(fs *flag.FlagSet) {
	fs.StringVar(&e.dir, "data", envOr(e.getenv, "LANGBOT_DATA_DIR", "data"), "data directory: JetStream store, credentials, keys (LANGBOT_DATA_DIR)")
	fs.StringVar(&e.listen, "nats-listen", envOr(e.getenv, "LANGBOT_NATS_LISTEN", "127.0.0.1:4222"), "client address of the NATS server, for LangBot and lbctl (LANGBOT_NATS_LISTEN)")
	fs.StringVar(&e.cert, "nats-server-cert", e.getenv("LANGBOT_NATS_SERVER_CERT"), "TLS certificate of the NATS listener (LANGBOT_NATS_SERVER_CERT)")
	fs.StringVar(&e.key, "nats-server-key", e.getenv("LANGBOT_NATS_SERVER_KEY"), "TLS key of the NATS listener (LANGBOT_NATS_SERVER_KEY)")
	fs.StringVar(&e.clientCA, "nats-client-ca", e.getenv("LANGBOT_NATS_CLIENT_CA"), "require NATS client certificates signed by this CA (LANGBOT_NATS_CLIENT_CA)")
	b, _ := strconv.ParseBool(e.getenv("LANGBOT_NATS_LOG"))
	fs.BoolVar(&e.logging, "nats-log", b, "the NATS server's own log on stderr (LANGBOT_NATS_LOG)")
	fs.BoolVar(&e.natsOnly, "nats-only", false, "run the NATS server alone, without setup and services: for lbctl restore into a fresh data directory")
	legacy := true
	if v, err := strconv.ParseBool(e.getenv("LANGBOT_LEGACY_PKG_USER")); err == nil {
		legacy = v
	}
	fs.BoolVar(&e.legacyPkgUser, "legacy-pkg-user", legacy, "keep the shared legacy NATS user langbot_pkg that every LangBot package used before tenant credentials; false once every plugin form has a tenant credential (LANGBOT_LEGACY_PKG_USER)")
}

// errConfig is returned for settings the single binary cannot honour.
var errConfig = errors.New("langbot-plugins: invalid configuration")

func (e *embedded) start(ctx context.Context, o *svcmain.Options, getenv func(string) string, log *slog.Logger) (*svcmain.Started, error) {
	if o.Replicas != 1 {
		return nil, fmt.Errorf("%w: one server keeps one replica (LANGBOT_JS_REPLICAS=%d)", errConfig, o.Replicas)
	}
	if o.Prefix != wire.DefaultPrefix {
		return nil, fmt.Errorf("%w: the deployment's accounts allow the subject prefix %q only", errConfig, wire.DefaultPrefix)
	}
	if (e.cert == "") != (e.key == "") {
		return nil, fmt.Errorf("%w: -nats-server-cert and -nats-server-key go together", errConfig)
	}
	if e.clientCA != "" && e.cert == "" {
		return nil, fmt.Errorf("%w: -nats-client-ca needs -nats-server-cert", errConfig)
	}
	host, portText, err := net.SplitHostPort(e.listen)
	if err != nil {
		return nil, fmt.Errorf("%w: -nats-listen: %w", errConfig, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("%w: -nats-listen: bad port %q", errConfig, portText)
	}
	if port == 0 {
		port = -1 // a free port; natsembed reads 0 as 4222
	}
	conf := accountsConf
	if !e.legacyPkgUser {
		if conf, err = withoutLegacyUser(conf); err != nil {
			return nil, err
		}
	}
	users, err := usersOf(conf)
	if err != nil {
		return nil, err
	}
	creds, err := loadCredentials(e.dir, users, getenv)
	if err != nil {
		return nil, err
	}
	for _, need := range []string{adminUser, githubkit.Plugin, takeover.Plugin, schenotify.Plugin} {
		if _, ok := creds[need]; !ok {
			return nil, fmt.Errorf("%w: the accounts have no user %s", errConfig, need)
		}
	}
	if o.StateKey == "" {
		if o.StateKey, err = loadKey(e.dir, stateKeyFile, newStateKey); err != nil {
			return nil, err
		}
	}
	if o.AuthIssuerSeed == "" {
		if o.AuthIssuerSeed, err = loadKey(e.dir, authIssuerFile, bus.NewIssuerSeed); err != nil {
			return nil, err
		}
	}
	issuer, err := bus.IssuerPublicKey(o.AuthIssuerSeed)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errConfig, svcmain.AuthIssuerSeedEnv, err)
	}
	consoleKey := getenv(takeover.ConsoleKeyEnv)
	if consoleKey == "" {
		if consoleKey, err = loadKey(e.dir, consoleKeyFile, newConsoleKey); err != nil {
			return nil, err
		}
	}

	srv, err := e.startServer(conf, users, creds, issuer, host, port)
	if err != nil {
		return nil, err
	}
	stop := func() { srv.Shutdown(); srv.WaitForShutdown() }
	if e.natsOnly {
		log.Info("nats only: no setup, no services", "listen", srv.ClientURL(), "store", filepath.Join(e.dir, storeDir))
		return &svcmain.Started{Stop: stop, NoServices: true}, nil
	}
	if err := setup(ctx, srv, creds[adminUser], e.dir, log); err != nil {
		stop()
		return nil, err
	}
	log.Info("nats ready", "listen", srv.ClientURL(), "store", filepath.Join(e.dir, storeDir), "tls", e.cert != "")
	if e.legacyPkgUser {
		log.Warn("the shared legacy NATS user langbot_pkg is on: whoever holds its password can act as the host of every installation; once every LangBot plugin form has a tenant credential, start with -legacy-pkg-user=false (docs/operations.md, Tenant credentials)")
	}
	conns := map[string]bus.ConnConfig{}
	for _, p := range []string{githubkit.Plugin, takeover.Plugin, schenotify.Plugin} {
		conns[p] = bus.ConnConfig{InProcess: srv, User: p, Password: creds[p]}
	}
	svcGetenv := func(k string) string {
		if k == takeover.ConsoleKeyEnv {
			return consoleKey
		}
		return getenv(k)
	}
	return &svcmain.Started{Conns: conns, Getenv: svcGetenv, Stop: stop}, nil
}

// startServer writes the server's config (the embedded accounts with the
// passwords as variables, and the TLS block) to a file of the data
// directory only for as long as the server reads it.
func (e *embedded) startServer(conf string, users []accountUser, creds map[string]string, issuer, host string, port int) (*server.Server, error) {
	var b strings.Builder
	b.WriteString("# written by langbot-plugins at start and removed once read\n")
	fmt.Fprintf(&b, "AUTH_ISSUER: %q\n", issuer)
	for _, u := range users {
		fmt.Fprintf(&b, "%s: %q\n", u.Var, creds[u.Name])
	}
	if e.cert != "" {
		fmt.Fprintf(&b, "tls {\n  cert_file: %q\n  key_file: %q\n", e.cert, e.key)
		if e.clientCA != "" {
			fmt.Fprintf(&b, "  ca_file: %q\n  verify: true\n", e.clientCA)
		}
		b.WriteString("}\n")
	}
	b.WriteString(conf)
	path := filepath.Join(e.dir, "nats.conf")
	if err := writeSecret(path, []byte(b.String())); err != nil {
		return nil, err
	}
	defer os.Remove(path)
	return natsembed.Start(natsembed.Config{Dir: filepath.Join(e.dir, storeDir), Host: host, Port: port,
		ServerName: name, ConfigFile: path, Logging: e.logging, MaxPending: bus.MaxPendingFor(natsembed.DefaultMaxPayload)})
}

// setup creates what the deployment creates before the services start
// (lbctl setup): the lifecycle stream and the tenant bucket, and into a
// new tenant bucket the first tenant credential (claimable: the first
// LangBot package that logs in with it binds it to its instance).
func setup(ctx context.Context, srv *server.Server, password, dir string, log *slog.Logger) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nc, err := bus.Connect(cctx, bus.ConnConfig{InProcess: srv, Name: name + "-setup", User: adminUser, Password: password, Logger: log})
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := bus.EnsureLifecycleStream(cctx, js, wire.Subjects{}, 1); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	kv, err := bus.EnsureTenantBucket(cctx, js, 1)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	secret, err := tenantSecret(dir, bus.FirstTenant)
	if err != nil {
		return err
	}
	_, _, err = bus.IssueTenant(cctx, kv, bus.IssueRequest{Name: bus.FirstTenant, Claim: true, Secret: secret, IfBucketNew: true}, time.Now())
	switch {
	case errors.Is(err, bus.ErrTenantExists):
	case err != nil:
		return fmt.Errorf("setup: first tenant: %w", err)
	default:
		log.Info("first tenant credential issued: in every LangBot plugin form put nats_user " + bus.FirstTenant +
			" and nats_password from \"" + name + " credentials " + bus.FirstTenant + "\"; the first package that logs in binds it to its LangBot instance")
	}
	return nil
}
