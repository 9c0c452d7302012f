package httpserve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Defaults of Limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds a request's headers and body: a 30 MiB
	// console upload needs 0.5 MB/s. A slow client holds no memory beyond
	// the budget, only its admitted bytes for this long.
	DefaultReadTimeout  = 60 * time.Second
	DefaultWriteTimeout = 2 * time.Minute
	DefaultIdleTimeout  = 2 * time.Minute
	DefaultMaxHeader    = 64 << 10
	// DefaultMaxBody is the largest body any route accepts (the console's
	// 30 MiB reply, with room for its form encoding).
	DefaultMaxBody = 32 << 20
	// DefaultBodyBudget bounds the bodies one server admits at once: the
	// console's own budget (four full replies) and the webhook
	// receiver's, with room to spare.
	DefaultBodyBudget = 160 << 20
)

// Limits are a server's timeouts and body bounds; zero fields take the
// defaults above.
type Limits struct {
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing an answer (renewed per write by Stream).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection waiting for its next
	// request.
	IdleTimeout    time.Duration
	MaxHeaderBytes int
	// MaxBody refuses (413) a body declared larger, before it is read.
	MaxBody int64
	// BodyBudget bounds the request body bytes admitted at once over the
	// server (Budget); a request that does not fit gets 503 + Retry-After.
	BodyBudget int64
}

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.WriteTimeout, DefaultWriteTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeader
	}
	if l.MaxBody <= 0 {
		l.MaxBody = DefaultMaxBody
	}
	if l.BodyBudget <= 0 {
		l.BodyBudget = DefaultBodyBudget
	}
	return l
}

// Server is an HTTP server on its own listener with Limits applied.
type Server struct {
	srv    *http.Server
	ln     net.Listener
	done   chan error
	budget *Budget
}

// Listen binds addr (":0" picks a port) and serves h under lim until
// Shutdown.
func Listen(addr string, h http.Handler, lim Limits) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	lim = lim.withDefaults()
	s := &Server{ln: ln, done: make(chan error, 1), budget: NewBudget(lim.BodyBudget)}
	s.srv = &http.Server{
		Handler:           s.guard(h, lim),
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// limitsKey carries a request's server Limits to Stream.
type limitsKey struct{}

// guard admits each request's body to the server's budget and refuses
// what does not fit before the handler runs.
func (s *Server) guard(h http.Handler, lim Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		release, err := s.budget.Admit(r, lim.MaxBody)
		switch {
		case errors.Is(err, ErrTooLarge):
			w.Header().Set("Connection", "close")
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", strconv.Itoa(1))
			http.Error(w, "busy with other uploads, retry shortly", http.StatusServiceUnavailable)
			return
		}
		defer release()
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, lim.MaxBody)
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), limitsKey{}, lim)))
	})
}

// Addr returns the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Budget returns the server's body budget (its figures are for metrics
// and tests).
func (s *Server) Budget() *Budget { return s.budget }

// Shutdown stops accepting and waits for open requests, up to ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// Stream prepares a long-lived response such as Server-Sent Events: it
// lifts the read deadline (ReadTimeout would otherwise end the request's
// context while it streams) and returns renew, which moves the write
// deadline WriteTimeout past now; call it before each write, so a client
// that stops reading is cut off while one that reads stays. On a server
// not started by this package, or one whose connection cannot take
// deadlines, both do nothing.
func Stream(w http.ResponseWriter, r *http.Request) (renew func()) {
	lim, ok := r.Context().Value(limitsKey{}).(Limits)
	if !ok {
		return func() {}
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	renew = func() { _ = rc.SetWriteDeadline(time.Now().Add(lim.WriteTimeout)) }
	renew()
	return renew
}
