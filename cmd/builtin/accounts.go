package builtin

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// errOffline is what the connection of Grants gets for every dial.
var errOffline = errors.New("builtin: offline: the services are built, never run")

type offlineDialer struct{}

func (offlineDialer) Dial(string, string) (net.Conn, error) { return nil, errOffline }

// Grants returns the NATS permissions of each service's user under
// subjects s, in Names order: what its runner declares (bus.Runner.Grants) and what the auth
// callout every service process runs needs (bus.AuthCalloutGrants). It
// builds the three services with their default configuration on a
// connection that never dials (New does no I/O), so the grants come from
// the very declarations the services run with.
func Grants(s wire.Subjects) ([]bus.UserGrants, error) {
	nc, err := nats.Connect("nats://offline.invalid:4222", nats.SetCustomDialer(offlineDialer{}),
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(0), nats.ReconnectWait(time.Hour))
	if err != nil {
		return nil, fmt.Errorf("builtin: offline connection: %w", err)
	}
	defer nc.Close()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	// githubkit seals its token: New wants a keyring, never used here
	keyring, err := bus.ParseKeyring("offline=" + base64.StdEncoding.EncodeToString(key))
	if err != nil {
		return nil, err
	}
	deps := bus.Deps{Conn: nc, Keyring: keyring, Subjects: s}
	type granter interface{ Grants() bus.UserGrants }
	var out []bus.UserGrants
	for _, n := range Names() {
		var svc granter
		switch n {
		case githubkit.Plugin:
			svc, err = githubkit.New(githubkit.Config{}, deps)
		case takeover.Plugin:
			svc, err = takeover.New(takeover.Config{}, deps)
		case schenotify.Plugin:
			svc, err = schenotify.New(schenotify.Config{}, deps)
		default:
			err = fmt.Errorf("no service %q", n)
		}
		if err != nil {
			return nil, fmt.Errorf("builtin: grants of %s: %w", n, err)
		}
		out = append(out, svc.Grants().With(bus.AuthCalloutGrants()))
	}
	return out, nil
}

// Accounts renders the deployment's NATS accounts file
// (deploy/k8s/base/nats/accounts.conf, for the default subject prefix)
// from the services' Grants under subjects s.
func Accounts(s wire.Subjects) ([]byte, error) {
	g, err := Grants(s)
	if err != nil {
		return nil, err
	}
	return bus.RenderAccounts(s, g)
}
