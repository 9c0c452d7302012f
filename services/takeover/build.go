package takeover

import (
	"context"

	"github.com/langbot-nats/plugins/pkg/svcmain"
)

// Build creates the service from the shared binary environment; the
// takeover binary and lbctl dev both use it.
func Build(_ context.Context, env *svcmain.Env) (svcmain.Service, error) {
	s, err := New(Config{
		Prefix:   env.Subjects.Prefix,
		Replicas: env.Options.Replicas,
		Workers:  env.Options.Workers,
	}, Deps{
		Conn:           env.Conn,
		Keyring:        env.Keyring,
		Logger:         env.Logger,
		TracerProvider: env.TracerProvider,
		Registerer:     env.Registry,
	})
	if err != nil {
		return nil, err
	}
	if err := mountConsole(env, s); err != nil {
		return nil, err
	}
	return s, nil
}
