package githubkit

import (
	"context"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// Runner exposes the service's runner to tests.
func (s *Service) Runner() *bus.Runner { return s.runner }

// SetAfterClaim installs a hook run after a poll claimed its record.
func (s *Service) SetAfterClaim(f func(ctx context.Context, sc binding.Scope, key string)) {
	s.poll.hooks.afterClaim = f
}

// ScheduleKeys lists the record keys of a scope that have a schedule.
func (s *Service) ScheduleKeys(ctx context.Context, sc binding.Scope) ([]string, error) {
	return s.subs.scheduleKeys(ctx, sc)
}

// UpdateGoldens reports whether -update was given.
func UpdateGoldens() bool { return *update }

// WebhookBodies exposes the receiver's body budget (its peak) to tests.
func (s *Service) WebhookBodies() interface{ Peak() int64 } { return s.rx.bodies }
