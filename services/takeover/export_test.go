package takeover

import (
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// SetFault installs the fault seam: f is consulted before each storage call
// of the service (nil removes it).
func SetFault(s *Service, f func(op string, sc binding.Scope) error) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.fault = f
}

// StopView stops the session view's consumer, so the view goes stale.
func StopView(s *Service) { s.view.Stop() }

// ViewLive reports whether the session view is live.
func ViewLive(s *Service) bool { return s.view.Live() }

// ViewConnected reports whether the session view counts its connection as
// up.
func ViewConnected(s *Service) bool { return s.view.Connected() }

// ObserveDecisions installs a hook that receives every decision's duration.
func ObserveDecisions(s *Service, f func(time.Duration)) { s.onDecision = f }
