package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// State is an authority's state (DESIGN 3.3).
type State string

// Authority states.
const (
	StateActive     State = "active"
	StateDisabled   State = "disabled"
	StateSuperseded State = "superseded"
	StateRemoved    State = "removed" // the tombstone
)

// Authority is the newest binding and config a service has seen for a
// scope, with its state: the record <scope>.authority of the plugin's
// bucket. Secret config fields are sealed (see Keyring).
type Authority struct {
	Binding binding.Binding `json:"binding"`
	// Attached is the binding of the newest attach applied: the attach of
	// record, which an invocation may lead by at most a bounded step
	// (MaxInvocationLead). Zero in records written before it existed:
	// Binding stands for it then.
	Attached     binding.Binding `json:"attached,omitzero"`
	Config       json.RawMessage `json:"config,omitempty"`
	Enabled      bool            `json:"enabled"`
	State        State           `json:"state"`
	LifecycleSeq uint64          `json:"lifecycle_seq"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

// Active reports whether background work may act under a.
func (a *Authority) Active() bool { return a != nil && a.State == StateActive }

// InputKind says what drives an authority transition.
type InputKind int

// Transition inputs.
const (
	InputAttach     InputKind = iota + 1 // lifecycle attach
	InputRevoke                          // lifecycle revoke
	InputInvocation                      // an invocation carrying a binding
	InputStale                           // the host refused a host action with this binding
	// InputExpire is the retention rule (spec/langbot-packages.md 6): the
	// scope is removed, as by a revoke uninstall, if its authority was
	// last written before Input.Before.
	InputExpire
)

// Input is one event that may change an authority.
type Input struct {
	Kind    InputKind
	Binding binding.Binding
	Config  json.RawMessage // attach and invocation: the plaintext config
	Enabled bool            // attach
	Reason  string          // revoke
	Seq     uint64          // lifecycle stream sequence; 0 for invocations
	Before  time.Time       // expire: the cutoff
}

// Outcome is what Transition decided.
type Outcome int

// Transition outcomes.
const (
	// Ignore: nothing changes (a late, lower-sequence or older message).
	Ignore Outcome = iota
	// Serve: the invocation is served under the stored authority, unchanged.
	Serve
	// Refuse: the invocation gets 403 binding_refused.
	Refuse
	// Write: the authority changes to Next; an invocation is then served.
	Write
)

// Decision is the result of Transition.
type Decision struct {
	Outcome Outcome
	Next    Authority // valid when Outcome == Write
	// Purge reports that Next is the tombstone and the scope's data must go.
	Purge bool
	// Revision is the KV revision Next was stored at (set by
	// AuthorityStore.Apply), so the in-process view can order it against
	// the watch's late deliveries.
	Revision uint64
}

// MaxInvocationLead bounds how far an invocation may move an authority
// past its attach of record (Authority.Attached): its binding's
// runtime_revision may exceed the attached one by at most this much, and
// its placement_generation by at most one. LangBot gives a worker a new
// revision, one higher, on each config save and upgrade, and the new
// worker's first invocation may arrive before its attach is consumed; a
// few saves in a row before the attach lands still fit. The bound is
// measured from the attach, never from a binding an invocation wrote, so
// repeated invocations cannot ratchet the authority away from the
// installation's real worker, whose next attach (refreshed hourly) is
// applied whatever binding it carries (see Transition).
const MaxInvocationLead = 8

// maxGenerationLead bounds an invocation's placement_generation past the
// attached one: a generation changes only on an execution-ownership
// cutover, one step at a time.
const maxGenerationLead = 1

// anchor returns the attach of record of cur.
func (a *Authority) anchor() binding.Binding {
	if a.Attached != (binding.Binding{}) {
		return a.Attached
	}
	return a.Binding
}

// withinLead reports whether b is within the bounded step past the attach
// of record of cur.
func withinLead(b binding.Binding, cur *Authority) bool {
	at := cur.anchor()
	// both sides are >= 1 (valid bindings), so the differences cannot
	// overflow
	return b.PlacementGeneration-at.PlacementGeneration <= maxGenerationLead &&
		b.RuntimeRevision-at.RuntimeRevision <= MaxInvocationLead
}

func isRemoval(reason string) bool {
	return reason == wire.ReasonUninstall || reason == wire.ReasonWorkspaceRemoved
}

// Transition applies the table of DESIGN 3.3 to the stored authority cur
// (nil: no record) and one input. It is pure: the caller stores Next by
// compare-and-set. Config in Next is the input's plaintext config (for
// attach and invocation) or cur's stored config; the store seals it.
//
// Attaches are the authority of record: one is applied whatever binding
// it carries, in the lifecycle stream's order (a message at or below the
// stored sequence is ignored), so no value an attach or an invocation
// carries can put an installation out of reach of its own worker's next
// attach. An invocation may move the authority only a bounded step past
// the newest attach (MaxInvocationLead) and never creates one: on a scope
// without a record it is refused (not_attached).
func Transition(cur *Authority, in Input, now time.Time) Decision {
	if in.Seq != 0 && cur != nil && in.Seq <= cur.LifecycleSeq {
		return Decision{Outcome: Ignore}
	}
	anchor := in.Binding
	if cur != nil {
		anchor = cur.anchor()
	}
	next := func(state State, b binding.Binding, cfg json.RawMessage, enabled bool) Decision {
		n := Authority{Binding: b, Attached: anchor, Config: cfg, Enabled: enabled, State: state, UpdatedAt: now.UTC()}
		if cur != nil {
			n.LifecycleSeq = cur.LifecycleSeq
		}
		if in.Seq > n.LifecycleSeq {
			n.LifecycleSeq = in.Seq
		}
		return Decision{Outcome: Write, Next: n}
	}
	cmp := 1 // B versus S; B is newer than no record
	if cur != nil {
		cmp = in.Binding.Compare(cur.Binding)
	}
	removed := cur != nil && cur.State == StateRemoved
	var keepCfg json.RawMessage
	if cur != nil {
		keepCfg = cur.Config
	}

	switch in.Kind {
	case InputAttach:
		// The host's word, in the stream's order, whatever the binding
		// (a tombstone is never revived: a reinstall has a new uuid).
		if removed {
			return Decision{Outcome: Ignore}
		}
		anchor = in.Binding
		if in.Enabled {
			return next(StateActive, in.Binding, in.Config, true)
		}
		return next(StateDisabled, in.Binding, in.Config, false)

	case InputInvocation:
		switch {
		case cur == nil || removed || cmp < 0 || cmp > 0 && !withinLead(in.Binding, cur):
			return Decision{Outcome: Refuse}
		case cmp > 0:
			return next(StateActive, in.Binding, in.Config, true)
		case cur.State == StateActive:
			return Decision{Outcome: Serve}
		}
		return Decision{Outcome: Refuse}

	case InputRevoke:
		if isRemoval(in.Reason) {
			if removed {
				return Decision{Outcome: Ignore}
			}
			b := in.Binding
			if cur != nil && cmp < 0 {
				b = cur.Binding
			}
			d := next(StateRemoved, b, nil, false)
			d.Purge = cur != nil
			return d
		}
		// A late revoke of an older revision must not stop the newer
		// one's work.
		if removed || cmp < 0 {
			return Decision{Outcome: Ignore}
		}
		switch in.Reason {
		case wire.ReasonDisable:
			return next(StateDisabled, in.Binding, keepCfg, false)
		case wire.ReasonUpgrade, wire.ReasonConfigChange:
			enabled := cur != nil && cur.Enabled
			return next(StateSuperseded, in.Binding, keepCfg, enabled)
		}
		return Decision{Outcome: Ignore}

	case InputExpire:
		// Decided on the stored record, not the caller's view, so an attach
		// that refreshed the record since the view was read wins.
		if cur == nil || removed || cur.UpdatedAt.IsZero() || !cur.UpdatedAt.Before(in.Before) {
			return Decision{Outcome: Ignore}
		}
		d := next(StateRemoved, cur.Binding, nil, false)
		d.Purge = true
		return d

	case InputStale:
		// Only a refusal of the binding the authority holds now counts: a
		// refusal of an older (or any other) binding says nothing about
		// the current one.
		if cur == nil || cur.State != StateActive || cmp != 0 {
			return Decision{Outcome: Ignore}
		}
		return next(StateSuperseded, cur.Binding, keepCfg, cur.Enabled)
	}
	return Decision{Outcome: Ignore}
}

// AuthorityStore reads and writes authority records by compare-and-set,
// sealing the configured secret fields of the config.
type AuthorityStore struct {
	kv           jetstream.KeyValue
	keyring      *Keyring
	secretFields []string
	now          func() time.Time
}

// NewAuthorityStore returns a store over the plugin's bucket. keyring may
// be nil only when secretFields is empty.
func NewAuthorityStore(kv jetstream.KeyValue, keyring *Keyring, secretFields []string, now func() time.Time) *AuthorityStore {
	if now == nil {
		now = time.Now
	}
	return &AuthorityStore{kv: kv, keyring: keyring, secretFields: secretFields, now: now}
}

// Get returns the stored authority of sc, or nil when there is none.
func (s *AuthorityStore) Get(ctx context.Context, sc binding.Scope) (*Authority, error) {
	ctx, cancel := withDefault(ctx)
	defer cancel()
	e, err := s.kv.Get(ctx, AuthorityKey(sc))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bus: read authority: %w", err)
	}
	return decodeAuthority(e.Value())
}

func decodeAuthority(b []byte) (*Authority, error) {
	var a Authority
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("bus: decode authority: %w", err)
	}
	return &a, nil
}

// Apply runs Transition against the stored record and stores the result by
// compare-and-set, retrying on conflict. It returns the record before the
// change (nil if none) and the decision; when the decision is Write, Next
// holds the stored (sealed) record.
func (s *AuthorityStore) Apply(ctx context.Context, sc binding.Scope, in Input) (prev *Authority, d Decision, err error) {
	var rev uint64
	rev, _, err = casUpdate(ctx, s.kv, AuthorityKey(sc), func(cur []byte, exists bool) ([]byte, error) {
		prev = nil
		if exists {
			a, err := decodeAuthority(cur)
			if err != nil {
				return nil, err
			}
			prev = a
		}
		d = Transition(prev, in, s.now())
		if d.Outcome != Write {
			return nil, ErrNoChange
		}
		cfg := d.Next.Config
		if in.Kind == InputRevoke || in.Kind == InputStale {
			// the stored config, already sealed: reseal under the current key
			opened, err := s.openConfig(sc, cfg)
			if err != nil {
				return nil, err
			}
			cfg = opened
		}
		sealed, err := s.sealConfig(sc, cfg)
		if err != nil {
			return nil, err
		}
		d.Next.Config = sealed
		return json.Marshal(d.Next)
	})
	if err == nil && d.Outcome == Write {
		d.Revision = rev
	}
	return prev, d, err
}

// OpenConfig returns a's config with its secret fields opened.
func (s *AuthorityStore) OpenConfig(sc binding.Scope, a *Authority) (json.RawMessage, error) {
	if a == nil {
		return nil, nil
	}
	return s.openConfig(sc, a.Config)
}

func (s *AuthorityStore) sealConfig(sc binding.Scope, cfg json.RawMessage) (json.RawMessage, error) {
	return s.mapSecrets(cfg, func(v string) (string, error) {
		if v == "" || IsSealed(v) {
			return v, nil
		}
		return s.keyring.Seal(sc, []byte(v))
	})
}

func (s *AuthorityStore) openConfig(sc binding.Scope, cfg json.RawMessage) (json.RawMessage, error) {
	return s.mapSecrets(cfg, func(v string) (string, error) {
		if !IsSealed(v) {
			return v, nil
		}
		pt, err := s.keyring.Open(sc, v)
		return string(pt), err
	})
}

// mapSecrets rewrites the top-level string fields named secret.
func (s *AuthorityStore) mapSecrets(cfg json.RawMessage, f func(string) (string, error)) (json.RawMessage, error) {
	if len(cfg) == 0 || len(s.secretFields) == 0 {
		return cfg, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(cfg, &m); err != nil {
		return nil, fmt.Errorf("bus: config is not an object: %w", err)
	}
	changed := false
	for _, name := range s.secretFields {
		raw, ok := m[name]
		if !ok {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) != nil {
			continue // not a string: the service's normalisation reports it
		}
		if s.keyring == nil {
			return nil, fmt.Errorf("bus: secret field %q but no state keyring", name)
		}
		nv, err := f(v)
		if err != nil {
			return nil, err
		}
		if nv != v {
			enc, _ := json.Marshal(nv)
			m[name] = enc
			changed = true
		}
	}
	if !changed {
		return cfg, nil
	}
	return json.Marshal(m)
}

// AuthorityView is the in-process copy of every scope's authority, fed by
// a KV watch, so the invocation path never waits on storage.
type AuthorityView struct {
	mu      sync.RWMutex
	m       map[binding.Scope]viewed
	ready   chan struct{}
	readyOK sync.Once
	notify  func(binding.Scope, Authority)
}

type viewed struct {
	a   Authority
	rev uint64
}

func newAuthorityView(notify func(binding.Scope, Authority)) *AuthorityView {
	return &AuthorityView{m: make(map[binding.Scope]viewed), ready: make(chan struct{}), notify: notify}
}

// Lookup returns the authority of sc as last seen.
func (v *AuthorityView) Lookup(sc binding.Scope) (Authority, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	e, ok := v.m[sc]
	return e.a, ok
}

// Ready reports whether the initial values have been loaded.
func (v *AuthorityView) Ready() bool {
	select {
	case <-v.ready:
		return true
	default:
		return false
	}
}

// Scopes returns the scopes whose authority is in state st.
func (v *AuthorityView) Scopes(st State) []binding.Scope {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []binding.Scope
	for sc, e := range v.m {
		if e.a.State == st {
			out = append(out, sc)
		}
	}
	return out
}

// apply stores a if rev is newer than what the view holds.
func (v *AuthorityView) apply(sc binding.Scope, a Authority, rev uint64) {
	v.mu.Lock()
	cur, ok := v.m[sc]
	if ok && rev != 0 && cur.rev >= rev {
		v.mu.Unlock()
		return
	}
	v.m[sc] = viewed{a: a, rev: rev}
	v.mu.Unlock()
	if v.notify != nil && (!ok || cur.a.State != a.State || cur.a.Binding != a.Binding) {
		v.notify(sc, a)
	}
}

// entry returns what the view holds for sc, with its revision.
func (v *AuthorityView) entry(sc binding.Scope) (viewed, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	e, ok := v.m[sc]
	return e, ok
}

// revert undoes an apply of a not yet stored authority (rev 0) whose
// write failed, unless something has replaced it since: prev is what the
// view held before (had false: nothing).
func (v *AuthorityView) revert(sc binding.Scope, unstored Authority, prev viewed, had bool) {
	v.mu.Lock()
	cur, ok := v.m[sc]
	if !ok || cur.rev != 0 || cur.a.Binding != unstored.Binding || cur.a.State != unstored.State {
		v.mu.Unlock()
		return
	}
	if had {
		v.m[sc] = prev
	} else {
		delete(v.m, sc)
	}
	v.mu.Unlock()
	if v.notify != nil && had && (prev.a.State != unstored.State || prev.a.Binding != unstored.Binding) {
		v.notify(sc, prev.a)
	}
}

func (v *AuthorityView) remove(sc binding.Scope) {
	v.mu.Lock()
	delete(v.m, sc)
	v.mu.Unlock()
}

// snapshot returns a copy of every scope's authority.
func (v *AuthorityView) snapshot() map[binding.Scope]Authority {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := make(map[binding.Scope]Authority, len(v.m))
	for sc, e := range v.m {
		out[sc] = e.a
	}
	return out
}

func (v *AuthorityView) markReady() { v.readyOK.Do(func() { close(v.ready) }) }

// watch feeds the view until ctx is done.
func (v *AuthorityView) watch(ctx context.Context, kv jetstream.KeyValue, onErr func(error)) (stop func(), err error) {
	w, err := kv.Watch(ctx, AuthorityKeysFilter)
	if err != nil {
		return nil, fmt.Errorf("bus: watch authorities: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.Updates() {
			if e == nil {
				v.markReady()
				continue
			}
			sc, _, _, err := ParseKey(e.Key())
			if err != nil {
				continue
			}
			switch e.Operation() {
			case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
				v.remove(sc)
			default:
				a, err := decodeAuthority(e.Value())
				if err != nil {
					onErr(err)
					continue
				}
				v.apply(sc, *a, e.Revision())
			}
		}
	}()
	return func() {
		_ = w.Stop()
		<-done
	}, nil
}
