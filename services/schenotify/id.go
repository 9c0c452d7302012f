package schenotify

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"strings"
)

// Id alphabet (spec 6.1): no i, l, o, 0 or 1, and a letter first, so an id
// never looks like an index, "i" or "all".
const (
	idFirst = "abcdefghjkmnpqrstuvwxyz"
	idRest  = idFirst + "23456789"
	idLen   = 6
)

// DerivedID is the id of the reminder created by invocation invID in
// scope: derived from SHA-256 of the two, so a retried invocation finds its
// own record.
func DerivedID(scope, invID string) string {
	h := sha256.Sum256([]byte(scope + "\x00" + invID))
	return idFromBytes(h[:])
}

// RandomID is the fallback when the derived id's key is held by another
// invocation.
func RandomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return idFromBytes(b[:])
}

func idFromBytes(b []byte) string {
	v := binary.BigEndian.Uint64(b[:8])
	out := make([]byte, idLen)
	out[0] = idFirst[v%uint64(len(idFirst))]
	v /= uint64(len(idFirst))
	for i := 1; i < idLen; i++ {
		out[i] = idRest[v%uint64(len(idRest))]
		v /= uint64(len(idRest))
	}
	return string(out)
}

// NormalizeID lower-cases s and reports whether it is a valid id.
func NormalizeID(s string) (string, bool) {
	if len(s) != idLen {
		return "", false
	}
	s = strings.ToLower(s)
	if strings.IndexByte(idFirst, s[0]) < 0 {
		return "", false
	}
	for i := 1; i < idLen; i++ {
		if strings.IndexByte(idRest, s[i]) < 0 {
			return "", false
		}
	}
	return s, true
}
