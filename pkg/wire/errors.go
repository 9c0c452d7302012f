package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Header names of the protocol.
const (
	HeaderInvocationID   = "Langbot-Invocation-Id"
	HeaderIdempotencyKey = "Langbot-Idempotency-Key"
	HeaderServiceError   = "Nats-Service-Error"
	HeaderServiceCode    = "Nats-Service-Error-Code"
	HeaderContentType    = "Content-Type"
)

// ContentTypeJSON is the Content-Type of every body of the protocol.
const ContentTypeJSON = "application/json"

// Error is the one wire error of the protocol (DESIGN 3.1): a numeric code,
// its code word, an optional reason refining it, and a message safe to show
// to the caller. Handlers return it (or wrap one of the sentinels below);
// the runner turns it into the error headers and body, and the clients turn
// error replies back into it.
type Error struct {
	Code    int    // HTTP-like status: 400, 403, 404, 409, 413, 429, 500, 503
	Word    string // code word: bad_request, binding_refused, ...
	Reason  string // optional refinement, e.g. in_progress
	Message string // human-readable, never contains secrets or chat text
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%d %s", e.Code, e.Word)
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is matches another *Error with the same code, and a reason too when the
// target has one, so errors.Is(err, ErrConflict) holds for any 409.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Code == e.Code && (t.Reason == "" || t.Reason == e.Reason)
}

// Sentinels, one per code word. Wrap them (fmt.Errorf("...: %w", ErrNotFound))
// or build an *Error with a Reason; errors.Is matches by code.
var (
	ErrBadRequest     = &Error{Code: 400, Word: "bad_request"}
	ErrBindingRefused = &Error{Code: 403, Word: "binding_refused"}
	ErrNotFound       = &Error{Code: 404, Word: "not_found"}
	ErrConflict       = &Error{Code: 409, Word: "conflict"}
	ErrTooLarge       = &Error{Code: 413, Word: "too_large"}
	ErrRateLimited    = &Error{Code: 429, Word: "rate_limited"}
	ErrInternal       = &Error{Code: 500, Word: "internal"}
	ErrUnavailable    = &Error{Code: 503, Word: "unavailable"}
)

// ErrInProgress is the 409 a retry gets while the first attempt of the same
// invocation is still running.
var ErrInProgress = &Error{Code: 409, Word: "conflict", Reason: "in_progress", Message: "the first attempt of this invocation is still running"}

// Reasons of 403 binding_refused on an invocation (docs/protocol.md,
// Errors). They are also generated for the LangBot packages
// (pkg/lbpkg), so neither side types them twice.
const (
	// ReasonNotAttached: the scope has no authority: no attach of this
	// installation has been applied. The invocation created nothing; the
	// host (re)publishes its attach and retries.
	ReasonNotAttached = "not_attached"
	// ReasonStaleBinding: the binding is older than the installation's.
	ReasonStaleBinding = "stale_binding"
	// ReasonTooFarAhead: the binding leads the installation's newest
	// attach by more than MaxInvocationLead; its attach must be applied
	// first.
	ReasonTooFarAhead = "binding_too_far_ahead"
	// ReasonInstallationInactive: the installation is disabled or
	// superseded.
	ReasonInstallationInactive = "installation_inactive"
	// ReasonRemoved: the installation was uninstalled (its tombstone).
	ReasonRemoved = "removed"
	// ReasonScopeMismatch: the subject's scope differs from the body's
	// binding.
	ReasonScopeMismatch = "scope_mismatch"
)

// BindingReasons returns the reasons above, for generated code and docs.
func BindingReasons() []string {
	return []string{ReasonNotAttached, ReasonStaleBinding, ReasonTooFarAhead,
		ReasonInstallationInactive, ReasonRemoved, ReasonScopeMismatch}
}

// ErrNotAttached is the refusal of an invocation on a scope no attach has
// reached (403 binding_refused, reason not_attached); errors.Is matches it
// by code and reason.
var ErrNotAttached = &Error{Code: 403, Word: "binding_refused", Reason: ReasonNotAttached,
	Message: "this installation is not attached: its attach has not reached the service yet"}

// ErrNoLLMModel is a host's answer to invoke_llm when the installation's
// workspace has no LLM model, or not the one named (404 not_found, reason
// no_llm_model); errors.Is matches it by code and reason.
var ErrNoLLMModel = &Error{Code: 404, Word: "not_found", Reason: ReasonNoLLMModel,
	Message: "the workspace has no LLM model"}

var wordByCode = map[int]string{
	400: "bad_request", 403: "binding_refused", 404: "not_found", 409: "conflict",
	413: "too_large", 429: "rate_limited", 500: "internal", 503: "unavailable",
}

// Errorf returns an *Error of the sentinel's code with a formatted message.
// Arguments must not carry chat text, tokens or config values.
func Errorf(sentinel *Error, format string, args ...any) *Error {
	return &Error{Code: sentinel.Code, Word: sentinel.Word, Reason: sentinel.Reason, Message: fmt.Sprintf(format, args...)}
}

// WithReason returns an *Error of the sentinel's code with a reason.
func WithReason(sentinel *Error, reason, message string) *Error {
	return &Error{Code: sentinel.Code, Word: sentinel.Word, Reason: reason, Message: message}
}

// AsError maps any error onto the wire: an *Error anywhere in the chain is
// returned as is (its message is kept; the wrapping text is not sent, since
// it may name internals); anything else becomes 500 internal with a generic
// message. The second result reports whether err was a wire error.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		if e.Message == "" {
			c := *e
			c.Message = defaultMessage(c.Code)
			return &c, true
		}
		return e, true
	}
	return &Error{Code: 500, Word: "internal", Message: "internal error"}, false
}

func defaultMessage(code int) string {
	switch code {
	case 400:
		return "bad request"
	case 403:
		return "binding refused"
	case 404:
		return "not found"
	case 409:
		return "conflict"
	case 413:
		return "request too large"
	case 429:
		return "rate limited"
	case 503:
		return "unavailable"
	}
	return "internal error"
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Reason  string `json:"reason,omitempty"`
	} `json:"error"`
}

// Encode returns the headers and body of e on the wire. The headers are a
// NATS header map (nats.Header converts to and from it).
func (e *Error) Encode() (map[string][]string, []byte) {
	var b errorBody
	b.Error.Code, b.Error.Message, b.Error.Reason = e.Word, e.Message, e.Reason
	body, _ := json.Marshal(b)
	return map[string][]string{
		HeaderServiceError: {e.Word},
		HeaderServiceCode:  {strconv.Itoa(e.Code)},
		HeaderContentType:  {ContentTypeJSON},
	}, body
}

// DecodeReply returns the *Error carried by a reply's header and body, or
// nil when the reply is a success. Both are consulted, so replies of peers
// that set only one of them are understood.
func DecodeReply(header map[string][]string, body []byte) *Error {
	get := func(k string) string {
		if v := header[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	codeText := get(HeaderServiceCode)
	word := get(HeaderServiceError)
	if codeText == "" && word == "" {
		return nil
	}
	code, err := strconv.Atoi(codeText)
	if err != nil || code < 400 || code > 599 {
		code = 500
	}
	e := &Error{Code: code, Word: word}
	var b errorBody
	if json.Unmarshal(body, &b) == nil {
		if b.Error.Code != "" {
			e.Word = b.Error.Code
		}
		e.Message, e.Reason = b.Error.Message, b.Error.Reason
	}
	if e.Word == "" {
		e.Word = wordByCode[code]
	}
	return e
}
