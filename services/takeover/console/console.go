package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/pkg/i18n"
)

// Call is one console operation for the scope and operator of a verified
// token.
type Call struct {
	Scope    binding.Scope
	Operator string
	Method   string          // GET, POST, DELETE
	Endpoint string          // "/sessions", "/reply", ...
	Params   json.RawMessage // a JSON object; GET query parameters arrive as strings
	// Image and File are a reply's attachments, decoded by this package
	// straight from the request body (base64 fields, multipart files);
	// Params then carries neither image_base64 nor file_base64. nil when
	// absent.
	Image, File []byte
}

// Blob is what the blob operation returns to this package: the bytes and
// their stored (sniffed) mime type.
type Blob struct {
	Mime string
	Data []byte
}

// Operations are the console operations of one service replica. The
// takeover service implements them; errors are *wire.Error values (their
// Code is the HTTP status).
type Operations interface {
	// ConsoleDo runs one operation. GET /blob returns a Blob.
	ConsoleDo(ctx context.Context, c Call) (any, error)
	// ConsoleCheck reports whether the scope is served: nil when its
	// authority exists and is not removed, a 403 *wire.Error for an unknown
	// or removed scope, another *wire.Error (503) while the service cannot
	// serve, which ends live streams without "revoked".
	ConsoleCheck(sc binding.Scope) error
	// ConsoleSubscribe delivers every message of the scope's live subject
	// to f until the returned stop function is called.
	ConsoleSubscribe(sc binding.Scope, f func(data []byte)) (stop func(), err error)
}

// Config is the console's configuration. Key is required.
type Config struct {
	// Key is LANGBOT_CONSOLE_KEY (base64, at least 32 bytes).
	Key string
	// Prefix is where the handler is mounted; default "/console/".
	Prefix string
	// TestHooks exposes window.TakeoverConsole on the page (spec §8.4);
	// tests only.
	TestHooks bool
	// Clock is the time source of token checks and rate limits; default
	// time.Now.
	Clock func() time.Time
	// Logger receives request failures (never text or tokens); default
	// slog.Default().
	Logger *slog.Logger
	// Heartbeat is the SSE comment interval; default 15 s.
	Heartbeat time.Duration
	// CheckEvery is how often an open live stream re-checks its scope
	// (to end with "revoked" after an uninstall); default 2 s.
	CheckEvery time.Duration
	// BodyBudget bounds the request body bytes read at once over all
	// requests (see admitBody); default four full replies (120 MiB).
	BodyBudget int64
}

// Limits of spec §9 and §11.
const (
	maxReplyBody     = 30 << 20
	maxOtherBody     = 1 << 20
	tokenRate        = 20 // requests per second per token
	tokenBurst       = 40
	replyRate        = 2 // replies per second per session, and per token
	replyBurst       = 2
	maxStreamsPerScp = 50
	// maxStreamsPerToken is an operator's tabs; a token cannot hold its
	// installation's whole share
	maxStreamsPerToken = 5
	// maxStreams bounds the live streams (and so the feed registry) of one
	// replica
	maxStreams = 2000
)

// tokenReplyBurst is one token's burst of replies, checked before the body
// is read: the session's, so that the session's check after the read
// (counted at the same instant, the admission's) does not refuse what the
// token's let through unless another token answered that session (a
// token's replies are read one at a time, so they reach that check in
// order). An operator may still answer two chats in a row.
const tokenReplyBurst = replyBurst

// Handler serves the console. It is safe for concurrent use.
type Handler struct {
	cfg     Config
	key     []byte
	ops     Operations
	now     func() time.Time
	log     *slog.Logger
	catalog *i18n.Catalog
	tokens  *limiter
	replies *limiter // per session, once the body named it
	// tokenReplies limits a token's replies before their bodies are read
	// (the session is known only from the body)
	tokenReplies *limiter
	// reading holds the tokens with a reply being read: one at a time, so
	// a token's replies reach the session's check in the order they were
	// admitted
	readingMu sync.Mutex
	reading   map[limitKey]struct{}
	hub       *hub
	budget    *httpserve.Budget

	closeOnce sync.Once
	closed    chan struct{}
}

// New checks cfg and returns a Handler over ops.
func New(cfg Config, ops Operations) (*Handler, error) {
	if ops == nil {
		return nil, errors.New("console: no operations")
	}
	key, err := ParseKey(cfg.Key)
	if err != nil {
		return nil, err
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/console/"
	}
	if !strings.HasPrefix(cfg.Prefix, "/") || !strings.HasSuffix(cfg.Prefix, "/") {
		return nil, fmt.Errorf("console: prefix %q must start and end with /", cfg.Prefix)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = 2 * time.Second
	}
	if cfg.BodyBudget <= 0 {
		cfg.BodyBudget = defaultBodyBudget
	}
	cat, err := Catalog()
	if err != nil {
		return nil, err
	}
	h := &Handler{
		cfg: cfg, key: key, ops: ops, now: cfg.Clock, log: cfg.Logger.With("component", "console"), catalog: cat,
		tokens:       newLimiter(tokenRate, tokenBurst, cfg.Clock),
		replies:      newLimiter(replyRate, replyBurst, cfg.Clock),
		tokenReplies: newLimiter(replyRate, tokenReplyBurst, cfg.Clock),
		reading:      map[limitKey]struct{}{},
		closed:       make(chan struct{}),
		budget:       httpserve.NewBudget(cfg.BodyBudget),
	}
	h.hub = newHub(ops)
	return h, nil
}

// Close ends every open live stream; the handler keeps serving other
// requests. It is idempotent.
func (h *Handler) Close() {
	h.closeOnce.Do(func() { close(h.closed) })
}

// csp is the standalone console's Content-Security-Policy.
const csp = "default-src 'self'; img-src 'self' blob: data:; connect-src 'self'; frame-ancestors 'none'"

// ServeHTTP serves the page, its assets, the API and the live feed.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	// the standalone console is never framed (clickjacking); a page that
	// embeds the console in LangBot is a separate file with its own policy.
	// Images come from the console itself only: a remote image in a chat
	// would tell its server who reads the chat and when, so the
	// page offers it as a link the operator may open, and no remote origin
	// may load even by mistake.
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Frame-Options", "DENY")
	path, ok := strings.CutPrefix(r.URL.Path, h.cfg.Prefix)
	if !ok {
		if r.URL.Path+"/" == h.cfg.Prefix {
			http.Redirect(w, r, h.cfg.Prefix, http.StatusMovedPermanently)
			return
		}
		http.NotFound(w, r)
		return
	}
	if api, ok := strings.CutPrefix(path, "api/"); ok {
		h.serveAPI(w, r, "/"+api)
		return
	}
	h.serveAsset(w, r, path)
}

// errorBody is the JSON error of the HTTP transport (spec §7.1).
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Reason  string `json:"reason,omitempty"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, reason, msg string) {
	var b errorBody
	b.Error.Code, b.Error.Reason, b.Error.Message = code, reason, msg
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(b)
}

// writeJSON writes v from the encoder's own buffer: a large result (an
// export with inline attachments) is not copied once more before it is
// written. The encoder writes nothing when v does not encode.
func writeJSON(w http.ResponseWriter, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(v); err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "", "the result could not be encoded")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = buf.WriteTo(w)
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="takeover-console"`)
	writeError(w, http.StatusUnauthorized, "unauthorized", "", "the console token is missing, invalid or expired")
}

// authorize verifies the request's bearer token.
func (h *Handler) authorize(r *http.Request) (Claims, binding.Scope, string, bool) {
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return Claims{}, binding.Scope{}, "", false
	}
	tok = strings.TrimSpace(tok)
	c, sc, err := Verify(h.key, tok, h.now())
	if err != nil {
		return Claims{}, binding.Scope{}, "", false
	}
	// rate limits key on the MAC: unique per token, never logged
	_, sig, _ := strings.Cut(strings.TrimPrefix(tok, tokenPrefix), ".")
	return c, sc, sig, true
}
