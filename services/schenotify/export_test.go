package schenotify

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// SetBeforeClaim installs a hook run by the due handler after it fetched
// a record and before it claims it (spec 10, N7).
func (s *Service) SetBeforeClaim(f func(ctx context.Context, sc binding.Scope, id string)) {
	s.dl.hooks.beforeClaim = f
}

// SetOnFired installs a hook called as each fired message reaches its
// handler, with the server's publish time of the fired message.
func (s *Service) SetOnFired(f func(published, fetched time.Time)) {
	s.dl.hooks.onFired = func(m *bus.Fired, fetched time.Time) { f(m.Published, fetched) }
}

// Writes is the number of JetStream writes the service asked for.
func (s *Service) Writes() int64 { return s.rem.writes.Load() }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Runner returns the service's runner (its authority view).
func (s *Service) Runner() *bus.Runner { return s.runner }

// SetAfterSend installs a hook run by a delivery right after its send
// returned and before its outcome is written.
func (s *Service) SetAfterSend(f func(ctx context.Context, sc binding.Scope, id string)) {
	s.dl.hooks.afterSend = f
}

// WithCalendarEnd returns cfg with China's working calendar ending at year
// (when the library covers more): a service started with it meets the end
// of its calendar early, one started without it has the library's.
func WithCalendarEnd(cfg Config, year int) Config {
	cfg.calendarEnd = year
	return cfg
}
