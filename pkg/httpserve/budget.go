package httpserve

import (
	"errors"
	"net/http"
	"sync"
)

// Errors of Budget.Admit.
var (
	// ErrTooLarge is a body whose declared length is over the route's
	// limit (answer 413).
	ErrTooLarge = errors.New("httpserve: request body too large")
	// ErrBusy is a body that does not fit the budget now, other bodies
	// hold it (answer 503 with Retry-After).
	ErrBusy = errors.New("httpserve: body budget exhausted")
)

// Budget is a weighted semaphore over request body bytes that never
// waits: a body that does not fit is refused at once, so a slow upload
// cannot queue others behind it. It is safe for concurrent use.
type Budget struct {
	mu              sync.Mutex
	cap, used, peak int64
}

// NewBudget returns a budget of capacity bytes.
func NewBudget(capacity int64) *Budget { return &Budget{cap: capacity} }

// tryAcquire takes n bytes and reports whether they fitted.
func (b *Budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.cap-b.used {
		return false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

// release returns n bytes taken by tryAcquire.
func (b *Budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// InFlight returns the bytes held now.
func (b *Budget) InFlight() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Peak returns the most bytes ever held at once.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// Admit decides on a request's body before a byte of it is read: a
// declared length over limit is ErrTooLarge; otherwise the declared
// length (or limit, for a body of unknown length) is taken from the
// budget, ErrBusy when it does not fit. A request without a body takes
// nothing. The caller reads at most limit bytes (http.MaxBytesReader)
// and calls release when it no longer holds the body.
func (b *Budget) Admit(r *http.Request, limit int64) (release func(), err error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return func() {}, nil
	}
	if r.ContentLength > limit {
		return nil, ErrTooLarge
	}
	n := r.ContentLength
	if n < 0 {
		n = limit
	}
	if !b.tryAcquire(n) {
		return nil, ErrBusy
	}
	var once sync.Once
	return func() { once.Do(func() { b.release(n) }) }, nil
}
