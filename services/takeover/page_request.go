package takeover

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// Op names one console operation: "<METHOD> /<path>" (spec §7.2).
type Op string

// The console operations.
const (
	opInfo           Op = "GET /info"
	opSessions       Op = "GET /sessions"
	opMessages       Op = "GET /messages"
	opTakeoverStatus Op = "GET /takeover_status"
	opTakeover       Op = "POST /takeover"
	opRelease        Op = "DELETE /takeover"
	opMarkHandled    Op = "POST /mark_handled"
	opReply          Op = "POST /reply"
	opUserInfo       Op = "GET /user_info"
	opGroupInfo      Op = "GET /group_info"
	opBlob           Op = "GET /blob"
	opExport         Op = "GET /export"
	opDeleteSession  Op = "DELETE /session"
	opClear          Op = "DELETE /clear"
	// canned replies (canned.go) and notes (notes.go)
	opCannedList Op = "GET /canned"
	opCannedPut  Op = "POST /canned"
	opCannedDel  Op = "DELETE /canned"
	opNotesList  Op = "GET /notes"
	opNoteAdd    Op = "POST /notes"
	opNoteDel    Op = "DELETE /notes"
	// the AI's suggested reply (assist.go)
	opSuggest Op = "POST /suggest"
)

// allOps lists every operation.
var allOps = []Op{opInfo, opSessions, opMessages, opTakeoverStatus, opTakeover, opRelease,
	opMarkHandled, opReply, opUserInfo, opGroupInfo, opBlob, opExport, opDeleteSession, opClear,
	opCannedList, opCannedPut, opCannedDel, opNotesList, opNoteAdd, opNoteDel, opSuggest}

// IsAction reports whether the operation changes state (the rest are reads,
// which have no side effects and skip invocation dedupe).
func (o Op) IsAction() bool {
	switch o {
	case opTakeover, opRelease, opMarkHandled, opReply, opDeleteSession, opClear,
		opCannedPut, opCannedDel, opNoteAdd, opNoteDel,
		opSuggest: // it spends the installation's AI calls
		return true
	}
	return false
}

// Paging bounds (spec §11).
const (
	defaultSessionPage = 100
	maxSessionPage     = 500
	defaultHistoryPage = 50
	maxHistoryPage     = 200
	maxReplyRunes      = 10000
	maxQueryRunes      = 200
	maxCursorLen       = 512
	maxBlobNameLen     = 512
	maxMemberIDLen     = 256
)

// Session list filters.
const (
	typeAll    = "all"
	typePerson = "person"
	typeGroup  = "group"
)

// PageRequest is a parsed and validated console request. Which fields are
// set depends on Op.
type PageRequest struct {
	Op          Op
	SID         string
	Type        string // sessions: all, person, group
	Query       string // sessions: search text
	Limit       int    // sessions, messages
	Cursor      string // sessions
	Before      uint64 // messages: exclusive sequence, 0 = newest
	MemberID    string // user_info
	Name        string // blob
	InlineBlobs bool   // export
	Reply       *replyRequest
	Canned      string // canned: a reply's name
	Text        string // canned, notes: the text
	NoteID      string // notes: the note to delete
}

// replyRequest is an operator reply (spec §7.4). The HTTP transport fills
// the attachment bytes from multipart parts and calls Validate; the page
// transport decodes them from data URLs.
type replyRequest struct {
	IdempotencyKey string
	Text           string
	Image          []byte
	ImageMime      string
	ImageURL       string // an image the host fetches (relay mode: the operator's image as their chat app gave it)
	File           []byte
	FileName       string
	FileMime       string
}

var (
	idemKeyRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{8,128}$`)
	operatorRE = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)
	cursorRE   = regexp.MustCompile(`^[A-Za-z0-9_=-]*$`)
	blobNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// hostOperator is the operator of page calls that carry no valid caller.
const hostOperator = "host"

// validOperator reports whether id is a valid operator id (spec §9).
func validOperator(id string) bool { return operatorRE.MatchString(id) }

// OperatorOf is the operator of a page call: caller.operator when valid,
// else "host" (spec §7.1).
func OperatorOf(callerOperator string) string {
	if validOperator(callerOperator) {
		return callerOperator
	}
	return hostOperator
}

// ParseOp resolves a method and endpoint ("/sessions" or "sessions") to an
// operation; an unknown pair is wire.ErrNotFound.
func ParseOp(method, endpoint string) (Op, error) {
	ep := "/" + strings.TrimPrefix(strings.TrimSpace(endpoint), "/")
	op := Op(strings.ToUpper(strings.TrimSpace(method)) + " " + ep)
	for _, o := range allOps {
		if o == op {
			return o, nil
		}
	}
	return "", wire.Errorf(wire.ErrNotFound, "unknown console operation")
}

// ParsePageRequest parses and validates one console request: its method,
// endpoint and parameters (a JSON object; null or empty means none).
// Strings given as numbers and numbers given as strings are accepted, since
// HTTP query parameters are text.
func ParsePageRequest(method, endpoint string, body []byte) (PageRequest, error) {
	return parsePageRequest(method, endpoint, body, nil, nil)
}

// parsePageRequest is ParsePageRequest with a reply's attachments already
// decoded by the transport (the HTTP console); a base64 field in body
// still wins.
func parsePageRequest(method, endpoint string, body []byte, image, file []byte) (PageRequest, error) {
	op, err := ParseOp(method, endpoint)
	if err != nil {
		return PageRequest{}, err
	}
	p, err := newParams(body)
	if err != nil {
		return PageRequest{}, err
	}
	req := PageRequest{Op: op}
	switch op {
	case opInfo:
	case opSessions:
		req.Type = typeAll
		if t, ok, err := p.str("type"); err != nil {
			return req, err
		} else if ok && t != "" {
			switch t {
			case typeAll, typePerson, typeGroup:
				req.Type = t
			default:
				return req, wire.Errorf(wire.ErrBadRequest, "type must be all, person or group")
			}
		}
		q, _, err := p.str("q")
		if err != nil {
			return req, err
		}
		req.Query = settings.CutRunes(strings.TrimSpace(q), maxQueryRunes)
		if req.Limit, err = p.limit(defaultSessionPage, maxSessionPage); err != nil {
			return req, err
		}
		c, _, err := p.str("cursor")
		if err != nil {
			return req, err
		}
		if len(c) > maxCursorLen || !cursorRE.MatchString(c) {
			return req, wire.Errorf(wire.ErrBadRequest, "cursor is malformed")
		}
		req.Cursor = c
	case opMessages:
		if req.SID, err = p.sid(); err != nil {
			return req, err
		}
		if req.Before, err = p.uint("before"); err != nil {
			return req, err
		}
		if req.Limit, err = p.limit(defaultHistoryPage, maxHistoryPage); err != nil {
			return req, err
		}
	case opTakeoverStatus, opTakeover, opRelease, opMarkHandled, opGroupInfo, opDeleteSession, opSuggest:
		if req.SID, err = p.sid(); err != nil {
			return req, err
		}
	case opUserInfo:
		if req.SID, err = p.sid(); err != nil {
			return req, err
		}
		m, _, err := p.str("member_id")
		if err != nil {
			return req, err
		}
		if len(m) > maxMemberIDLen {
			return req, wire.Errorf(wire.ErrBadRequest, "member_id is too long")
		}
		req.MemberID = m
	case opBlob:
		if req.SID, err = p.sid(); err != nil {
			return req, err
		}
		n, _, err := p.str("name")
		if err != nil {
			return req, err
		}
		if n == "" || len(n) > maxBlobNameLen || !blobNameRE.MatchString(n) {
			return req, wire.Errorf(wire.ErrBadRequest, "name is missing or malformed")
		}
		req.Name = n
	case opExport:
		if req.SID, err = p.sid(); err != nil {
			return req, err
		}
		if req.InlineBlobs, _, err = p.bool("inline_blobs"); err != nil {
			return req, err
		}
	case opClear:
		confirm, _, err := p.bool("confirm")
		if err != nil {
			return req, err
		}
		if !confirm {
			return req, wire.Errorf(wire.ErrBadRequest, "clear needs confirm: true")
		}
	case opCannedList, opCannedPut, opCannedDel:
		return req, parseCannedRequest(p, &req)
	case opNotesList, opNoteAdd, opNoteDel:
		return req, parseNotesRequest(p, &req)
	case opReply:
		if req.SID, err = p.sid(); err != nil {
			return req, err
		}
		r := &replyRequest{Image: image, File: file}
		if r.IdempotencyKey, _, err = p.str("idempotency_key"); err != nil {
			return req, err
		}
		if r.Text, _, err = p.str("text"); err != nil {
			return req, err
		}
		img, _, err := p.str("image_base64")
		if err != nil {
			return req, err
		}
		if img != "" {
			if r.Image, err = decodeAttachment("image_base64", img); err != nil {
				return req, err
			}
		}
		file, _, err := p.str("file_base64")
		if err != nil {
			return req, err
		}
		if file != "" {
			if r.File, err = decodeAttachment("file_base64", file); err != nil {
				return req, err
			}
		}
		if r.FileName, _, err = p.str("file_name"); err != nil {
			return req, err
		}
		if err := r.Validate(); err != nil {
			return req, err
		}
		req.Reply = r
	}
	return req, nil
}

func decodeAttachment(field, s string) ([]byte, error) {
	b, err := model.DecodeDataURL(s, model.MaxAttachmentBytes)
	switch {
	case err == model.ErrTooLarge:
		return nil, wire.Errorf(wire.ErrTooLarge, "%s is over the attachment limit", field)
	case err != nil:
		return nil, wire.Errorf(wire.ErrBadRequest, "%s is not valid base64", field)
	}
	return b, nil
}

// Validate checks and normalises a reply (spec §7.4 rule 1): the key's
// form, trimmed text of at most 10 000 characters, at least one of text,
// image or file, an image that sniffs as a raster image
// (model.RasterImage), attachments of at most 10 MiB, and a sanitised file
// name. It sets the sniffed mime types.
func (r *replyRequest) Validate() error {
	if !idemKeyRE.MatchString(r.IdempotencyKey) {
		return wire.Errorf(wire.ErrBadRequest, "idempotency_key must be 8-128 of A-Z a-z 0-9 _ -")
	}
	if !utf8.ValidString(r.Text) {
		return wire.Errorf(wire.ErrBadRequest, "text is not valid UTF-8")
	}
	r.Text = strings.TrimSpace(r.Text)
	if utf8.RuneCountInString(r.Text) > maxReplyRunes {
		return wire.Errorf(wire.ErrTooLarge, "text is over %d characters", maxReplyRunes)
	}
	if r.Text == "" && len(r.Image) == 0 && len(r.File) == 0 {
		return wire.Errorf(wire.ErrBadRequest, "a reply needs text, an image or a file")
	}
	if len(r.Image) > model.MaxAttachmentBytes || len(r.File) > model.MaxAttachmentBytes {
		return wire.Errorf(wire.ErrTooLarge, "an attachment is over the limit")
	}
	if len(r.Image) > 0 {
		r.ImageMime = model.SniffMime(r.Image)
		if !model.RasterImage(r.ImageMime) {
			return wire.Errorf(wire.ErrBadRequest, "the image is not an image")
		}
	}
	if len(r.File) > 0 {
		r.FileMime = model.SniffMime(r.File)
		r.FileName = model.SanitizeFileName(r.FileName)
	} else {
		r.FileName = ""
	}
	return nil
}

// params is a console request's parameter object.
type params map[string]json.RawMessage

func newParams(body []byte) (params, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || string(body) == "null" {
		return params{}, nil
	}
	var p params
	if err := json.Unmarshal(body, &p); err != nil {
		if body[0] == '[' {
			return nil, wire.Errorf(wire.ErrBadRequest, "parameters are a JSON array; they must be a JSON object")
		}
		return nil, wire.Errorf(wire.ErrBadRequest, "parameters must be a JSON object")
	}
	return p, nil
}

// str reads a string parameter (a number is taken as its text). Missing or
// null gives ok false.
func (p params) str(name string) (string, bool, error) {
	v, ok := p[name]
	if !ok || model.IsNull(v) {
		return "", false, nil
	}
	if s, ok := model.IDText(v); ok {
		return s, true, nil
	}
	return "", false, wire.Errorf(wire.ErrBadRequest, "%s must be a string", name)
}

func (p params) bool(name string) (bool, bool, error) {
	v, ok := p[name]
	if !ok || model.IsNull(v) {
		return false, false, nil
	}
	if b, ok := model.ParseBool(v); ok {
		return b, true, nil
	}
	return false, false, wire.Errorf(wire.ErrBadRequest, "%s must be a boolean", name)
}

func (p params) sid() (string, error) {
	s, _, err := p.str("sid")
	if err != nil {
		return "", err
	}
	if !model.ValidSID(s) {
		return "", wire.Errorf(wire.ErrBadRequest, "sid is missing or malformed")
	}
	return s, nil
}

// limit reads an optional page size, clamped to [1, max].
func (p params) limit(def, maxN int) (int, error) {
	v, ok := p["limit"]
	if !ok || model.IsNull(v) {
		return def, nil
	}
	n, ok := model.ParseInt(v)
	if !ok {
		return 0, wire.Errorf(wire.ErrBadRequest, "limit must be an integer")
	}
	return int(min(max(n, 1), int64(maxN))), nil
}

func (p params) uint(name string) (uint64, error) {
	v, ok := p[name]
	if !ok || model.IsNull(v) {
		return 0, nil
	}
	s, ok := model.IDText(v)
	if !ok {
		return 0, wire.Errorf(wire.ErrBadRequest, "%s must be a sequence number", name)
	}
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, wire.Errorf(wire.ErrBadRequest, "%s must be a sequence number", name)
	}
	return n, nil
}
