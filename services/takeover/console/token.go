package console

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// Token limits (spec §9).
const (
	// MaxTokenTTL is the longest lifetime a token may claim.
	MaxTokenTTL = 24 * time.Hour
	// MinKeyBytes is the shortest console key.
	MinKeyBytes = 32
	tokenPrefix = "v1."
)

// ErrUnauthorized is returned by Verify for every token it refuses: a bad
// format (a base64 spelling other than the canonical unpadded one), a
// wrong MAC, claims other than exactly scope, operator and exp (each once), a
// bad scope or operator, or an expiry in the past or beyond 24 h. The one
// error keeps the reason from the caller.
var ErrUnauthorized = errors.New("console: unauthorized")

// ErrKey is returned by ParseKey for a key that is not base64 of at least
// 32 bytes.
var ErrKey = errors.New("console: LANGBOT_CONSOLE_KEY must be base64 of at least 32 bytes")

var operatorRE = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)

// Claims are what a console token says: the one installation it opens, the
// operator acting, and its expiry in Unix seconds.
type Claims struct {
	Scope    string `json:"scope"`
	Operator string `json:"operator"`
	Exp      int64  `json:"exp"`
}

// ParseKey decodes LANGBOT_CONSOLE_KEY: base64 in the standard or URL
// alphabet, padded or not, of at least 32 bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) < MinKeyBytes {
				return nil, ErrKey
			}
			return b, nil
		}
	}
	return nil, ErrKey
}

// Mint signs c into a token "v1.<b64u(claims)>.<b64u(mac)>". It checks the
// scope and operator, not the expiry, so tests can mint expired tokens.
func Mint(key []byte, c Claims) (string, error) {
	if len(key) < MinKeyBytes {
		return "", ErrKey
	}
	if _, err := binding.ParseScope(c.Scope); err != nil {
		return "", fmt.Errorf("console: token scope: %w", err)
	}
	if !operatorRE.MatchString(c.Operator) {
		return "", fmt.Errorf("console: operator %q must match %s", c.Operator, operatorRE)
	}
	claims, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return tokenPrefix + b64(claims) + "." + b64(mac(key, claims)), nil
}

// Verify checks a token against key at now, in the order of spec §9.3, and
// returns its claims and scope. Every failure is ErrUnauthorized.
func Verify(key []byte, token string, now time.Time) (Claims, binding.Scope, error) {
	var zero Claims
	// (a) format
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok || len(key) < MinKeyBytes {
		return zero, binding.Scope{}, ErrUnauthorized
	}
	cpart, mpart, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(mpart, ".") {
		return zero, binding.Scope{}, ErrUnauthorized
	}
	claims, err1 := base64.RawURLEncoding.DecodeString(cpart)
	sig, err2 := base64.RawURLEncoding.DecodeString(mpart)
	if err1 != nil || err2 != nil || len(claims) == 0 {
		return zero, binding.Scope{}, ErrUnauthorized
	}
	// one spelling per token: the decoder ignores line breaks and the
	// unused bits of the last character, so other spellings of the same
	// bytes would pass (and key the rate limits) as different tokens
	if b64(claims) != cpart || b64(sig) != mpart {
		return zero, binding.Scope{}, ErrUnauthorized
	}
	// (b) the MAC over exactly the carried bytes, in constant time
	if !hmac.Equal(sig, mac(key, claims)) {
		return zero, binding.Scope{}, ErrUnauthorized
	}
	// (c) exactly the three claims
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(claims, &fields); err != nil || len(fields) != 3 || !uniqueKeys(claims) {
		return zero, binding.Scope{}, ErrUnauthorized
	}
	var c Claims
	if json.Unmarshal(fields["scope"], &c.Scope) != nil || json.Unmarshal(fields["operator"], &c.Operator) != nil ||
		!isInteger(fields["exp"]) || json.Unmarshal(fields["exp"], &c.Exp) != nil {
		return zero, binding.Scope{}, ErrUnauthorized
	}
	// (d) scope tokens
	sc, err := binding.ParseScope(c.Scope)
	if err != nil {
		return zero, binding.Scope{}, ErrUnauthorized
	}
	// (e) operator
	if !operatorRE.MatchString(c.Operator) {
		return zero, binding.Scope{}, ErrUnauthorized
	}
	// (f) now < exp <= now + 24 h
	if n := now.Unix(); n >= c.Exp || c.Exp > n+int64(MaxTokenTTL/time.Second) {
		return zero, binding.Scope{}, ErrUnauthorized
	}
	return c, sc, nil
}

// uniqueKeys reports whether the JSON object obj names each key once:
// encoding/json keeps the last of duplicates, so {"exp":1,"exp":2} would
// read as three claims where another parser reads other values.
func uniqueKeys(obj []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok || seen[key] {
			return false
		}
		seen[key] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return true
}

func isInteger(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	for i, ch := range raw {
		if ch == '-' && i == 0 {
			continue
		}
		if ch < '0' || ch > '9' {
			return false
		}
	}
	return true
}

func mac(key, claims []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(claims)
	return m.Sum(nil)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
