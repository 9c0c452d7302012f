package console

// Entries reports how many keys the handler's per-key maps hold: the
// token and reply rate limiters and the live-stream registries.
func (h *Handler) Entries() map[string]int {
	out := map[string]int{"tokens": h.tokens.len(), "replies": h.replies.len()}
	h.hub.mu.Lock()
	out["feeds"] = len(h.hub.feeds)
	h.hub.mu.Unlock()
	return out
}
