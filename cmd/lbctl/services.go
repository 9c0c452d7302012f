package main

import (
	"context"
	"encoding/json"
	"flag"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// devService is a plugin service lbctl knows: how lbctl dev runs it in
// process, how the dev prompt routes to it, and the subcommands it adds.
// Each service's svc_<name>.go returns one (nil while the service does not
// exist yet).
type devService struct {
	// Plugin is the plugin name.
	Plugin string
	// Build creates the service on env, as its binary's main does.
	Build func(ctx context.Context, env *svcmain.Env) (svcmain.Service, error)
	// Config is the installation config lbctl dev attaches with; flags of
	// lbctl dev may change it (see DevFlags).
	Config json.RawMessage
	// SecretFields of Config, sealed at rest: lbctl prints none of them.
	SecretFields []string
	// CommandWords are the chat command words routed to this plugin
	// ("gh", "sche", ...).
	CommandWords []string
	// Events reports whether chat messages are sent to the plugin as
	// events (takeover).
	Events bool
	// DevFlags adds flags of lbctl dev that the service reads in Build
	// (githubkit: --fake-github).
	DevFlags func(fs *flag.FlagSet)
	// Banner returns lines printed when lbctl dev is up (a console URL).
	Banner func(env *DevEnv) []string
	// Upgrade, when set, moves data stored in an earlier version's layout
	// before lbctl dev starts the service (where no other replica can be
	// running) and returns a report, empty when there was nothing to move.
	// In production the operator runs the same move as an lbctl command.
	Upgrade func(ctx context.Context, js jetstream.JetStream, subj wire.Subjects) (string, error)
	// Commands are lbctl subcommands the service adds.
	Commands []command
}

// DevEnv is what lbctl dev knows that a service's Banner may use.
type DevEnv struct {
	HTTPAddr string
	Scope    string // the dev installation's scope of this plugin
	Getenv   func(string) string
}

func devServices() []devService {
	var out []devService
	for _, f := range []func() *devService{githubkitService, takeoverService, schenotifyService} {
		if s := f(); s != nil {
			out = append(out, *s)
		}
	}
	return out
}
