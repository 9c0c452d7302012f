package httpserve

import "crypto/sha256"

// LimitKey is the key of a keyed limiter or a bounded per-client map (the
// console's request limiters, githubkit's link-card buckets and cache): a
// SHA-256 of what it limits, so that an entry costs the same whatever the
// request carried and the map never holds a token or a chat id in clear.
type LimitKey [sha256.Size]byte

// LimitKeyOf is the LimitKey of parts, each followed by a NUL byte, so that
// ("ab", "c") and ("a", "bc") differ as long as no part holds a NUL (the
// callers' parts are validated ids, names, URLs and MACs).
func LimitKeyOf(parts ...string) LimitKey {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var k LimitKey
	h.Sum(k[:0])
	return k
}
