package bus

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

func bnd(gen, rev int64) binding.Binding {
	return binding.Binding{InstanceUUID: "i", WorkspaceUUID: "w", InstallationUUID: "n", PlacementGeneration: gen, RuntimeRevision: rev, ArtifactDigest: "d"}
}

// TestTransitionTable walks every cell of the table in DESIGN 3.3.
func TestTransitionTable(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	S := bnd(1, 5)
	newer, equal, older := bnd(1, 6), bnd(1, 5), bnd(1, 4)
	stored := func(st State) *Authority {
		return &Authority{Binding: S, State: st, Enabled: st == StateActive, LifecycleSeq: 10, Config: json.RawMessage(`{"k":"old"}`)}
	}
	type want struct {
		outcome Outcome
		state   State
		purge   bool
	}
	var (
		ignore = want{outcome: Ignore}
		serve  = want{outcome: Serve}
		refuse = want{outcome: Refuse}
		to     = func(st State) want { return want{outcome: Write, state: st} }
		purge  = want{outcome: Write, state: StateRemoved, purge: true}
	)
	states := []struct {
		name string
		cur  *Authority
	}{
		{"none", nil}, {"active", stored(StateActive)}, {"disabled", stored(StateDisabled)},
		{"superseded", stored(StateSuperseded)}, {"removed", stored(StateRemoved)},
	}
	rows := []struct {
		name  string
		in    Input
		cells [5]want // none, active, disabled, superseded, removed
	}{
		{"attach enabled newer", Input{Kind: InputAttach, Binding: newer, Enabled: true, Seq: 11}, [5]want{to(StateActive), to(StateActive), to(StateActive), to(StateActive), ignore}},
		{"attach enabled equal", Input{Kind: InputAttach, Binding: equal, Enabled: true, Seq: 11}, [5]want{to(StateActive), to(StateActive), to(StateActive), to(StateActive), ignore}},
		{"attach disabled equal", Input{Kind: InputAttach, Binding: equal, Enabled: false, Seq: 11}, [5]want{to(StateDisabled), to(StateDisabled), to(StateDisabled), to(StateDisabled), ignore}},
		// attaches are the authority of record, in the stream's order
		{"attach older", Input{Kind: InputAttach, Binding: older, Enabled: true, Seq: 11}, [5]want{to(StateActive), to(StateActive), to(StateActive), to(StateActive), ignore}},
		{"attach disabled older", Input{Kind: InputAttach, Binding: older, Enabled: false, Seq: 11}, [5]want{to(StateDisabled), to(StateDisabled), to(StateDisabled), to(StateDisabled), ignore}},
		// an invocation never creates an authority (not_attached)
		{"invocation newer", Input{Kind: InputInvocation, Binding: newer}, [5]want{refuse, to(StateActive), to(StateActive), to(StateActive), refuse}},
		{"invocation equal", Input{Kind: InputInvocation, Binding: equal}, [5]want{refuse, serve, refuse, refuse, refuse}},
		{"invocation older", Input{Kind: InputInvocation, Binding: older}, [5]want{refuse, refuse, refuse, refuse, refuse}},
		{"invocation past the lead", Input{Kind: InputInvocation, Binding: bnd(1, 5+MaxInvocationLead+1)}, [5]want{refuse, refuse, refuse, refuse, refuse}},
		{"invocation at the lead", Input{Kind: InputInvocation, Binding: bnd(1, 5+MaxInvocationLead)}, [5]want{refuse, to(StateActive), to(StateActive), to(StateActive), refuse}},
		{"invocation two generations on", Input{Kind: InputInvocation, Binding: bnd(3, 1)}, [5]want{refuse, refuse, refuse, refuse, refuse}},
		{"invocation next generation", Input{Kind: InputInvocation, Binding: bnd(2, 1)}, [5]want{refuse, to(StateActive), to(StateActive), to(StateActive), refuse}},
		{"revoke disable equal", Input{Kind: InputRevoke, Binding: equal, Reason: wire.ReasonDisable, Seq: 11}, [5]want{to(StateDisabled), to(StateDisabled), to(StateDisabled), to(StateDisabled), ignore}},
		{"revoke upgrade equal", Input{Kind: InputRevoke, Binding: equal, Reason: wire.ReasonUpgrade, Seq: 11}, [5]want{to(StateSuperseded), to(StateSuperseded), to(StateSuperseded), to(StateSuperseded), ignore}},
		{"revoke config_change newer", Input{Kind: InputRevoke, Binding: newer, Reason: wire.ReasonConfigChange, Seq: 11}, [5]want{to(StateSuperseded), to(StateSuperseded), to(StateSuperseded), to(StateSuperseded), ignore}},
		{"revoke disable older", Input{Kind: InputRevoke, Binding: older, Reason: wire.ReasonDisable, Seq: 11}, [5]want{to(StateDisabled), ignore, ignore, ignore, ignore}},
		{"revoke upgrade older (late revoke)", Input{Kind: InputRevoke, Binding: older, Reason: wire.ReasonUpgrade, Seq: 11}, [5]want{to(StateSuperseded), ignore, ignore, ignore, ignore}},
		{"revoke uninstall older", Input{Kind: InputRevoke, Binding: older, Reason: wire.ReasonUninstall, Seq: 11}, [5]want{to(StateRemoved), purge, purge, purge, ignore}},
		{"revoke workspace_removed newer", Input{Kind: InputRevoke, Binding: newer, Reason: wire.ReasonWorkspaceRemoved, Seq: 11}, [5]want{to(StateRemoved), purge, purge, purge, ignore}},
	}
	for _, row := range rows {
		for i, st := range states {
			t.Run(fmt.Sprintf("%s/%s", row.name, st.name), func(t *testing.T) {
				d := Transition(st.cur, row.in, now)
				w := row.cells[i]
				if d.Outcome != w.outcome || d.Purge != w.purge || (w.outcome == Write && d.Next.State != w.state) {
					t.Fatalf("got outcome %v state %q purge %v; want outcome %v state %q purge %v", d.Outcome, d.Next.State, d.Purge, w.outcome, w.state, w.purge)
				}
				if d.Outcome != Write {
					return
				}
				if row.in.Seq != 0 && d.Next.LifecycleSeq != row.in.Seq {
					t.Errorf("lifecycle_seq = %d, want %d", d.Next.LifecycleSeq, row.in.Seq)
				}
				if row.in.Seq == 0 && st.cur != nil && d.Next.LifecycleSeq != st.cur.LifecycleSeq {
					t.Errorf("an invocation changed lifecycle_seq to %d", d.Next.LifecycleSeq)
				}
				if d.Next.State == StateRemoved && d.Next.Config != nil {
					t.Errorf("tombstone keeps config %s", d.Next.Config)
				}
				if !d.Next.UpdatedAt.Equal(now) {
					t.Errorf("updated_at = %v", d.Next.UpdatedAt)
				}
			})
		}
	}
}

// TestTransitionSequenceRule: a lifecycle message at or below the stored
// sequence is ignored whatever it says.
func TestTransitionSequenceRule(t *testing.T) {
	cur := &Authority{Binding: bnd(1, 5), State: StateActive, LifecycleSeq: 10}
	for _, seq := range []uint64{1, 9, 10} {
		for _, in := range []Input{
			{Kind: InputAttach, Binding: bnd(1, 9), Enabled: false, Seq: seq},
			{Kind: InputRevoke, Binding: bnd(1, 9), Reason: wire.ReasonUninstall, Seq: seq},
		} {
			if d := Transition(cur, in, time.Now()); d.Outcome != Ignore {
				t.Errorf("seq %d kind %d: outcome %v, want Ignore", seq, in.Kind, d.Outcome)
			}
		}
	}
}

func TestTransitionStale(t *testing.T) {
	cur := &Authority{Binding: bnd(1, 5), State: StateActive}
	if d := Transition(cur, Input{Kind: InputStale, Binding: bnd(1, 5)}, time.Now()); d.Outcome != Write || d.Next.State != StateSuperseded {
		t.Fatalf("stale equal binding: %+v", d)
	}
	if d := Transition(cur, Input{Kind: InputStale, Binding: bnd(1, 4)}, time.Now()); d.Outcome != Ignore {
		t.Fatalf("a refusal of an older binding must not touch the newer authority: %+v", d)
	}
}

// TestTransitionExpire is the retention rule's decision: only a record last
// written before the cutoff is removed, and the tombstone keeps its binding
// and sequence but no config.
func TestTransitionExpire(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	cutoff := now.Add(-30 * 24 * time.Hour)
	old, fresh := cutoff.Add(-time.Second), cutoff.Add(time.Second)
	rec := func(st State, at time.Time) *Authority {
		return &Authority{Binding: bnd(1, 5), State: st, Enabled: true, LifecycleSeq: 7, Config: json.RawMessage(`{"k":"v"}`), UpdatedAt: at}
	}
	in := Input{Kind: InputExpire, Before: cutoff}
	for _, st := range []State{StateActive, StateDisabled, StateSuperseded} {
		d := Transition(rec(st, old), in, now)
		if d.Outcome != Write || d.Next.State != StateRemoved || !d.Purge || d.Next.Config != nil ||
			d.Next.Binding != bnd(1, 5) || d.Next.LifecycleSeq != 7 || !d.Next.UpdatedAt.Equal(now) {
			t.Errorf("%s last written before the cutoff: %+v", st, d)
		}
	}
	for name, cur := range map[string]*Authority{
		"no record":            nil,
		"refreshed":            rec(StateActive, fresh),
		"exactly at cutoff":    rec(StateActive, cutoff),
		"already removed":      rec(StateRemoved, old),
		"without a updated_at": rec(StateActive, time.Time{}),
	} {
		if d := Transition(cur, in, now); d.Outcome != Ignore {
			t.Errorf("%s: %+v, want Ignore", name, d)
		}
	}
}

// fold applies inputs in order, as the store does, and returns the last
// decision and the authority left.
func fold(t *testing.T, cur *Authority, ins ...Input) (*Authority, Decision) {
	t.Helper()
	var d Decision
	for _, in := range ins {
		d = Transition(cur, in, time.Unix(1_800_000_000, 0))
		if d.Outcome == Write {
			n := d.Next
			cur = &n
		}
	}
	return cur, d
}

// TestTransitionNoLockout is issue 26's lockout: no value an attach or an
// invocation carries leaves the installation out of reach of its own
// worker's next attach, and invocations cannot ratchet the authority past
// the attach of record.
func TestTransitionNoLockout(t *testing.T) {
	real := bnd(1, 5)
	attach := func(b binding.Binding, enabled bool, seq uint64) Input {
		return Input{Kind: InputAttach, Binding: b, Enabled: enabled, Seq: seq}
	}
	inv := func(b binding.Binding) Input { return Input{Kind: InputInvocation, Binding: b} }
	start, _ := fold(t, nil, attach(real, true, 1))

	t.Run("attach at revision 2^63-1, disabled", func(t *testing.T) {
		cur, _ := fold(t, start, attach(bnd(1, math.MaxInt64), false, 2))
		if cur.State != StateDisabled {
			t.Fatalf("the absurd attach was not applied as the host's word: %+v", cur)
		}
		if _, d := fold(t, cur, inv(real)); d.Outcome != Refuse {
			t.Fatalf("before the real worker's attach: %v", d.Outcome)
		}
		cur, _ = fold(t, cur, attach(real, true, 3))
		if cur.State != StateActive || cur.Binding != real || cur.Attached != real {
			t.Fatalf("the real worker's refreshed attach did not bring it back: %+v", cur)
		}
		if _, d := fold(t, cur, inv(real)); d.Outcome != Serve {
			t.Fatalf("the real worker's invocation after its attach: %v", d.Outcome)
		}
	})
	t.Run("attach at generation 2^63-1", func(t *testing.T) {
		cur, _ := fold(t, start, attach(bnd(math.MaxInt64, math.MaxInt64), true, 2), attach(real, true, 3))
		if cur.State != StateActive || cur.Binding != real {
			t.Fatalf("%+v", cur)
		}
	})
	t.Run("invocation 1024 ahead", func(t *testing.T) {
		if _, d := fold(t, start, inv(bnd(1, 5+1024))); d.Outcome != Refuse {
			t.Fatalf("got %v, want Refuse", d.Outcome)
		}
	})
	t.Run("invocations cannot ratchet", func(t *testing.T) {
		// each step within the lead of the binding before it, but the
		// lead is measured from the attach
		cur, _ := fold(t, start, inv(bnd(1, 5+MaxInvocationLead)))
		if cur.Binding != bnd(1, 5+MaxInvocationLead) || cur.Attached != real {
			t.Fatalf("first step: %+v", cur)
		}
		if _, d := fold(t, cur, inv(bnd(1, 5+MaxInvocationLead+1))); d.Outcome != Refuse {
			t.Fatalf("second step: %v, want Refuse", d.Outcome)
		}
		// the real worker's next attach brings its own binding back
		cur, _ = fold(t, cur, attach(real, true, 2))
		if cur.Binding != real || cur.State != StateActive {
			t.Fatalf("after the real attach: %+v", cur)
		}
	})
	t.Run("a record without attached anchors at its binding", func(t *testing.T) {
		old := &Authority{Binding: real, State: StateActive, LifecycleSeq: 1}
		cur, _ := fold(t, old, inv(bnd(1, 6)))
		if cur.Attached != real {
			t.Fatalf("attached = %+v, want the old binding", cur.Attached)
		}
		if _, d := fold(t, cur, inv(bnd(1, 5+MaxInvocationLead+1))); d.Outcome != Refuse {
			t.Fatalf("%v", d.Outcome)
		}
	})
	t.Run("revoke keeps the attach of record", func(t *testing.T) {
		cur, _ := fold(t, start, Input{Kind: InputRevoke, Binding: bnd(1, 6), Reason: wire.ReasonConfigChange, Seq: 2})
		if cur.Attached != real || cur.State != StateSuperseded {
			t.Fatalf("%+v", cur)
		}
	})
}
