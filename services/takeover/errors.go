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
	reasonLegacyReadOnly       = "legacy_read_only"
	reasonInstallationInactive = wire.ReasonInstallationInactive
	reasonReplyInProgress      = "reply_in_progress"
	reasonSendFailed           = "send_failed"
	reasonOutcomeUnknown       = "outcome_unknown"
	reasonUnreadable           = "unreadable"
	// reasonStorageUnavailable: a 503 because the service's storage
	// (JetStream KV, streams, object store) did not answer. With
	// reasonNotReady it tells the console which component to look at
	// (storage, not NATS): a 503 without a reason on LangBot's page comes from the
	// package, which got no answer from the service over NATS.
	reasonStorageUnavailable = "storage_unavailable"
	// reasonNotReady: a 503 because the service is starting or stopping.
	reasonNotReady = "not_ready"
	// The AI's suggested reply (assist.go): ai_assist is off (409), the
	// day's AI calls are used up (429), the LLM gave no draft (503).
	reasonAIOff    = "ai_assist_off"
	reasonAIBudget = "ai_budget"
	reasonAIFailed = "ai_failed"
)

// storageError is the 503 of a storage failure (a new value each time:
// callers may wrap it).
func storageError() *wire.Error {
	return wire.WithReason(wire.ErrUnavailable, reasonStorageUnavailable, "takeover service: its storage (NATS JetStream) did not answer, retry later")
}
