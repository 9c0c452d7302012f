package githubkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
)

func TestAT03RevocationPausesOnlyOwner(t *testing.T) {
	h, a, b := twoInstalls(t)
	h.cmd(a, "sub owner/repo-a")
	h.cmd(b, "sub owner/repo-b")
	h.revoke(a, a.b, wire.ReasonDisable)
	h.addEvents("owner/repo-a", 101, "push_full")
	h.addEvents("owner/repo-b", 101, "release_full")
	h.fake.ResetRequests()
	h.fire(a, "owner/repo-a")
	h.fire(b, "owner/repo-b")
	if n := len(h.requestsTo("/repos/owner/repo-a")); n != 0 {
		t.Fatalf("disabled A made %d GitHub calls", n)
	}
	if s := h.sends(); len(s) != 1 || s[0].Scope != b.sc {
		t.Fatalf("sends %+v", s)
	}
	if h.schedule(a, "owner/repo-a") == "" {
		t.Fatal("disable removed A's schedule")
	}
	// A stale upgrade revoke of an older revision is a no-op after the new
	// revision attached.
	old := a.b
	a.b.RuntimeRevision = 2
	h.attach(a, true)
	h.revoke(a, old, wire.ReasonUpgrade)
	if st := h.authority(a.sc).State; st != bus.StateActive {
		t.Fatalf("state after a stale revoke: %s", st)
	}
	h.fire(a, "owner/repo-a")
	if s := h.sends(); len(s) != 2 || s[1].Scope != a.sc || s[1].Request.Binding != a.b {
		t.Fatalf("after re-attach: %+v", s)
	}
}

// TestAT04StartupNoTenantIO restarts the service over existing state and
// checks nothing tenant-related happens until a fire arrives.
func TestAT04StartupNoTenantIO(t *testing.T) {
	h, a, _ := twoInstalls(t)
	h.cmd(a, "sub owner/repo-a")
	h.stopAll()
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(githubkit.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	revBefore := h.recordRev(a, "owner/repo-a")
	st, _ := kv.Status(context.Background())
	valuesBefore := st.Values()
	h.fake.ResetRequests()
	callsBefore := len(h.host.Calls())
	h.start(githubkit.Config{}, nil)
	h.attach(newInst(t, "unrelated", h.baseConfig("en_US", "x", 120)), true) // a lifecycle message of another scope
	st, _ = kv.Status(context.Background())
	if st.Values() != valuesBefore+1 || h.recordRev(a, "owner/repo-a") != revBefore {
		t.Fatalf("start-up wrote to KV: %d -> %d values (one attach expected)", valuesBefore, st.Values())
	}
	if n := len(h.fake.Requests()); n != 0 {
		t.Fatalf("start-up made %d GitHub calls", n)
	}
	if n := len(h.host.Calls()); n != callsBefore {
		t.Fatalf("start-up made host calls")
	}
}

func TestAT06Refusals(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "t", 120))
	h.attach(a, true)
	a.b.RuntimeRevision = 3
	h.attach(a, true)
	kvValues := func() uint64 {
		kv, _ := h.js.KeyValue(context.Background(), bus.Bucket(githubkit.Plugin))
		st, _ := kv.Status(context.Background())
		return st.Values()
	}
	before := kvValues()
	// unchanged fails when a refused call wrote to KV since before
	unchanged := func(calls string) {
		t.Helper()
		if n := kvValues(); n != before {
			t.Errorf("KV written by %s: %d -> %d values", calls, before, n)
		}
	}
	h.fake.ResetRequests()
	expect := func(name string, err error, code int) {
		t.Helper()
		var e *wire.Error
		if !errors.As(err, &e) || e.Code != code {
			t.Errorf("%s: error %v, want %d", name, err, code)
		}
	}
	older := *a
	older.b.RuntimeRevision = 2
	_, err := h.cmdID(&older, h.newID(), "help")
	expect("older revision", err, 403)

	// subject/body mismatch and malformed bodies
	other := newInst(t, "other", a.cfg)
	subj := h.subj.Invocation(githubkit.Plugin, wire.EndpointCommand, other.sc)
	body, _ := json.Marshal(wire.Request{Binding: a.b, Config: a.config(), Command: &wire.Command{Name: "gh", Params: []string{"repo", "o/r"}}})
	_, err = h.invoker.InvokeRaw(context.Background(), subj, h.newID(), body)
	expect("scope mismatch", err, 403)
	_, err = h.invoker.InvokeRaw(context.Background(), h.subj.Invocation(githubkit.Plugin, wire.EndpointCommand, a.sc), h.newID(), []byte(`{"config":{},"command":{"name":"gh"}}`))
	expect("missing binding", err, 400)
	_, err = h.invoker.InvokeRaw(context.Background(), h.subj.Invocation(githubkit.Plugin, wire.EndpointCommand, a.sc), h.newID(), []byte(`{not json`))
	expect("malformed", err, 400)
	unchanged("an older revision, a scope mismatch and malformed bodies")

	h.revoke(a, a.b, wire.ReasonDisable)
	before = kvValues()
	_, err = h.cmdID(a, h.newID(), "help")
	expect("disabled", err, 403)
	_, err = h.cmdID(a, h.newID(), "repo octocat/Hello-World")
	expect("disabled repo", err, 403)
	unchanged("commands of a disabled installation")
	h.revoke(a, a.b, wire.ReasonUninstall)
	before = kvValues()
	_, err = h.cmdID(a, h.newID(), "help")
	expect("tombstoned", err, 403)
	a.b.RuntimeRevision = 9
	_, err = h.cmdID(a, h.newID(), "sub o/r")
	expect("tombstoned, newer", err, 403)
	if n := len(h.fake.Requests()); n != 0 {
		t.Errorf("%d GitHub calls", n)
	}
	unchanged("commands of a removed installation")
	if n := len(h.sends()); n != 0 {
		t.Errorf("%d sends", n)
	}
	// superseded with the same binding
	c := newInst(t, "c", a.cfg)
	h.attach(c, true)
	h.revoke(c, c.b, wire.ReasonConfigChange)
	_, err = h.cmdID(c, h.newID(), "help")
	expect("superseded", err, 403)
}

func TestAT42Uninstall(t *testing.T) {
	for _, reason := range []string{wire.ReasonUninstall, wire.ReasonWorkspaceRemoved} {
		t.Run(reason, func(t *testing.T) {
			h, a, b := twoInstalls(t)
			h.cmd(a, "sub owner/repo-a")
			h.cmd(b, "sub owner/repo-b")
			// a pending fired message for A
			if _, err := h.js.Publish(context.Background(), h.pollSubject(a.sc, "owner/repo-a"), []byte(`{"v":1}`)); err != nil {
				t.Fatal(err)
			}
			h.revoke(a, a.b, reason)
			if st := h.authority(a.sc); st == nil || st.State != bus.StateRemoved || len(st.Config) != 0 {
				t.Fatalf("tombstone %+v", st)
			}
			for _, k := range append(h.keys(bus.Bucket(githubkit.Plugin)), h.keys(bus.DedupeBucket(githubkit.Plugin))...) {
				if strings.HasPrefix(k, a.sc.String()+".") && k != a.sc.String()+".authority" {
					t.Errorf("key %q survived", k)
				}
			}
			if h.schedule(a, "owner/repo-a") != "" {
				t.Error("A's schedule survived")
			}
			st, _ := h.js.Stream(context.Background(), githubkit.StreamName)
			if _, err := st.GetLastMsgForSubject(context.Background(), h.pollSubject(a.sc, "owner/repo-a")); err == nil {
				t.Error("A's fired message survived")
			}
			if _, err := h.cmdID(a, h.newID(), "subs"); err == nil {
				t.Error("tombstone served an invocation")
			}
			if h.record(b, "owner/repo-b") == nil || h.schedule(b, "owner/repo-b") == "" {
				t.Error("B was touched")
			}
			h.revoke(a, a.b, reason) // redelivered: no-op
			if st := h.authority(a.sc); st.State != bus.StateRemoved {
				t.Fatalf("after a second revoke %+v", st)
			}
		})
	}
}

// TestAT41TokenSealed checks no stored byte holds the token, and rotation.
func TestAT41TokenSealed(t *testing.T) {
	h := newHarness(t)
	r := h.start(githubkit.Config{}, nil)
	secret := "ghp_VerySecretToken123"
	a := newInst(t, "a", h.baseConfig("en_US", secret, 120))
	h.attach(a, true)
	h.cmd(a, "sub octocat/Hello-World")
	h.addEvents("octocat/Hello-World", 100, "push_full")
	h.fire(a, "octocat/Hello-World")
	for _, stream := range []string{"KV_" + bus.Bucket(githubkit.Plugin), "KV_" + bus.DedupeBucket(githubkit.Plugin), githubkit.StreamName, wire.LifecycleStream} {
		if stream == wire.LifecycleStream {
			continue // the host's own message carries the plain config
		}
		st, err := h.js.Stream(context.Background(), stream)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := st.Info(context.Background())
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
			m, err := st.GetMsg(context.Background(), seq)
			if err != nil {
				continue
			}
			if strings.Contains(string(m.Data), secret) || strings.Contains(string(m.Data), "VerySecret") {
				t.Fatalf("%s seq %d holds the token", stream, seq)
			}
		}
	}
	auth := h.authority(a.sc)
	var cfg map[string]any
	_ = json.Unmarshal(auth.Config, &cfg)
	sealed, _ := cfg["github_token"].(string)
	if !strings.HasPrefix(sealed, "v1:k1:") {
		t.Fatalf("sealed value %q", sealed)
	}
	kr, _ := bus.ParseKeyring(h.keyStr)
	other, _ := binding.NewScope("instance-1", "ws-x", "inst-x")
	if _, err := kr.Open(other, sealed); err == nil {
		t.Fatal("sealed value opened under another scope")
	}
	// rotate: prepend a new key; the old value still opens and the next
	// attach reseals under k2.
	h.stop(r)
	k2, _ := bus.NewKeyString("k2")
	h.keyStr = k2 + "," + h.keyStr
	h.start(githubkit.Config{}, nil)
	h.fake.ResetRequests()
	h.addEvents("octocat/Hello-World", 101, "watch")
	h.fire(a, "octocat/Hello-World")
	if reqs := h.requestsTo("/repos/octocat/Hello-World/events"); len(reqs) == 0 || reqs[0].Authorization != "Bearer "+secret {
		t.Fatalf("poll after rotation: %+v", reqs)
	}
	a.cfg["poll_interval"] = 121
	h.attach(a, true)
	_ = json.Unmarshal(h.authority(a.sc).Config, &cfg)
	if s, _ := cfg["github_token"].(string); !strings.HasPrefix(s, "v1:k2:") {
		t.Fatalf("not resealed: %q", s)
	}
}
