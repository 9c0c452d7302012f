package console

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/bus"
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
	if !h.tokens.allow(keyOf(tokID)) {
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
	release, ok := h.admitBody(w, r, endpoint)
	if !ok {
		return
	}
	defer release()
	params, status, msg := readParams(w, r, endpoint)
	if status != 0 {
		code := "bad_request"
		if status == http.StatusRequestEntityTooLarge {
			code = "too_large"
		}
		writeError(w, status, code, "", msg)
		return
	}
	if r.Method == http.MethodPost && endpoint == "/reply" {
		var p struct {
			SID string `json:"sid"`
		}
		// the sid is checked before it keys anything: a limiter keyed by
		// the raw field kept every oversize id it was sent
		if json.Unmarshal(params, &p) != nil || !model.ValidSID(p.SID) {
			writeError(w, http.StatusBadRequest, "bad_request", "", "sid is missing or malformed")
			return
		}
		if !h.replies.allow(keyOf(sc.String(), p.SID)) {
			writeError(w, http.StatusTooManyRequests, "rate_limited", "", "too many replies to this session, slow down")
			return
		}
	}
	res, err := h.ops.ConsoleDo(r.Context(), Call{Scope: sc, Operator: claims.Operator, Method: r.Method, Endpoint: endpoint, Params: params})
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

// writeOpError writes an operation's *bus.Error with its code as the HTTP
// status; anything else is a generic 500.
func writeOpError(w http.ResponseWriter, err error) {
	if be, ok := bus.AsError(err); ok && be.Code >= 400 && be.Code < 600 {
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

// readParams turns a request into the operation's JSON parameter object:
// the query of a GET (and of a POST or DELETE without a body), a JSON body,
// or a multipart reply whose files become data URLs. It returns an HTTP
// status and message on failure.
func readParams(w http.ResponseWriter, r *http.Request, endpoint string) (json.RawMessage, int, string) {
	limit := bodyLimit(endpoint)
	query := func() (json.RawMessage, int, string) {
		m := map[string]string{}
		for k, v := range r.URL.Query() {
			if len(v) > 0 {
				m[k] = v[0]
			}
		}
		b, _ := json.Marshal(m)
		return b, 0, ""
	}
	if r.Method == http.MethodGet {
		return query()
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		if endpoint != "/reply" {
			return nil, http.StatusBadRequest, "multipart is accepted only by /reply"
		}
		return readMultipart(r, limit)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge, "the request body is too large"
		}
		return nil, http.StatusBadRequest, "the request body could not be read"
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return query()
	}
	if !json.Valid(body) {
		return nil, http.StatusBadRequest, "the body is not valid JSON"
	}
	if body[0] == '[' {
		return nil, http.StatusBadRequest, "the body is a JSON array; it must be a JSON object"
	}
	if body[0] != '{' {
		return nil, http.StatusBadRequest, "the body must be a JSON object"
	}
	// encoding/json would store invalid UTF-8 as U+FFFD, silently
	if !utf8.Valid(body) {
		return nil, http.StatusBadRequest, "the body is not valid UTF-8"
	}
	return body, 0, ""
}

// readMultipart reads a multipart reply: fields sid, idempotency_key, text,
// file_name, image_base64, file_base64, and file parts image and file.
func readMultipart(r *http.Request, limit int64) (json.RawMessage, int, string) {
	if err := r.ParseMultipartForm(limit); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge, "the request body is too large"
		}
		return nil, http.StatusBadRequest, "the multipart body is malformed"
	}
	defer func() { _ = r.MultipartForm.RemoveAll() }()
	m := map[string]string{}
	for _, k := range []string{"sid", "idempotency_key", "text", "file_name", "image_base64", "file_base64"} {
		if v := r.MultipartForm.Value[k]; len(v) > 0 {
			if !utf8.ValidString(v[0]) {
				return nil, http.StatusBadRequest, "a form field is not valid UTF-8"
			}
			m[k] = v[0]
		}
	}
	for _, field := range []string{"image", "file"} {
		fhs := r.MultipartForm.File[field]
		if len(fhs) == 0 {
			continue
		}
		f, err := fhs[0].Open()
		if err != nil {
			return nil, http.StatusBadRequest, "an attachment could not be read"
		}
		data, err := io.ReadAll(f)
		_ = f.Close()
		if err != nil {
			return nil, http.StatusBadRequest, "an attachment could not be read"
		}
		m[field+"_base64"] = "data:application/octet-stream;base64," + base64.StdEncoding.EncodeToString(data)
		if field == "file" && m["file_name"] == "" {
			m["file_name"] = path.Base(strings.ReplaceAll(fhs[0].Filename, "\\", "/"))
		}
	}
	b, _ := json.Marshal(m)
	return b, 0, ""
}
