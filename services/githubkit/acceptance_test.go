package githubkit_test

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// twoInstalls sets up AT-01's installations A and B with their repos.
func twoInstalls(t *testing.T) (*harness, *inst, *inst) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "token-a", 120))
	a.cfg["max_events_per_push"] = 5
	b := newInst(t, "b", h.baseConfig("zh_Hans", "token-b", 300))
	b.cfg["max_events_per_push"] = 2
	h.fake.AddRepo("owner/repo-a", 0)
	h.fake.AddRepo("owner/repo-b", 0)
	h.addEvents("owner/repo-a", 100, "push_full")
	h.addEvents("owner/repo-b", 100, "push_full")
	h.attach(a, true)
	h.attach(b, true)
	return h, a, b
}

func TestAT01Isolation(t *testing.T) {
	h, a, b := twoInstalls(t)
	if got := h.cmd(a, "sub owner/repo-a"); !strings.Contains(got, "owner/repo-a") || !strings.Contains(got, "120") {
		t.Fatalf("A sub: %q", got)
	}
	h.fake.ResetRequests()
	if got := h.cmd(b, "sub owner/repo-b"); !strings.Contains(got, "owner/repo-b") || !strings.Contains(got, "300") {
		t.Fatalf("B sub: %q", got)
	}
	for _, r := range h.fake.Requests() {
		if r.Authorization != "Bearer token-b" {
			t.Fatalf("B's request carries %q", r.Authorization)
		}
	}
	subsA, subsB := h.cmd(a, "subs"), h.cmd(b, "subs")
	if !strings.Contains(subsA, "owner/repo-a") || strings.Contains(subsA, "repo-b") {
		t.Fatalf("A subs: %q", subsA)
	}
	if !strings.Contains(subsB, "owner/repo-b") || strings.Contains(subsB, "repo-a") {
		t.Fatalf("B subs: %q", subsB)
	}
	if got, want := h.schedule(a, "owner/repo-a"), "@every 2m0s"; got != want {
		t.Errorf("A schedule %q, want %q", got, want)
	}
	if got, want := h.schedule(b, "owner/repo-b"), "@every 5m0s"; got != want {
		t.Errorf("B schedule %q, want %q", got, want)
	}
	// An empty token sends no Authorization header.
	anon := newInst(t, "anon", h.baseConfig("en_US", "", 120))
	h.fake.ResetRequests()
	h.cmd(anon, "repo octocat/Hello-World")
	for _, r := range h.fake.Requests() {
		if r.Authorization != "" {
			t.Fatalf("anonymous request carries %q", r.Authorization)
		}
	}
}

func TestAT02PushOnlyToOwner(t *testing.T) {
	h, a, b := twoInstalls(t)
	h.cmd(a, "sub owner/repo-a")
	h.cmd(b, "sub owner/repo-b")
	h.addEvents("owner/repo-a", 101, "push_full")
	h.fake.ResetRequests()
	h.fire(a, "owner/repo-a")
	h.fire(b, "owner/repo-b")
	sends := h.sends()
	if len(sends) != 1 {
		t.Fatalf("%d sends, want 1", len(sends))
	}
	s := sends[0]
	m := s.SendMessage()
	if s.Scope != a.sc || m.TargetID != "session-a" || m.TargetType != "group" || m.BotUUID != "bot-a" || s.Request.Binding != a.b {
		t.Fatalf("send %+v %+v", s, m)
	}
	if !strings.Contains(m.MessageChain[0].Text, "owner/repo-a") || !strings.Contains(m.MessageChain[0].Text, "pushed 2 new commits") {
		t.Fatalf("text %q", m.MessageChain[0].Text)
	}
	if !strings.HasPrefix(s.IdempotencyKey, "githubkit:"+a.sc.String()+":") {
		t.Fatalf("idempotency key %q", s.IdempotencyKey)
	}
	for _, r := range h.requestsTo("/repos/owner/repo-a/events") {
		if r.Authorization != "Bearer token-a" {
			t.Fatalf("repo-a events fetched with %q", r.Authorization)
		}
	}
	if r := h.record(a, "owner/repo-a"); *r.Head != "101" || *r.Subscribers[0].Cursor != "101" {
		t.Fatalf("record %+v", r)
	}
}

func TestAT05KeyLayout(t *testing.T) {
	h, a, b := twoInstalls(t)
	h.cmd(a, "sub owner/repo-a")
	h.cmd(b, "sub Owner/Repo-B push")
	for _, k := range h.keys(bus.Bucket(githubkit.Plugin)) {
		ok := false
		for _, in := range []*inst{a, b} {
			if k == in.sc.String()+".authority" {
				ok = true
			}
			if rest, found := strings.CutPrefix(k, in.sc.String()+".repo."); found {
				dec, err := base64.RawURLEncoding.DecodeString(rest)
				ok = err == nil && string(dec) == strings.ToLower(string(dec))
			}
		}
		if !ok {
			t.Errorf("unexpected key %q", k)
		}
	}
	dedupe := h.keys(bus.DedupeBucket(githubkit.Plugin))
	if len(dedupe) != 2 {
		t.Errorf("dedupe keys %v, want 2 (two subs)", dedupe)
	}
	for _, k := range dedupe {
		parts := strings.Split(k, ".")
		if len(parts) != 5 || parts[3] != "inv" || len(parts[4]) != 32 {
			t.Errorf("dedupe key %q", k)
		}
	}
	st, err := h.js.Stream(context.Background(), githubkit.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background(), jetstreamSubjects())
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for s := range info.State.Subjects {
		subjects = append(subjects, s)
	}
	slices.Sort(subjects)
	want := []string{h.schedSubject(a.sc, "owner/repo-a"), h.schedSubject(b.sc, "owner/repo-b")}
	slices.Sort(want)
	if !slices.Equal(subjects, want) {
		t.Fatalf("stream subjects %v, want %v", subjects, want)
	}
}
