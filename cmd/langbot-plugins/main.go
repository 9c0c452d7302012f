// Command langbot-plugins runs the whole plugin side of a LangBot host in
// one process, for a machine without Docker or Kubernetes: the three
// services (githubkit, takeover, schenotify) and the NATS server they use,
// with JetStream in one data directory.
//
// The name says what an operator runs next to LangBot: the plugins, all of
// them. It is not a development tool (that is lbctl dev): there is no dev
// host and no dev key, authentication is always on, and every write is
// synced to disk before it is acknowledged.
//
// Usage:
//
//	langbot-plugins [flags]                       run until SIGINT or SIGTERM
//	langbot-plugins credentials [-data DIR] [USER]  print NATS passwords
//
// The services take the flags and environment of their own binaries
// (pkg/svcmain: LANGBOT_SUBJECT_PREFIX, LANGBOT_HTTP_ADDR,
// LANGBOT_JS_REPLICAS, LANGBOT_STATE_KEY, LANGBOT_WORKERS, LANGBOT_LOG_LEVEL,
// LANGBOT_RETENTION, OTEL_*, secrets as NAME_FILE, -healthcheck; githubkit's
// -github-* and -poll-workers; takeover's LANGBOT_CONSOLE_KEY and
// LANGBOT_TAKEOVER_META_WRITE_RATE), except the NATS client settings: the
// services connect to the embedded server in process.
// This binary adds:
//
//	-data              data directory (LANGBOT_DATA_DIR, default "data")
//	-nats-listen       client address of the server (LANGBOT_NATS_LISTEN, default 127.0.0.1:4222)
//	-nats-server-cert  TLS certificate of the listener (LANGBOT_NATS_SERVER_CERT)
//	-nats-server-key   its key (LANGBOT_NATS_SERVER_KEY)
//	-nats-client-ca    require client certificates signed by this CA (LANGBOT_NATS_CLIENT_CA)
//	-nats-log          the server's own log on stderr (LANGBOT_NATS_LOG=true)
//	-nats-only         the server alone (no setup, no services), for lbctl restore
//
// The data directory holds jetstream/ (the store), credentials.json (one
// password per user of the deployment's NATS accounts, generated on first
// start), state.key and console.key (generated on first start unless
// LANGBOT_STATE_KEY or LANGBOT_CONSOLE_KEY is set). Secrets are written
// with mode 0600 and printed only by the credentials command. A password
// set in the environment (HOST_PASSWORD, ADMIN_PASSWORD, ...: the names
// accounts.conf uses) wins over the stored one.
//
// It may import the services, pkg/svcmain, pkg/bus, pkg/wire, pkg/natsembed,
// nats-server and the NATS client: it is the one production binary that
// links a NATS server.
package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/langbot-nats/plugins/pkg/natsembed"
	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

const name = "langbot-plugins"

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "credentials" {
		if err := runCredentials(args[1:], getenv, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "%s credentials: %v\n", name, err)
			return 1
		}
		return 0
	}
	natsembed.Tune() // for the life of the process: nothing to restore
	parts := []svcmain.Binary{githubkit.Binary(), takeover.Binary(), schenotify.Binary()}
	e := &embedded{getenv: getenv}
	return svcmain.MainParts(name, args, getenv, stderr, parts, &svcmain.Embedding{AddFlags: e.register, Start: e.start})
}

// runCredentials prints the NATS passwords of the data directory: every
// user as "user password" lines, or one user's password alone.
func runCredentials(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("credentials", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("data", envOr(getenv, "LANGBOT_DATA_DIR", "data"), "data directory (LANGBOT_DATA_DIR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	users, err := accountUsers()
	if err != nil {
		return err
	}
	creds, err := loadCredentials(*dir, users, getenv)
	if err != nil {
		return err
	}
	if fs.NArg() == 1 {
		if pw, ok := creds[fs.Arg(0)]; ok {
			fmt.Fprintln(stdout, pw)
			return nil
		}
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("usage: %s credentials [-data DIR] [USER]", name)
	}
	tenants, err := storedTenants(*dir)
	if err != nil {
		return err
	}
	if fs.NArg() == 1 {
		if pw, ok := tenants[fs.Arg(0)]; ok {
			fmt.Fprintln(stdout, pw)
			return nil
		}
	}
	if fs.NArg() == 1 {
		return fmt.Errorf("no user %q (users: %v)", fs.Arg(0), userNames(users))
	}
	for _, u := range users {
		fmt.Fprintf(stdout, "%s %s\n", u.Name, creds[u.Name])
	}
	for _, n := range slices.Sorted(maps.Keys(tenants)) {
		fmt.Fprintf(stdout, "%s %s\n", n, tenants[n])
	}
	return nil
}

func envOr(getenv func(string) string, k, def string) string {
	if v := getenv(k); v != "" {
		return v
	}
	return def
}
