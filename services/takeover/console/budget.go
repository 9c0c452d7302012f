package console

import (
	"net/http"
	"sync"
)

// defaultBodyBudget bounds the request bodies one console handler holds at
// once: four full replies. Memory grows with the bytes of the bodies being
// read and decoded, not with the number of requests, so twenty concurrent
// 29 MiB replies wait their turn (503 + Retry-After) instead of taking
// gigabytes (issue 19).
const defaultBodyBudget = 4 * maxReplyBody

// byteBudget is a weighted semaphore over bytes that never waits: a request
// that does not fit is refused at once, so a slow upload cannot queue
// others behind it.
type byteBudget struct {
	mu        sync.Mutex
	cap, used int64
}

func (b *byteBudget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.cap-b.used {
		return false
	}
	b.used += n
	return true
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// bodyLimit is the largest body an endpoint accepts.
func bodyLimit(endpoint string) int64 {
	if endpoint == "/reply" {
		return maxReplyBody
	}
	return maxOtherBody
}

// admitBody decides on a request's body before a byte of it is read: a
// declared length over the endpoint's limit is refused with 413, and the
// body's bytes (the declared length, or the limit for a body of unknown
// length) are taken from the budget, refused with 503 + Retry-After when
// other bodies hold it. It returns the release function, or false when it
// answered the request.
func (h *Handler) admitBody(w http.ResponseWriter, r *http.Request, endpoint string) (func(), bool) {
	if r.Method == http.MethodGet || r.Body == nil || r.Body == http.NoBody {
		return func() {}, true
	}
	limit := bodyLimit(endpoint)
	if r.ContentLength > limit {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "", "the request body is too large")
		return nil, false
	}
	n := r.ContentLength
	if n < 0 {
		n = limit
	}
	if n == 0 {
		return func() {}, true
	}
	if !h.budget.tryAcquire(n) {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "", "the console is busy with other uploads, retry shortly")
		return nil, false
	}
	return func() { h.budget.release(n) }, true
}
