package schenotify

import (
	"context"

	"github.com/langbot-nats/plugins/pkg/svcmain"
)

// Build creates the service from a svcmain environment: what the binary
// and lbctl dev both run.
func Build(_ context.Context, env *svcmain.Env) (svcmain.Service, error) {
	return New(Config{
		Prefix:    env.Subjects.Prefix,
		Replicas:  env.Options.Replicas,
		Workers:   env.Options.Workers,
		Retention: env.Options.Retention, // LANGBOT_RETENTION
	}, Deps{
		Conn:           env.Conn,
		Logger:         env.Logger,
		TracerProvider: env.TracerProvider,
		Registerer:     env.Registry,
	})
}
