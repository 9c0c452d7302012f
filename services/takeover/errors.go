package takeover

import (
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Request failures are *wire.Error values (pkg/wire/errors.go, DESIGN §3.1):
// handlers return wire.Errorf or wire.WithReason of a bus sentinel with a
// message safe to show the caller (never chat text or config values), and
// wireError maps the rest (corrupt records, storage failures) onto them.

// Reasons refining a code (spec §7).
const (
	ReasonLegacyReadOnly       = "legacy_read_only"
	ReasonInstallationInactive = wire.ReasonInstallationInactive
	ReasonReplyInProgress      = "reply_in_progress"
	ReasonSendFailed           = "send_failed"
	ReasonOutcomeUnknown       = "outcome_unknown"
	ReasonUnreadable           = "unreadable"
	// ReasonStorageUnavailable: a 503 because the service's storage
	// (JetStream KV, streams, object store) did not answer. With
	// ReasonNotReady it tells the console which component to look at
	// (issue 32): a 503 without a reason on LangBot's page comes from the
	// package, which got no answer from the service over NATS.
	ReasonStorageUnavailable = "storage_unavailable"
	// ReasonNotReady: a 503 because the service is starting or stopping.
	ReasonNotReady = "not_ready"
)

// storageError is the 503 of a storage failure (a new value each time:
// callers may wrap it).
func storageError() *wire.Error {
	return wire.WithReason(wire.ErrUnavailable, ReasonStorageUnavailable, "takeover service: its storage (NATS JetStream) did not answer, retry later")
}
