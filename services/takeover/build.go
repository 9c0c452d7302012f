package takeover

import (
	"context"
	"fmt"
	"strconv"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/svcmain"
)

// MetaWriteRateEnv names the variable that sets Config.MetaWriteRate.
const MetaWriteRateEnv = "LANGBOT_TAKEOVER_META_WRITE_RATE"

// Build creates the service from the shared binary environment; the
// takeover binary and lbctl dev both use it.
func Build(_ context.Context, env *svcmain.Env) (svcmain.Service, error) {
	cfg := Config{
		Replicas:  env.Options.Replicas,
		Workers:   env.Options.Workers,
		Retention: env.Options.Retention, // LANGBOT_RETENTION
	}
	if env.Getenv != nil {
		if v := env.Getenv(MetaWriteRateEnv); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%w: %s must be a positive number of writes per second", bus.ErrInvalidConfig, MetaWriteRateEnv)
			}
			cfg.MetaWriteRate = n
		}
	}
	s, err := New(cfg, env.Deps())
	if err != nil {
		return nil, err
	}
	if err := mountConsole(env, s.ops); err != nil {
		return nil, err
	}
	return s, nil
}

// Binary describes the takeover binary (no flags of its own).
func Binary() svcmain.Binary { return svcmain.Binary{Name: Plugin, Build: Build} }
