package bus

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// A tenant is one LangBot instance, or one workspace of it (DESIGN 7).
// The operator issues it a credential, a NATS user and password, and the
// auth callout responder (AuthCallout) turns a login with it into a NATS
// user whose permissions name only that tenant's subjects (TenantGrants).
// The records live in TenantBucket, keyed by the user; the secret is kept
// as its SHA-256 only.

// Errors of tenant records.
var (
	// ErrTenant reports a tenant name, instance or workspace that is not
	// well formed.
	ErrTenant = errors.New("bus: invalid tenant")
	// ErrTenantExists is returned by IssueTenant for a name in use.
	ErrTenantExists = errors.New("bus: tenant exists")
	// ErrTenantNotFound is returned for a tenant that has no record.
	ErrTenantNotFound = errors.New("bus: no such tenant")
)

// TenantNamePrefix starts every tenant's NATS user, so that no tenant can
// be named like a user of the deployment's accounts (host, admin, ...).
const TenantNamePrefix = "t-"

// FirstTenant is the tenant the single-host set-ups (the one binary, the
// Compose deployment's lbctl setup) issue, claimable, into a new bucket.
const FirstTenant = "t-first"

var tenantNameRE = regexp.MustCompile(`^t-[A-Za-z0-9_-]{1,48}$`)

// CheckTenantName reports whether name can be a tenant's NATS user: "t-"
// and 1 to 48 of [A-Za-z0-9_-], so that it is one subject token (its inbox
// prefix is "_INBOX_<name>").
func CheckTenantName(name string) error {
	if !tenantNameRE.MatchString(name) {
		return fmt.Errorf("%w: name %q: want %s and 1 to 48 of A-Z a-z 0-9 _ -", ErrTenant, name, TenantNamePrefix)
	}
	return nil
}

// Tenant is the record of one tenant credential.
type Tenant struct {
	// Name is the tenant's NATS user.
	Name string `json:"name"`
	// Instance is the LangBot instance uuid the credential is bound to;
	// empty for a credential not claimed yet (IssueTenant with Claim).
	Instance string `json:"instance,omitempty"`
	// Workspace limits the credential to one workspace of the instance;
	// empty means every workspace.
	Workspace string `json:"workspace,omitempty"`
	// SecretSHA256 is the hex SHA-256 of the secret. The secret itself is
	// never stored or logged.
	SecretSHA256 string    `json:"secret_sha256"`
	CreatedAt    time.Time `json:"created_at"`
	// ClaimedAt is when an unbound credential was bound to the instance of
	// its first login.
	ClaimedAt *time.Time `json:"claimed_at,omitempty"`
}

// Claimable reports whether the credential is not bound to an instance
// yet: its first login binds it (AuthCallout).
func (t Tenant) Claimable() bool { return t.Instance == "" }

// Check validates the record's fields.
func (t Tenant) Check() error {
	if err := CheckTenantName(t.Name); err != nil {
		return err
	}
	if t.Instance != "" {
		if err := binding.CheckToken(t.Instance); err != nil {
			return fmt.Errorf("%w: instance: %w", ErrTenant, err)
		}
	}
	if t.Workspace != "" {
		if t.Instance == "" {
			return fmt.Errorf("%w: a workspace needs an instance", ErrTenant)
		}
		if err := binding.CheckToken(t.Workspace); err != nil {
			return fmt.Errorf("%w: workspace: %w", ErrTenant, err)
		}
	}
	if len(t.SecretSHA256) != 64 {
		return fmt.Errorf("%w: no secret hash", ErrTenant)
	}
	return nil
}

// Scope describes the subjects the tenant may use, for operators:
// "<instance>.<workspace>" or "<instance>.*", or "unclaimed".
func (t Tenant) Scope() string {
	switch {
	case t.Instance == "":
		return "unclaimed"
	case t.Workspace == "":
		return t.Instance + ".*"
	}
	return t.Instance + "." + t.Workspace
}

// matches reports whether secret is the tenant's, in constant time.
func (t Tenant) matches(secret string) bool {
	sum := sha256.Sum256([]byte(secret))
	want, err := hex.DecodeString(t.SecretSHA256)
	return err == nil && subtle.ConstantTimeCompare(sum[:], want) == 1
}

// TenantGrants are the NATS permissions of a tenant's connections.
type TenantGrants struct {
	Publish   []string // allowed publish subjects
	Subscribe []string // allowed subscribe subjects
}

// Grants returns what a bound tenant may do under subjects s: invoke the four
// endpoints of every plugin and publish attach (a JetStream publish whose
// PubAck comes to its inbox) within its instance (and workspace), serve
// its own host actions, and receive on its own inbox. No JetStream API,
// no revoke, no other tenant's subjects; replies to the host actions it
// received are allowed by the response permission the callout adds.
func (t Tenant) Grants(s wire.Subjects) (TenantGrants, error) {
	if err := t.Check(); err != nil {
		return TenantGrants{}, err
	}
	if t.Claimable() {
		return TenantGrants{}, fmt.Errorf("%w: %s is not bound to an instance", ErrTenant, t.Name)
	}
	ws := t.Workspace
	if ws == "" {
		ws = "*"
	}
	var g TenantGrants
	for _, ep := range wire.Endpoints {
		g.Publish = append(g.Publish, s.InvocationTenant(ep, t.Instance, ws))
	}
	g.Publish = append(g.Publish, s.LifecycleTenant(wire.LifecycleAttach, t.Instance, ws))
	g.Subscribe = []string{s.HostTenant(t.Instance, ws), wire.InboxPrefixFor(t.Name) + ".>"}
	return g, nil
}

// NewTenantSecret returns a new random secret: "s" and 64 hex digits (256
// bits), so that its SHA-256 cannot be reversed by guessing.
func NewTenantSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "s" + hex.EncodeToString(b), nil
}

// NewTenantName returns a new random tenant name, "t-" and 12 hex digits.
func NewTenantName() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return TenantNamePrefix + hex.EncodeToString(b), nil
}

// TenantBucketConfig is the bucket of tenant records: one revision per
// key, file storage.
func TenantBucketConfig(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: TenantBucket, Description: "tenant credentials (hashed secrets)",
		History: 1, Storage: jetstream.FileStorage, Replicas: max(replicas, 1)}
}

// EnsureTenantBucket creates or updates TenantBucket. Like the lifecycle
// stream it is created by the deployment's setup (lbctl setup), never by a
// service.
func EnsureTenantBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	ctx, cancel := withDefault(ctx)
	defer cancel()
	kv, err := js.CreateOrUpdateKeyValue(ctx, TenantBucketConfig(replicas))
	if err != nil {
		return nil, fmt.Errorf("bus: tenant bucket: %w", err)
	}
	return kv, nil
}

// IssueRequest says what credential IssueTenant makes.
type IssueRequest struct {
	// Name is the tenant's NATS user; empty: a new random one.
	Name string
	// Instance binds the credential to one LangBot instance; required
	// unless Claim.
	Instance string
	// Workspace limits it to one workspace of the instance; empty: all.
	Workspace string
	// Claim issues an unbound credential: the first login binds it to the
	// instance of the LangBot package that logs in, with every workspace.
	// For the single-host deployments, whose first tenant is made before
	// LangBot ever connected.
	Claim bool
	// Secret is the secret to use; empty: a new random one. (The
	// single-host set-ups generate it beside their other secrets.)
	Secret string
	// IfBucketNew issues only into a bucket that never held a record, and
	// otherwise returns ErrTenantExists: the single-host set-ups make the
	// first tenant once, and do not bring it back after a revoke.
	IfBucketNew bool
}

// IssueTenant creates a tenant record and returns it with its secret. It
// never replaces a record (ErrTenantExists).
func IssueTenant(ctx context.Context, kv jetstream.KeyValue, req IssueRequest, now time.Time) (Tenant, string, error) {
	var err error
	t := Tenant{Name: req.Name, Instance: req.Instance, Workspace: req.Workspace, CreatedAt: now.UTC()}
	if t.Name == "" {
		if t.Name, err = NewTenantName(); err != nil {
			return Tenant{}, "", err
		}
	}
	if req.Claim != (req.Instance == "") {
		return Tenant{}, "", fmt.Errorf("%w: give an instance, or claim, not both", ErrTenant)
	}
	secret := req.Secret
	if secret == "" {
		if secret, err = NewTenantSecret(); err != nil {
			return Tenant{}, "", err
		}
	} else if len(secret) < 16 {
		return Tenant{}, "", fmt.Errorf("%w: a secret has at least 16 characters", ErrTenant)
	}
	sum := sha256.Sum256([]byte(secret))
	t.SecretSHA256 = hex.EncodeToString(sum[:])
	if err := t.Check(); err != nil {
		return Tenant{}, "", err
	}
	ctx, cancel := withDefault(ctx)
	defer cancel()
	if req.IfBucketNew {
		st, err := kv.Status(ctx)
		if err != nil {
			return Tenant{}, "", fmt.Errorf("bus: tenant bucket: %w", err)
		}
		if js, ok := st.(*jetstream.KeyValueBucketStatus); ok && js.StreamInfo().State.LastSeq > 0 {
			return Tenant{}, "", fmt.Errorf("%w: the tenant bucket already held records", ErrTenantExists)
		}
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return Tenant{}, "", err
	}
	if _, err := kv.Create(ctx, t.Name, raw); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return Tenant{}, "", fmt.Errorf("%w: %s", ErrTenantExists, t.Name)
		}
		return Tenant{}, "", fmt.Errorf("bus: issue tenant: %w", err)
	}
	return t, secret, nil
}

// LookupTenant reads one tenant record and its revision.
func LookupTenant(ctx context.Context, kv jetstream.KeyValue, name string) (Tenant, uint64, error) {
	if err := CheckTenantName(name); err != nil {
		return Tenant{}, 0, err
	}
	ctx, cancel := withDefault(ctx)
	defer cancel()
	e, err := kv.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Tenant{}, 0, fmt.Errorf("%w: %s", ErrTenantNotFound, name)
	}
	if err != nil {
		return Tenant{}, 0, fmt.Errorf("bus: tenant: %w", err)
	}
	var t Tenant
	if err := json.Unmarshal(e.Value(), &t); err != nil {
		return Tenant{}, 0, fmt.Errorf("bus: tenant %s: %w", name, err)
	}
	if t.Name != name {
		return Tenant{}, 0, fmt.Errorf("%w: record %s names %q", ErrTenant, name, t.Name)
	}
	return t, e.Revision(), nil
}

// ListTenants returns every tenant record, by name.
func ListTenants(ctx context.Context, kv jetstream.KeyValue) ([]Tenant, error) {
	ctx, cancel := withDefault(ctx)
	defer cancel()
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: list tenants: %w", err)
	}
	var names []string
	for k := range lister.Keys() {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]Tenant, 0, len(names))
	for _, n := range names {
		t, _, err := LookupTenant(ctx, kv, n)
		if errors.Is(err, ErrTenantNotFound) {
			continue // revoked meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// RemoveTenant deletes a tenant record and its history, so that no new
// login passes. Connections already open stay until they are kicked
// (KickUser).
func RemoveTenant(ctx context.Context, kv jetstream.KeyValue, name string) error {
	if _, _, err := LookupTenant(ctx, kv, name); err != nil {
		return err
	}
	ctx, cancel := withDefault(ctx)
	defer cancel()
	if err := kv.Purge(ctx, name); err != nil {
		return fmt.Errorf("bus: revoke tenant: %w", err)
	}
	return nil
}
