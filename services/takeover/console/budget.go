package console

import (
	"errors"
	"net/http"

	"github.com/langbot-nats/plugins/pkg/httpserve"
)

// defaultBodyBudget bounds the request bodies one console handler holds at
// once: four full replies. Memory grows with the bytes of the bodies being
// read and decoded, not with the number of requests, so twenty concurrent
// 29 MiB replies wait their turn (503 + Retry-After) instead of taking
// gigabytes: one console's flood cannot starve the others.
const defaultBodyBudget = 4 * maxReplyBody

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
	release, err := h.budget.Admit(r, bodyLimit(endpoint))
	switch {
	case errors.Is(err, httpserve.ErrTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "", "the request body is too large")
		return nil, false
	case err != nil:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "", "the console is busy with other uploads, retry shortly")
		return nil, false
	}
	return release, true
}
