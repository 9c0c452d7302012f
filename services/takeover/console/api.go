package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// serveAPI serves /console/api/<endpoint>: the token first, then the rate
// limit, then the operation.
func (h *Handler) serveAPI(w http.ResponseWriter, r *http.Request, endpoint string) {
	claims, sc, tokID, ok := h.authorize(r)
	if !ok {
		unauthorized(w)
		return
	}
	if !h.tokens.allow(httpserve.LimitKeyOf(tokID)) {
		writeError(w, http.StatusTooManyRequests, "rate_limited", "", "too many requests, slow down")
		return
	}
	if endpoint == "/events" {
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "bad_request", "", "the live feed is GET only")
			return
		}
		h.serveEvents(w, r, claims, sc, tokID)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodDelete:
	default:
		writeError(w, http.StatusMethodNotAllowed, "bad_request", "", "use GET, POST or DELETE")
		return
	}
	admitted := h.now()
	isReply := r.Method == http.MethodPost && endpoint == "/reply"
	endRead := func() {}
	if isReply {
		end, ok := h.startReply(httpserve.LimitKeyOf(tokID))
		if !ok {
			writeError(w, http.StatusTooManyRequests, "rate_limited", "", "another reply of yours is still uploading, retry shortly")
			return
		}
		endRead = end
		defer end()
		// Before the body is read, so a token's flood is not read whole:
		// the per-session limit below needs the body's sid, and four waves of twenty 9 MiB replies of
		// one token were read whole, 351 MiB, to be refused 429. A token
		// sends replies no faster than a session takes them
		// (tokenReplyBurst), one read at a time, and the session's check
		// counts each at this same instant, so a reply of one token is
		// refused after its read only when another token answered the same
		// session meanwhile.
		if !h.tokenReplies.allowAt(httpserve.LimitKeyOf(tokID), admitted) {
			writeError(w, http.StatusTooManyRequests, "rate_limited", "", "too many replies, slow down")
			return
		}
	}
	release, ok := h.admitBody(w, r, endpoint)
	if !ok {
		return
	}
	defer release()
	params, att, status, msg := readParams(w, r, endpoint)
	if status != 0 {
		code := "bad_request"
		if status == http.StatusRequestEntityTooLarge {
			code = "too_large"
		}
		writeError(w, status, code, "", msg)
		return
	}
	if isReply {
		var p struct {
			SID string `json:"sid"`
		}
		// the sid is checked before it keys anything: a limiter keyed by
		// the raw field kept every oversize id it was sent
		if json.Unmarshal(params, &p) != nil || !model.ValidSID(p.SID) {
			writeError(w, http.StatusBadRequest, "bad_request", "", "sid is missing or malformed")
			return
		}
		if !h.replies.allowAt(httpserve.LimitKeyOf(sc.String(), p.SID), admitted) {
			writeError(w, http.StatusTooManyRequests, "rate_limited", "", "too many replies to this session, slow down")
			return
		}
		endRead() // the token's next reply may be read while this one is sent
	}
	res, err := h.ops.ConsoleDo(r.Context(), Call{Scope: sc, Operator: claims.Operator, Method: r.Method, Endpoint: endpoint, Params: params, Image: att.image, File: att.file})
	if err != nil {
		writeOpError(w, err)
		return
	}
	if b, ok := res.(Blob); ok {
		serveBlob(w, b)
		return
	}
	writeJSON(w, res)
}

// writeOpError writes an operation's *wire.Error with its code as the HTTP
// status; anything else is a generic 500.
func writeOpError(w http.ResponseWriter, err error) {
	if be, ok := wire.AsError(err); ok && be.Code >= 400 && be.Code < 600 {
		writeError(w, be.Code, be.Word, be.Reason, be.Message)
		return
	}
	writeError(w, http.StatusInternalServerError, "internal", "", "internal error")
}

// serveBlob writes a blob: a raster image the service keeps as an image
// (model.RasterImage) as itself, anything
// else as a download of a neutral type, so that no stored bytes (HTML, SVG,
// a record written before images were sniffed) are ever rendered as a
// document of the console's origin. nosniff is set for every response.
func serveBlob(w http.ResponseWriter, b Blob) {
	hd := w.Header()
	hd.Set("Cache-Control", "private, no-store")
	if model.RasterImage(b.Mime) {
		hd.Set("Content-Type", b.Mime)
	} else {
		hd.Set("Content-Type", "application/octet-stream")
		hd.Set("Content-Disposition", "attachment")
		hd.Set("Content-Security-Policy", "sandbox; frame-ancestors 'none'")
	}
	_, _ = w.Write(b.Data)
}

// attachments are a reply's image and file bytes, decoded.
type attachments struct {
	image, file []byte
}

// readParams turns a request into the operation's JSON parameter object:
// the query of a GET (and of a POST or DELETE without a body), a JSON body,
// or a multipart reply. A reply's attachments are decoded into their own
// buffers (never a data URL round trip), so a reply holds its body once
// and each attachment once. It returns an HTTP status and message on
// failure.
func readParams(w http.ResponseWriter, r *http.Request, endpoint string) (json.RawMessage, attachments, int, string) {
	limit := bodyLimit(endpoint)
	query := func() (json.RawMessage, attachments, int, string) {
		m := map[string]string{}
		for k, v := range r.URL.Query() {
			if len(v) > 0 {
				m[k] = v[0]
			}
		}
		b, _ := json.Marshal(m)
		return b, attachments{}, 0, ""
	}
	if r.Method == http.MethodGet {
		return query()
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		if endpoint != "/reply" {
			return nil, attachments{}, http.StatusBadRequest, "multipart is accepted only by /reply"
		}
		return readMultipart(r)
	}
	body, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, attachments{}, http.StatusRequestEntityTooLarge, "the request body is too large"
		}
		return nil, attachments{}, http.StatusBadRequest, "the request body could not be read"
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return query()
	}
	if !json.Valid(body) {
		return nil, attachments{}, http.StatusBadRequest, "the body is not valid JSON"
	}
	if body[0] == '[' {
		return nil, attachments{}, http.StatusBadRequest, "the body is a JSON array; it must be a JSON object"
	}
	if body[0] != '{' {
		return nil, attachments{}, http.StatusBadRequest, "the body must be a JSON object"
	}
	// encoding/json would store invalid UTF-8 as U+FFFD, silently
	if !utf8.Valid(body) {
		return nil, attachments{}, http.StatusBadRequest, "the body is not valid UTF-8"
	}
	if endpoint == "/reply" && r.Method == http.MethodPost {
		return replyMembers(body)
	}
	return body, attachments{}, 0, ""
}

// readBody reads a body into one buffer of its declared length (the
// admitted size), growing it only for a body of unknown length.
func readBody(body io.Reader, declared int64) ([]byte, error) {
	if declared <= 0 {
		return io.ReadAll(body)
	}
	return readSized(body, declared+1)
}

// replyMembers takes a reply's attachments out of its JSON object body: a
// non-empty string image_base64 or file_base64 is decoded from the body's
// bytes into a buffer of its own; every other member stays in the
// parameters as it was written. body is a valid JSON object.
func replyMembers(body []byte) (json.RawMessage, attachments, int, string) {
	var att attachments
	type member struct {
		name     string
		key, val []byte
	}
	var members []member
	last := map[string][]byte{} // an attachment member's last value counts, as in a JSON object
	i := skipSpace(body, 1)
	for i < len(body) && body[i] == '"' {
		kEnd := endOfString(body, i)
		key := body[i:kEnd]
		vStart := skipSpace(body, skipSpace(body, kEnd)+1) // past the colon
		vEnd := endOfValue(body, vStart)
		m := member{key: key, val: body[vStart:vEnd]}
		_ = json.Unmarshal(key, &m.name)
		if m.name == "image_base64" || m.name == "file_base64" {
			last[m.name] = m.val
		}
		members = append(members, m)
		i = skipSpace(body, vEnd)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	found := map[string][]byte{}
	for name, val := range last {
		if val[0] == '"' {
			found[name] = val
		}
	}
	var rest [][2][]byte
	for _, m := range members {
		if _, ok := found[m.name]; !ok {
			rest = append(rest, [2][]byte{m.key, m.val})
		}
	}
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{"image_base64", &att.image}, {"file_base64", &att.file}} {
		val, ok := found[f.name]
		if !ok || len(val) == 2 { // absent or ""
			continue
		}
		var data []byte
		var err error
		if s := val[1 : len(val)-1]; bytes.IndexByte(s, '\\') < 0 {
			data, err = model.DecodeDataURLBytes(s, model.MaxAttachmentBytes)
		} else {
			var str string
			_ = json.Unmarshal(val, &str)
			data, err = model.DecodeDataURL(str, model.MaxAttachmentBytes)
		}
		if status, msg := attachmentError(f.name, err); status != 0 {
			return nil, attachments{}, status, msg
		}
		*f.dst = data
	}
	if len(found) == 0 {
		return body, att, 0, ""
	}
	params := []byte{'{'}
	for k, m := range rest {
		if k > 0 {
			params = append(params, ',')
		}
		params = append(append(append(params, m[0]...), ':'), m[1]...)
	}
	return append(params, '}'), att, 0, ""
}

// attachmentError is the answer to an attachment that does not decode.
func attachmentError(field string, err error) (int, string) {
	switch {
	case err == nil:
		return 0, ""
	case errors.Is(err, model.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, field + " is over the attachment limit"
	}
	return http.StatusBadRequest, field + " is not valid base64"
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// endOfString is the index past the JSON string that starts at b[i].
func endOfString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// endOfValue is the index past the JSON value that starts at b[i], in a
// document known to be valid.
func endOfValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return endOfString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = endOfString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[j])) {
		j++
	}
	return j
}

// readMultipart reads a multipart reply part by part: fields sid,
// idempotency_key, text, file_name, image_base64, file_base64 (the first
// of each counts), and file parts image and file, read straight into
// their buffers up to the attachment limit. A file part wins over its
// base64 field.
func readMultipart(r *http.Request) (json.RawMessage, attachments, int, string) {
	malformed := func(err error) (json.RawMessage, attachments, int, string) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, attachments{}, http.StatusRequestEntityTooLarge, "the request body is too large"
		}
		return nil, attachments{}, http.StatusBadRequest, "the multipart body is malformed"
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return malformed(err)
	}
	m := map[string]string{}
	fields := map[string][]byte{}
	var att attachments
	var fileName string
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return malformed(err)
		}
		name := part.FormName()
		if part.FileName() != "" {
			if (name != "image" && name != "file") || (name == "image" && att.image != nil) || (name == "file" && att.file != nil) {
				continue
			}
			data, err := readPart(part, model.MaxAttachmentBytes, r.ContentLength)
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.Is(err, model.ErrTooLarge) {
					return nil, attachments{}, http.StatusRequestEntityTooLarge, name + "_base64 is over the attachment limit"
				} else if errors.As(err, &mbe) {
					return malformed(err)
				}
				return nil, attachments{}, http.StatusBadRequest, "an attachment could not be read"
			}
			if name == "image" {
				att.image = data
			} else {
				att.file = data
				fileName = path.Base(strings.ReplaceAll(part.FileName(), "\\", "/"))
			}
			continue
		}
		switch name {
		case "sid", "idempotency_key", "text", "file_name", "image_base64", "file_base64":
		default:
			continue
		}
		if _, seen := fields[name]; seen {
			continue
		}
		v, err := readPart(part, maxReplyBody, r.ContentLength)
		if err != nil {
			return malformed(err)
		}
		if !utf8.Valid(v) {
			return nil, attachments{}, http.StatusBadRequest, "a form field is not valid UTF-8"
		}
		fields[name] = v
	}
	for k, v := range fields {
		if k == "image_base64" || k == "file_base64" {
			continue
		}
		m[k] = string(v)
	}
	if m["file_name"] == "" && fileName != "" {
		m["file_name"] = fileName
	}
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{"image_base64", &att.image}, {"file_base64", &att.file}} {
		v := fields[f.name]
		if *f.dst != nil || len(v) == 0 {
			continue
		}
		data, err := model.DecodeDataURLBytes(v, model.MaxAttachmentBytes)
		if status, msg := attachmentError(f.name, err); status != 0 {
			return nil, attachments{}, status, msg
		}
		*f.dst = data
	}
	b, _ := json.Marshal(m)
	return b, att, 0, ""
}

// readPart reads a part of at most limit bytes (model.ErrTooLarge beyond
// it) into one buffer, sized by the request's declared length when known.
func readPart(part io.Reader, limit int, declared int64) ([]byte, error) {
	size := int64(limit) + 1
	if declared > 0 {
		size = min(size, declared)
	}
	buf, err := readSized(io.LimitReader(part, int64(limit)+1), size)
	if err != nil {
		return nil, err
	}
	if len(buf) > limit {
		return nil, model.ErrTooLarge
	}
	return buf, nil
}

// readSized reads r to its end into a buffer of capacity size, grown only
// when r holds more.
func readSized(r io.Reader, size int64) ([]byte, error) {
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
