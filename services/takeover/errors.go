package takeover

import "github.com/langbot-nats/plugins/pkg/bus"

// Request failures are *bus.Error values (pkg/bus/errors.go, DESIGN §3.1):
// handlers return bus.Errorf or bus.WithReason of a bus sentinel with a
// message safe to show the caller (never chat text or config values), and
// wireError maps the rest (corrupt records, storage failures) onto them.

// Reasons refining a code (spec §7).
const (
	ReasonLegacyReadOnly       = "legacy_read_only"
	ReasonInstallationInactive = bus.ReasonInstallationInactive
	ReasonReplyInProgress      = "reply_in_progress"
	ReasonSendFailed           = "send_failed"
	ReasonOutcomeUnknown       = "outcome_unknown"
	ReasonUnreadable           = "unreadable"
)
