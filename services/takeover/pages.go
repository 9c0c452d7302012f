package takeover

import (
	"context"
	"errors"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// ConsolePageID is the page id of the console (spec §7.1).
const ConsolePageID = "console"

// actionTimeout bounds a console action, which its caller cannot cancel
// (the invocation timeout).
const actionTimeout = 30 * time.Second

// pageCall is who and what a console operation runs for: the scope, the
// binding host actions use, the installation's settings, the operator, and
// whether the authority is inactive (reads only), and where the call came
// from. The NATS page endpoint fills it from the invocation; an HTTP
// console fills it from its token and the scope's authority.
type pageCall struct {
	Scope    binding.Scope
	Binding  binding.Binding
	Settings model.Settings
	Operator string
	Inactive bool
	Origin   origin
}

// session is the session sid, with its committed record rec, as the
// notices act on it for this call.
func (c pageCall) session(sid string, rec *model.Record) session {
	return session{sc: c.Scope, b: c.Binding, set: c.Settings, sid: sid, rec: rec}
}

// Where a console operation came from.
const (
	originConsole = "console" // the standalone HTTP console
	originPage    = "page"    // the console page inside LangBot
	originChat    = "chat"    // a !ho command in a chat
)

// origin is where a console operation came from. The "taken by" note
// (noteTaken) names it, and skips the operator chat it came from, whose
// operator knows already.
type origin struct {
	// Kind is originConsole, originPage or originChat; "" counts as
	// originConsole.
	Kind string
	// Chat is the chat a command was sent in (originChat).
	Chat model.OperatorChat
}

// do runs one console operation (spec §7.2) and returns its result. The
// error is a *wire.Error, store.ErrCorrupt for an unreadable record, or a storage
// error (wireError maps the last two).
func (o *ops) do(ctx context.Context, c pageCall, req PageRequest) (any, error) {
	if c.Inactive && req.Op.IsAction() {
		return nil, wire.WithReason(wire.ErrBindingRefused, reasonInstallationInactive, "the installation is disabled or superseded")
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
	case opInfo:
		return o.info(c), nil
	case opSessions:
		return o.listSessions(ctx, c, req)
	case opMessages:
		return o.messages(ctx, c, req)
	case opTakeoverStatus:
		rec, err := o.mustRecord(ctx, c.Scope, req.SID)
		if err != nil {
			return nil, err
		}
		return o.notices.takeoverView(rec, c.Settings), nil
	case opTakeover:
		return o.consoleTakeover(ctx, c, req.SID)
	case opRelease:
		return o.consoleRelease(ctx, c, req.SID)
	case opMarkHandled:
		return o.markHandled(ctx, c, req.SID)
	case opReply:
		return o.reply(ctx, c, req.SID, req.Reply)
	case opUserInfo:
		return o.userInfo(ctx, c, req)
	case opGroupInfo:
		return o.groupInfo(ctx, c, req.SID)
	case opBlob:
		return o.blob(ctx, c, req)
	case opExport:
		return o.export(ctx, c, req)
	case opDeleteSession:
		return o.deleteSession(ctx, c, req.SID)
	case opClear:
		return o.clear(ctx, c)
	case opCannedList, opCannedPut, opCannedDel:
		return o.cannedOp(ctx, c, req)
	case opNotesList, opNoteAdd, opNoteDel:
		return o.notesOp(ctx, c, req)
	case opSuggest:
		text, err := o.suggest(ctx, c, req.SID)
		return Suggestion{Text: text}, err
	}
	return nil, wire.Errorf(wire.ErrNotFound, "unknown console operation")
}

// audit logs one line per action: never text, names or file names.
func (o *ops) audit(ctx context.Context, c pageCall, req PageRequest, outcome string) {
	o.log.InfoContext(ctx, "console action", "action", string(req.Op), "scope", c.Scope.String(), "sid", req.SID, "operator", c.Operator, "outcome", outcome)
}

// wireError maps an operation error to the wire error (DESIGN §3.1): a
// *wire.Error as it is, anything else by what went wrong.
func wireError(err error) error {
	var be *wire.Error
	if errors.As(err, &be) {
		return be
	}
	if errors.Is(err, store.ErrCorrupt) {
		return wire.WithReason(wire.ErrInternal, reasonUnreadable, "the session's stored record is unreadable")
	}
	if errors.Is(err, context.Canceled) {
		return wire.Errorf(wire.ErrUnavailable, "the request was cancelled")
	}
	return storageError()
}

// attachmentLimit is 10 MiB, lowered when the server's max_payload cannot
// carry it (spec §11).
func (o *ops) attachmentLimit() int {
	mp := int(o.nc.MaxPayload())
	if mp > 0 && (mp-256<<10)*3/8 < model.MaxAttachmentBytes {
		return max((mp-256<<10)*3/8, 0)
	}
	return model.MaxAttachmentBytes
}

// mustRecord reads a record that must exist.
func (o *ops) mustRecord(ctx context.Context, sc binding.Scope, sid string) (*model.Record, error) {
	rec, _, err := o.st.GetRecord(ctx, sc, sid)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, wire.Errorf(wire.ErrNotFound, "no such session")
	}
	return rec, nil
}

func legacyErr() error {
	return wire.WithReason(wire.ErrConflict, reasonLegacyReadOnly, "a legacy session is read-only")
}
