package schenotify

import (
	"context"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// SetBeforeClaim installs a hook run by the due handler after it fetched
// a record and before it claims it (spec 10, N7).
func (s *Service) SetBeforeClaim(f func(ctx context.Context, sc binding.Scope, id string)) {
	s.hooks.beforeClaim = f
}

// Writes is the number of JetStream writes the service asked for.
func (s *Service) Writes() int64 { return s.writes.Load() }
