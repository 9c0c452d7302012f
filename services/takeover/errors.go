package takeover

import (
	"errors"
	"fmt"
)

// Kinds of request failure. Each maps to one wire error code of DESIGN §3.1
// (see bus.go); handlers wrap one, or return a *RequestError that names one
// with a reason.
var (
	// ErrBadRequest: malformed or invalid parameters (400 bad_request).
	ErrBadRequest = errors.New("takeover: bad request")
	// ErrForbidden: the installation may not act (403 binding_refused).
	ErrForbidden = errors.New("takeover: forbidden")
	// ErrNotFound: unknown operation, session, blob or member (404 not_found).
	ErrNotFound = errors.New("takeover: not found")
	// ErrConflict: the session cannot take the action now (409 conflict).
	ErrConflict = errors.New("takeover: conflict")
	// ErrTooLarge: text, attachment or payload over its limit (413 too_large).
	ErrTooLarge = errors.New("takeover: too large")
	// ErrRateLimited: too many requests (429 rate_limited).
	ErrRateLimited = errors.New("takeover: rate limited")
	// ErrUnavailable: storage or the host failed; a retry may work (503 unavailable).
	ErrUnavailable = errors.New("takeover: unavailable")
	// ErrInternal: a stored value is corrupt or an invariant broke (500 internal).
	ErrInternal = errors.New("takeover: internal error")
	// ErrInvalidConfig is returned by New for an invalid service Config.
	ErrInvalidConfig = errors.New("takeover: invalid config")
)

// Reasons refining a code (spec §7).
const (
	ReasonLegacyReadOnly       = "legacy_read_only"
	ReasonInstallationInactive = "installation_inactive"
	ReasonReplyInProgress      = "reply_in_progress"
	ReasonSendFailed           = "send_failed"
	ReasonOutcomeUnknown       = "outcome_unknown"
	ReasonUnreadable           = "unreadable"
)

// RequestError is a request failure with a kind (one of the Err values), an
// optional reason word and a message safe to show the caller: it never holds
// chat text or config values.
type RequestError struct {
	Kind    error
	Reason  string
	Message string
}

func (e *RequestError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%v (%s): %s", e.Kind, e.Reason, e.Message)
	}
	return fmt.Sprintf("%v: %s", e.Kind, e.Message)
}

// Unwrap returns the kind, so errors.Is matches it.
func (e *RequestError) Unwrap() error { return e.Kind }

func reqErr(kind error, reason, format string, args ...any) *RequestError {
	return &RequestError{Kind: kind, Reason: reason, Message: fmt.Sprintf(format, args...)}
}
