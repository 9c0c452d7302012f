package takeover

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// ConsolePageID is the page id of the console (spec §7.1).
const ConsolePageID = "console"

// actionTimeout bounds a console action, which its caller cannot cancel
// (the invocation timeout).
const actionTimeout = 30 * time.Second

// PageCall is who and what a console operation runs for: the scope, the
// binding host actions use, the installation's settings, the operator, and
// whether the authority is inactive (reads only), and where the call came
// from. The NATS page endpoint fills it from the invocation; an HTTP
// console fills it from its token and the scope's authority.
type PageCall struct {
	Scope    binding.Scope
	Binding  binding.Binding
	Settings model.Settings
	Operator string
	Inactive bool
	Origin   Origin
}

// Where a console operation came from.
const (
	OriginConsole = "console" // the standalone HTTP console
	OriginPage    = "page"    // the console page inside LangBot
	OriginChat    = "chat"    // a !ho command in a chat
)

// Origin is where a console operation came from. The "taken by" note
// (noteTaken) names it, and skips the operator chat it came from, whose
// operator knows already.
type Origin struct {
	// Kind is OriginConsole, OriginPage or OriginChat; "" counts as
	// OriginConsole.
	Kind string
	// Chat is the chat a command was sent in (OriginChat).
	Chat model.OperatorChat
}

// Do runs one console operation (spec §7.2) and returns its result. The
// error is a *wire.Error, store.ErrCorrupt for an unreadable record, or a storage
// error (wireError maps the last two).
func (s *Service) Do(ctx context.Context, c PageCall, req PageRequest) (any, error) {
	if c.Inactive && req.Op.IsAction() {
		return nil, wire.WithReason(wire.ErrBindingRefused, ReasonInstallationInactive, "the installation is disabled or superseded")
	}
	if req.Op.IsAction() {
		// An action runs to its end once started: a caller that goes away
		// (an abandoned HTTP request) must not cut it between its writes,
		// which would leave e.g. an active takeover without its expiry, or
		// a purged record with its history and blobs (spec §12 ST-10).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), actionTimeout)
		defer cancel()
	}
	switch req.Op {
	case OpInfo:
		return s.info(c), nil
	case OpSessions:
		return s.listSessions(ctx, c, req)
	case OpMessages:
		return s.messages(ctx, c, req)
	case OpTakeoverStatus:
		rec, err := s.mustRecord(ctx, c.Scope, req.SID)
		if err != nil {
			return nil, err
		}
		return s.takeoverView(rec, c.Settings), nil
	case OpTakeover:
		return s.consoleTakeover(ctx, c, req.SID)
	case OpRelease:
		return s.consoleRelease(ctx, c, req.SID)
	case OpMarkHandled:
		return s.markHandled(ctx, c, req.SID)
	case OpReply:
		return s.reply(ctx, c, req.SID, req.Reply)
	case OpUserInfo:
		return s.userInfo(ctx, c, req)
	case OpGroupInfo:
		return s.groupInfo(ctx, c, req.SID)
	case OpBlob:
		return s.blob(ctx, c, req)
	case OpExport:
		return s.export(ctx, c, req)
	case OpDeleteSession:
		return s.deleteSession(ctx, c, req.SID)
	case OpClear:
		return s.clear(ctx, c)
	}
	return nil, wire.Errorf(wire.ErrNotFound, "unknown console operation")
}

// dedupePage: page actions run under the invocation dedupe record; reads
// skip it (spec §7.1 rule 5).
func dedupePage(inv *bus.Invocation) bool {
	if inv.Page == nil {
		return false
	}
	op, err := ParseOp(inv.Page.Method, inv.Page.Endpoint)
	return err == nil && op.IsAction()
}

// pageRead: reads are served under a disabled or superseded authority.
func pageRead(inv *bus.Invocation) bool {
	if inv.Page == nil {
		return false
	}
	op, err := ParseOp(inv.Page.Method, inv.Page.Endpoint)
	return err == nil && !op.IsAction()
}

// handlePage is the NATS page endpoint over Do.
func (s *Service) handlePage(ctx context.Context, inv *bus.Invocation) (any, error) {
	p := inv.Page
	if p.PageID != ConsolePageID {
		return nil, wire.Errorf(wire.ErrNotFound, "unknown page")
	}
	req, err := ParsePageRequest(p.Method, p.Endpoint, p.Body)
	if err != nil {
		return nil, wireError(err)
	}
	var caller struct {
		Operator string `json:"operator"`
	}
	if len(p.Caller) > 0 {
		_ = json.Unmarshal(p.Caller, &caller)
	}
	c := PageCall{
		Scope: inv.Scope, Binding: inv.Binding,
		Settings: s.settingsFor(inv.Scope, inv.Binding, inv.Config),
		Operator: OperatorOf(caller.Operator),
		Inactive: inv.Authority.State != bus.StateActive,
		Origin:   Origin{Kind: OriginPage},
	}
	data, err := s.Do(ctx, c, req)
	if err != nil {
		if req.Op.IsAction() {
			s.audit(ctx, c, req, "error")
		}
		return nil, wireError(err)
	}
	if req.Op.IsAction() {
		s.audit(ctx, c, req, "ok")
	}
	return wire.PageReply{Data: data}, nil
}

// audit logs one line per action: never text, names or file names.
func (s *Service) audit(ctx context.Context, c PageCall, req PageRequest, outcome string) {
	s.log.InfoContext(ctx, "console action", "action", string(req.Op), "scope", c.Scope.String(), "sid", req.SID, "operator", c.Operator, "outcome", outcome)
}

// wireError maps an operation error to the wire error (DESIGN §3.1): a
// *wire.Error as it is, anything else by what went wrong.
func wireError(err error) error {
	var be *wire.Error
	if errors.As(err, &be) {
		return be
	}
	if errors.Is(err, store.ErrCorrupt) {
		return wire.WithReason(wire.ErrInternal, ReasonUnreadable, "the session's stored record is unreadable")
	}
	if errors.Is(err, context.Canceled) {
		return wire.Errorf(wire.ErrUnavailable, "the request was cancelled")
	}
	return storageError()
}

// attachmentLimit is 10 MiB, lowered when the server's max_payload cannot
// carry it (spec §11).
func (s *Service) attachmentLimit() int {
	mp := int(s.nc.MaxPayload())
	if mp > 0 && (mp-256<<10)*3/8 < model.MaxAttachmentBytes {
		return max((mp-256<<10)*3/8, 0)
	}
	return model.MaxAttachmentBytes
}

// mustRecord reads a record that must exist.
func (s *Service) mustRecord(ctx context.Context, sc binding.Scope, sid string) (*model.Record, error) {
	rec, _, err := s.st.GetRecord(ctx, sc, sid)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, wire.Errorf(wire.ErrNotFound, "no such session")
	}
	return rec, nil
}

func legacyErr() error {
	return wire.WithReason(wire.ErrConflict, ReasonLegacyReadOnly, "a legacy session is read-only")
}
