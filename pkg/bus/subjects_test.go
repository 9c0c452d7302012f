package bus_test

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// TestInternalShard checks the shard filter against the server's own
// subject matching: it takes every scope's subjects of its shard, and none
// of another shard, of another kind or of the unsharded form.
func TestInternalShard(t *testing.T) {
	s := wire.Subjects{Prefix: "lb"}
	a, _ := binding.ParseScope("i1.w1.n1")
	b, _ := binding.ParseScope("i2.w-2.n_2")
	filter := s.InternalShard("takeover", "history", "7")
	if want := "lb.takeover.history.*.*.*.7.>"; filter != want {
		t.Fatalf("filter %q, want %q", filter, want)
	}
	build := func(kind string, sc binding.Scope, ids ...string) string {
		t.Helper()
		subj, err := s.Internal("takeover", kind, sc, ids...)
		if err != nil {
			t.Fatal(err)
		}
		return subj
	}
	for _, c := range []struct {
		subject string
		match   bool
	}{
		{build("history", a, "7", "sid1"), true},
		{build("history", b, "7", "sid2"), true},
		{build("history", a, "8", "sid1"), false},
		{build("history", a, "sid1"), false},
		{build("timer", a, "7", "sid1"), false},
		{"langbot.takeover.history.i1.w1.n1.7.sid1", false},
	} {
		if got := server.SubjectMatchesFilter(c.subject, filter); got != c.match {
			t.Errorf("%s matches %s: %v, want %v", c.subject, filter, got, c.match)
		}
	}
	// the shards of one kind never overlap, so each can be its own stream
	if server.SubjectsCollide(filter, s.InternalShard("takeover", "history", "8")) {
		t.Error("shard filters 7 and 8 collide")
	}
}

// TestGrantWildcards checks the wildcards the accounts file grants
// (PluginAll, InvocationsAll, InternalRoot) against the server's own
// subject matching: each takes what its user needs and nothing of
// another plugin or another subject space.
func TestGrantWildcards(t *testing.T) {
	s := wire.Subjects{Prefix: "lb"}
	sc, _ := binding.ParseScope("i1.w1.n1")
	own, _ := s.Internal("takeover", "live", sc)
	other, _ := s.Internal("githubkit", "sched", sc)
	inv := s.Invocation("takeover", wire.EndpointCommand, sc)
	otherInv := s.Invocation("githubkit", wire.EndpointCommand, sc)
	host := s.HostAction(wire.ActionSendMessage, sc)
	for _, c := range []struct {
		filter  string
		subject string
		match   bool
	}{
		{s.PluginAll("takeover"), inv, true},
		{s.PluginAll("takeover"), otherInv, false},
		{s.PluginAll("takeover"), own, false},
		{s.InvocationsAll(), inv, true},
		{s.InvocationsAll(), otherInv, true},
		{s.InvocationsAll(), own, false},
		{s.InvocationsAll(), host, false},
		{s.InternalRoot("takeover"), own, true},
		{s.InternalRoot("takeover"), other, false},
		{s.InternalRoot("takeover"), inv, false},
		{s.InternalRoot("takeover"), "langbot.takeover.live.i1.w1.n1", false},
	} {
		if got := server.SubjectMatchesFilter(c.subject, c.filter); got != c.match {
			t.Errorf("%s matches %s: %v, want %v", c.subject, c.filter, got, c.match)
		}
	}
}
