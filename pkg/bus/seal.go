package bus

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// ErrKeyring is returned for a malformed LANGBOT_STATE_KEY.
var ErrKeyring = errors.New("bus: invalid state keyring")

// ErrSealed is returned when a sealed value cannot be opened: malformed,
// unknown key id, tampered, or sealed for another scope.
var ErrSealed = errors.New("bus: cannot open sealed value")

const sealVersion = "v1"

// Keyring seals secrets at rest (DESIGN 3.3): AES-256-GCM with a random
// 96-bit nonce and the scope as additional data, written as
// "v1:<key id>:<base64url(nonce||ciphertext)>". The first key seals; every
// key opens, so a key is rotated by prepending a new one.
type Keyring struct {
	ids  []string
	keys map[string]cipher.AEAD
	mac  []byte // the sealing key, for fingerprints
}

// ParseKeyring parses "<id>=<base64 32-byte key>[,<id>=<key>...]". Ids are
// 1-32 characters of [A-Za-z0-9_-]; keys are standard or URL base64, padded
// or not.
func ParseKeyring(s string) (*Keyring, error) {
	kr := &Keyring{keys: map[string]cipher.AEAD{}}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, b64, ok := strings.Cut(part, "=")
		if !ok || binding.CheckToken(id) != nil || len(id) > 32 {
			return nil, fmt.Errorf("%w: entry %d: want <id>=<base64 key>", ErrKeyring, len(kr.ids)+1)
		}
		key, err := decodeKey(b64)
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("%w: key %q: want 32 bytes of base64", ErrKeyring, id)
		}
		if _, dup := kr.keys[id]; dup {
			return nil, fmt.Errorf("%w: key id %q twice", ErrKeyring, id)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrKeyring, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrKeyring, err)
		}
		if kr.mac == nil {
			kr.mac = key
		}
		kr.ids = append(kr.ids, id)
		kr.keys[id] = aead
	}
	if len(kr.ids) == 0 {
		return nil, fmt.Errorf("%w: no key", ErrKeyring)
	}
	return kr, nil
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawURLEncoding.DecodeString(s)
}

// NewKeyString returns a fresh keyring string with one random key, for the
// dev stack and tests.
func NewKeyString(id string) (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	return id + "=" + base64.StdEncoding.EncodeToString(key), nil
}

// SealingKeyID returns the id of the key that seals.
func (k *Keyring) SealingKeyID() string { return k.ids[0] }

// Seal encrypts plaintext for scope with the first key.
func (k *Keyring) Seal(sc binding.Scope, plaintext []byte) (string, error) {
	id := k.ids[0]
	aead := k.keys[id]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("bus: seal: %w", err)
	}
	out := aead.Seal(nonce, nonce, plaintext, []byte(sc.String()))
	return sealVersion + ":" + id + ":" + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open decrypts a value sealed for scope by any key of the ring.
func (k *Keyring) Open(sc binding.Scope, sealed string) ([]byte, error) {
	ver, rest, ok := strings.Cut(sealed, ":")
	if !ok || ver != sealVersion {
		return nil, fmt.Errorf("%w: unknown format", ErrSealed)
	}
	id, b64, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, fmt.Errorf("%w: unknown format", ErrSealed)
	}
	aead, ok := k.keys[id]
	if !ok {
		return nil, fmt.Errorf("%w: unknown key id %q", ErrSealed, id)
	}
	raw, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("%w: bad encoding", ErrSealed)
	}
	pt, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(sc.String()))
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed", ErrSealed)
	}
	return pt, nil
}

// SealedBy returns the key id a sealed value names, or "" if malformed.
func SealedBy(sealed string) string {
	parts := strings.SplitN(sealed, ":", 3)
	if len(parts) != 3 || parts[0] != sealVersion {
		return ""
	}
	return parts[1]
}

// IsSealed reports whether v has the form of a sealed value.
func IsSealed(v string) bool { return SealedBy(v) != "" }

// Fingerprint returns the first 16 hex digits of HMAC-SHA256(sealing key,
// data): a stable, non-reversible identity of a secret that changes once
// when the sealing key rotates.
func (k *Keyring) Fingerprint(data []byte) string {
	m := hmac.New(sha256.New, k.mac)
	m.Write(data)
	return hex.EncodeToString(m.Sum(nil))[:16]
}
