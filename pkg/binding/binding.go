// Package binding is the host's identity of a plugin installation: the
// six-field Binding carried by every invocation and lifecycle message, the
// Scope (its stable three-token part) under which all state is kept, the
// ordering of bindings by (placement_generation, runtime_revision), and the
// encoding of free text into tokens that are safe in NATS subjects and KV
// keys.
//
// A Scope can only be obtained through ParseScope, NewScope or
// Binding.Scope, so a Scope value is valid by construction and can be used in
// a subject or key without further checks.
//
// It imports only the standard library; every other package of the module
// may import it.
package binding

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrInvalidScope is returned when a scope token is empty, longer than
	// 64 characters, or contains anything outside [A-Za-z0-9_-].
	ErrInvalidScope = errors.New("binding: invalid scope")
	// ErrInvalidBinding is returned when a binding lacks a field or has a
	// field out of range.
	ErrInvalidBinding = errors.New("binding: invalid binding")
)

// MaxTokenLen is the longest scope token accepted.
const MaxTokenLen = 64

// Scope is the stable identity of one installation:
// instance.workspace.installation. The zero Scope is invalid and is refused
// by every function that builds a subject or key from it.
type Scope struct {
	instance, workspace, installation string
}

// NewScope builds a Scope from its three tokens, validating each.
func NewScope(instance, workspace, installation string) (Scope, error) {
	for _, tok := range [...]struct{ name, v string }{
		{"instance_uuid", instance}, {"workspace_uuid", workspace}, {"installation_uuid", installation},
	} {
		if err := CheckToken(tok.v); err != nil {
			return Scope{}, fmt.Errorf("%w: %s: %w", ErrInvalidScope, tok.name, err)
		}
	}
	return Scope{instance, workspace, installation}, nil
}

// ParseScope parses "instance.workspace.installation".
func ParseScope(s string) (Scope, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Scope{}, fmt.Errorf("%w: want 3 dot-separated tokens, got %d", ErrInvalidScope, len(parts))
	}
	return NewScope(parts[0], parts[1], parts[2])
}

// ScopeFromTokens builds a Scope from three consecutive subject or key
// tokens, as found after a known prefix.
func ScopeFromTokens(tokens []string) (Scope, error) {
	if len(tokens) != 3 {
		return Scope{}, fmt.Errorf("%w: want 3 tokens, got %d", ErrInvalidScope, len(tokens))
	}
	return NewScope(tokens[0], tokens[1], tokens[2])
}

// String returns "instance.workspace.installation", the form used in
// subjects and keys; the zero Scope returns "".
func (s Scope) String() string {
	if s.IsZero() {
		return ""
	}
	return s.instance + "." + s.workspace + "." + s.installation
}

// IsZero reports whether s is the zero (invalid) Scope.
func (s Scope) IsZero() bool { return s.instance == "" }

// Instance returns the instance token.
func (s Scope) Instance() string { return s.instance }

// Workspace returns the workspace token.
func (s Scope) Workspace() string { return s.workspace }

// Installation returns the installation token.
func (s Scope) Installation() string { return s.installation }

// MarshalText implements encoding.TextMarshaler.
func (s Scope) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler, validating the scope.
func (s *Scope) UnmarshalText(b []byte) error {
	v, err := ParseScope(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// CheckToken reports why tok cannot be a scope token, or nil if it can.
func CheckToken(tok string) error {
	if tok == "" {
		return errors.New("empty token")
	}
	if len(tok) > MaxTokenLen {
		return fmt.Errorf("token longer than %d characters", MaxTokenLen)
	}
	for i := 0; i < len(tok); i++ {
		if !tokenByte(tok[i]) {
			return fmt.Errorf("character %q at %d not allowed", tok[i], i)
		}
	}
	return nil
}

func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Binding is the host's identity of one installation at one moment. The JSON
// names are LangBot's.
type Binding struct {
	InstanceUUID        string `json:"instance_uuid"`
	WorkspaceUUID       string `json:"workspace_uuid"`
	PlacementGeneration int64  `json:"placement_generation"`
	InstallationUUID    string `json:"installation_uuid"`
	RuntimeRevision     int64  `json:"runtime_revision"`
	ArtifactDigest      string `json:"artifact_digest"`
}

// MaxDigestLen bounds ArtifactDigest; digests are short hashes such as
// "sha256:<64 hex>".
const MaxDigestLen = 256

// Validate reports whether b is complete and well-formed: valid scope
// tokens, generation and revision >= 1, and a non-empty printable digest.
func (b Binding) Validate() error {
	if _, err := b.Scope(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidBinding, err)
	}
	if b.PlacementGeneration < 1 {
		return fmt.Errorf("%w: placement_generation must be >= 1", ErrInvalidBinding)
	}
	if b.RuntimeRevision < 1 {
		return fmt.Errorf("%w: runtime_revision must be >= 1", ErrInvalidBinding)
	}
	if b.ArtifactDigest == "" || len(b.ArtifactDigest) > MaxDigestLen {
		return fmt.Errorf("%w: artifact_digest must have 1 to %d characters", ErrInvalidBinding, MaxDigestLen)
	}
	for i := 0; i < len(b.ArtifactDigest); i++ {
		if c := b.ArtifactDigest[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%w: artifact_digest has a non-printable character", ErrInvalidBinding)
		}
	}
	return nil
}

// Scope returns the binding's scope, validating its tokens.
func (b Binding) Scope() (Scope, error) {
	return NewScope(b.InstanceUUID, b.WorkspaceUUID, b.InstallationUUID)
}

// Compare orders bindings by (placement_generation, runtime_revision): it
// returns -1 if b is older than o, +1 if newer, and 0 if equal. The digest
// does not take part: two bindings with the same pair are the same
// revision of the installation.
func (b Binding) Compare(o Binding) int {
	switch {
	case b.PlacementGeneration < o.PlacementGeneration:
		return -1
	case b.PlacementGeneration > o.PlacementGeneration:
		return 1
	case b.RuntimeRevision < o.RuntimeRevision:
		return -1
	case b.RuntimeRevision > o.RuntimeRevision:
		return 1
	}
	return 0
}
