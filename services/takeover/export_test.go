package takeover

import (
	"context"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// SetFault installs the fault seam: f is consulted before each storage call
// of the service (nil removes it).
func SetFault(s *Service, f func(op string, sc binding.Scope) error) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.f = f
}

// StopView stops the session view's consumer, so the view goes stale.
func StopView(s *Service) { _ = s.view.Stop(context.Background()) }

// ViewLive reports whether the session view is live.
func ViewLive(s *Service) bool { return s.view.Live() }

// ViewConnected reports whether the session view counts its connection as
// up.
func ViewConnected(s *Service) bool { return s.view.Connected() }

// ObserveDecisions installs a hook that receives every decision's duration.
func ObserveDecisions(s *Service, f func(time.Duration)) { s.rec.onDecision = f }

// The console operations and reasons the black-box tests name.
const (
	OpInfo                   = opInfo
	OpTakeover               = opTakeover
	OpRelease                = opRelease
	OpReply                  = opReply
	OpClear                  = opClear
	ReasonSendFailed         = reasonSendFailed
	ReasonStorageUnavailable = reasonStorageUnavailable
)
