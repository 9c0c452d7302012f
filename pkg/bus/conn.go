package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/nats-io/nats.go"
)

// ConnConfig says how to reach NATS. Zero fields take defaults.
type ConnConfig struct {
	URL       string // default nats://127.0.0.1:4222; comma-separated for a cluster
	Name      string // client name shown by the server
	User      string
	Password  string
	CredsFile string // a NATS creds file (JWT + nkey), instead of user/password
	TLSCA     string // CA bundle to verify the server
	TLSCert   string // client certificate (mutual TLS)
	TLSKey    string
	// InboxPrefix is the prefix of this client's reply subjects. Empty
	// means wire.InboxPrefixFor(User): "_INBOX_<User>" when a user is set
	// (so the deployment can let each user subscribe only to its own
	// replies, DESIGN 7) and NATS's "_INBOX" otherwise.
	InboxPrefix string
	// MaxReconnectWait caps the reconnect backoff; default 5 s.
	MaxReconnectWait time.Duration
	// InProcess, when set, connects to a server in this process without a
	// socket (URL and the TLS settings are then unused): a binary that
	// embeds the server connects its services this way, so that a TLS
	// listener for outside clients does not also have to serve them.
	// Authentication is unchanged.
	InProcess nats.InProcessConnProvider
	Logger    *slog.Logger
}

// ErrConnect wraps a failure to connect.
var ErrConnect = errors.New("bus: cannot connect to NATS")

// Connect dials NATS with reconnects forever (jittered backoff), so a
// service rides out a server restart; it fails only if the first connect
// fails. Close it with Drain, which flushes replies and unsubscribes.
func Connect(ctx context.Context, cfg ConnConfig) (*nats.Conn, error) {
	if cfg.URL == "" {
		cfg.URL = nats.DefaultURL
	}
	if cfg.MaxReconnectWait <= 0 {
		cfg.MaxReconnectWait = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.CustomReconnectDelay(func(attempts int) time.Duration {
			d := time.Duration(attempts) * 250 * time.Millisecond
			return min(d, cfg.MaxReconnectWait)
		}),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("nats reconnected", "server", nc.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("nats async error", "subscription", subject, "err", err)
		}),
	}
	if cfg.User != "" {
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password))
	}
	p := cfg.InboxPrefix
	if p == "" {
		p = wire.InboxPrefixFor(cfg.User)
	}
	if p != nats.InboxPrefix[:len(nats.InboxPrefix)-1] {
		opts = append(opts, nats.CustomInboxPrefix(p))
	}
	if cfg.InProcess != nil {
		opts = append(opts, nats.InProcessServer(cfg.InProcess))
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	type result struct {
		nc  *nats.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(cfg.URL, opts...)
		ch <- result{nc, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConnect, r.err)
		}
		return r.nc, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, fmt.Errorf("%w: %w", ErrConnect, ctx.Err())
	}
}
