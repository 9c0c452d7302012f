// Package natsembed starts a NATS server with JetStream inside the calling
// process, for lbctl dev, the single binary cmd/langbot-plugins and the
// test kits (pkg/bus/bustest): file store, fsync on every write, optional
// cluster routes and a config file for accounts. It also tunes the runtime of a process that embeds a server.
//
// It is apart from pkg/bus so that the service binaries, which only ever
// connect to a server, do not link one. It may import the standard library
// and nats-server, nothing of this module: a service must not import it.
package natsembed

import (
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Accounts is deploy/k8s/base/nats/accounts.conf, the deployment's NATS
// accounts, users and auth callout, for the processes that embed a server
// with them (cmd/langbot-plugins, lbctl dev). It is a copy, since embed
// cannot reach another module's directory. Both files are generated from
// the services' declarations (cmd/builtin/accountsgen): go generate
// writes them, and cmd/builtin's TestAccountsFileGenerated fails while
// either differs from the generator's output.
//
//go:generate go run ../../cmd/builtin/accountsgen ../../deploy/k8s/base/nats/accounts.conf accounts.conf
//go:embed accounts.conf
var Accounts string

// AccountUser is one user of an accounts file and the variable its
// password is read from.
type AccountUser struct {
	Name, Var string
}

var accountUserRE = regexp.MustCompile(`(?m)^\s*user:\s*([A-Za-z0-9_-]+)\s*\n\s*password:\s*\$([A-Z0-9_]+)\s*$`)

// AccountUsers lists the users of an accounts file (such as Accounts)
// whose password is a variable, in file order.
func AccountUsers(conf string) []AccountUser {
	var out []AccountUser
	for _, m := range accountUserRE.FindAllStringSubmatch(conf, -1) {
		out = append(out, AccountUser{Name: m[1], Var: m[2]})
	}
	return out
}

// Config configures an in-process NATS server for development and
// tests: JetStream on, file store in Dir, fsync on every write.
type Config struct {
	Dir        string // JetStream store directory (required)
	Host       string // default 127.0.0.1
	Port       int    // 0: 4222; -1: a random free port
	ServerName string // default "langbot-dev"
	// MaxPayload raises the server's message size limit; default
	// DefaultMaxPayload, so that takeover attachments fit in one message.
	MaxPayload int32
	// MaxPending is the bytes the server queues for one connection before
	// it closes it as a slow consumer; 0 keeps the server's (64 MiB) or
	// the config file's. Callers set bus.MaxPendingFor(max_payload), the
	// deployment's relation (docs/operations.md).
	MaxPending int64
	// Cluster, when set, joins a JetStream cluster.
	Cluster *Cluster
	// Logging sends the server's log to stderr.
	Logging bool
	// ConfigFile, when set, is loaded first (accounts and users); the
	// fields above then override it.
	ConfigFile string
}

// DefaultMaxPayload is the message size limit of a server whose Config
// sets none.
const DefaultMaxPayload = 16 << 20

// Cluster is the cluster part of Config.
type Cluster struct {
	Name   string
	Host   string
	Port   int      // -1 for random
	Routes []string // nats-route://host:port of the other nodes
}

// Procs is the GOMAXPROCS for a process that embeds a server,
// given the one it would run with otherwise: twice that, at least 4. With
// sync_interval always, every stored message blocks a thread in fsync, and
// a thread in a system call holds its P until the runtime hands the P on.
// With one P per core, the syncs of the server's streams kept runnable
// goroutines (the services' handlers, the server's own client loops)
// waiting, and the takeover benchmark's reply p99 at 3,000 events/s on 2
// cores was about twice what it is with 4 Ps (docs/benchmarks.md). A
// server in a process of its own is not affected: its clients do not sync.
func Procs(procs int) int { return max(2*procs, 4) }

// GCPercent is the GOGC for a process that embeds a server. The
// server's allocations (most of the process's) and its block caches (a
// live heap of about 200 MB in the takeover benchmark) share one collector
// with the services, and on 2 cores each cycle took 18-37 ms with up to
// 39 ms of mark assists: the slowest appends came in bursts that began
// where a cycle ended. At 400 a 30 s phase at 3,000 events/s had 2 cycles
// instead of 13, for a heap goal five times what is live
// (docs/benchmarks.md).
const GCPercent = 400

// Tune sets up the runtime of a process that embeds a server:
// GOMAXPROCS to Procs of the runtime's default, and the
// collector's percent to GCPercent, each unless the environment
// sets it (GOMAXPROCS, GOGC), since an operator's setting wins. It returns
// a function that restores both.
func Tune() (restore func()) {
	procs, gc := runtime.GOMAXPROCS(0), -2 // -2: the percent was left alone
	if os.Getenv("GOMAXPROCS") == "" {
		// from the default, not the current setting, so that a second call
		// does not raise it again
		runtime.SetDefaultGOMAXPROCS()
		runtime.GOMAXPROCS(Procs(runtime.GOMAXPROCS(0)))
	}
	if os.Getenv("GOGC") == "" {
		gc = debug.SetGCPercent(GCPercent)
	}
	return func() {
		runtime.GOMAXPROCS(procs)
		if gc != -2 {
			debug.SetGCPercent(gc)
		}
	}
}

// ErrStart wraps a failure to start the embedded server.
var ErrStart = errors.New("natsembed: start")

// Start starts a server and waits until it accepts clients.
func Start(cfg Config) (*server.Server, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%w: no store directory", ErrStart)
	}
	opts := &server.Options{}
	if cfg.ConfigFile != "" {
		o, err := server.ProcessConfigFile(cfg.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStart, err)
		}
		opts = o
	}
	opts.Host = cfg.Host
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	opts.Port = cfg.Port
	if opts.Port == 0 {
		opts.Port = 4222
	}
	opts.ServerName = cfg.ServerName
	if opts.ServerName == "" {
		opts.ServerName = "langbot-dev"
	}
	opts.JetStream = true
	opts.StoreDir = cfg.Dir
	opts.SyncAlways = true // DESIGN 4: an acknowledged write survives a crash
	opts.MaxPayload = cfg.MaxPayload
	if opts.MaxPayload == 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	if cfg.MaxPending != 0 {
		opts.MaxPending = cfg.MaxPending
	}
	opts.NoSigs = true
	if c := cfg.Cluster; c != nil {
		opts.Cluster.Name = c.Name
		opts.Cluster.Host = c.Host
		if opts.Cluster.Host == "" {
			opts.Cluster.Host = "127.0.0.1"
		}
		opts.Cluster.Port = c.Port
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("%w: route %q: %w", ErrStart, r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	if cfg.Logging {
		s.ConfigureLogger()
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("%w: not ready after 10s", ErrStart)
	}
	return s, nil
}
