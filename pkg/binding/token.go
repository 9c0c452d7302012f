package binding

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// maxEncodedText is the longest free text that Token encodes reversibly
// (256 base64url characters); longer text is hashed so a token stays short.
// GitHub full names (at most 140 bytes) always take the reversible form.
const maxEncodedText = 192

// hashMarker starts a hashed token. Unpadded base64url never contains '=',
// so the two forms cannot collide.
const hashMarker = "="

// Token encodes free text (a repository name, a session key) into a token
// that is safe as one NATS subject token and as one KV key token: unpadded
// base64url of the text when it is at most 192 bytes, otherwise "=" followed
// by the hex SHA-256 of the text. The empty text encodes to "_" (which is not
// the base64url encoding of any non-empty text of valid length).
//
// Token is deterministic and injective over texts of at most 192 bytes;
// beyond that it is collision-resistant.
func Token(text string) string {
	if text == "" {
		return "_"
	}
	if len(text) <= maxEncodedText {
		return base64.RawURLEncoding.EncodeToString([]byte(text))
	}
	sum := sha256.Sum256([]byte(text))
	return hashMarker + hex.EncodeToString(sum[:])
}

// DecodeToken reverses Token for tokens of the reversible form. It returns
// an error for hashed tokens and for anything Token cannot produce.
func DecodeToken(tok string) (string, error) {
	if tok == "_" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(tok)
	if err != nil || len(b) == 0 || len(b) > maxEncodedText {
		return "", fmt.Errorf("binding: %q is not a reversible token", tok)
	}
	return string(b), nil
}

// HashToken returns the first n hex characters (n <= 64) of SHA-256(text),
// for keys that need a fixed-length, non-reversible token such as
// invocation-id dedupe records.
func HashToken(text string, n int) string {
	sum := sha256.Sum256([]byte(text))
	h := hex.EncodeToString(sum[:])
	if n <= 0 || n > len(h) {
		return h
	}
	return h[:n]
}
