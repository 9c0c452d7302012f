package schenotify

import (
	"context"

	"github.com/langbot-nats/plugins/pkg/svcmain"
)

// Build creates the service from a svcmain environment: what the binary
// and lbctl dev both run.
func Build(_ context.Context, env *svcmain.Env) (svcmain.Service, error) {
	return New(Config{
		Replicas:  env.Options.Replicas,
		Workers:   env.Options.Workers,
		Retention: env.Options.Retention, // LANGBOT_RETENTION
	}, env.Deps())
}

// Binary describes the schenotify binary (no flags of its own).
func Binary() svcmain.Binary { return svcmain.Binary{Name: Plugin, Build: Build} }
