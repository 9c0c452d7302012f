package lbpkg

import (
	"regexp"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// fill fills a generated template the way the Python core does
// (str.format with named fields).
func fill(tmpl string, fields map[string]string) string {
	for k, v := range fields {
		tmpl = strings.ReplaceAll(tmpl, "{"+k+"}", v)
	}
	return tmpl
}

// TestProtocolMatchesBus checks that every generated template, filled as
// the Python core fills it, gives exactly the subject pkg/bus builds, so
// the two sides cannot drift.
func TestProtocolMatchesBus(t *testing.T) {
	p, err := buildProtocol([]string{"nats_url"})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := binding.NewScope("i-1", "w_2", "n3")
	if err != nil {
		t.Fatal(err)
	}
	s := wire.Subjects{Prefix: "lb"}
	f := map[string]string{"prefix": "lb", "plugin": "schenotify", "scope": sc.String()}
	for _, ep := range wire.Endpoints {
		f["endpoint"] = p.Endpoints[string(ep)]
		if got, want := fill(p.Subjects["invocation"], f), s.Invocation("schenotify", ep, sc); got != want {
			t.Errorf("invocation %s: %s, bus %s", ep, got, want)
		}
	}
	f["kind"] = p.Attach
	if got, want := fill(p.Subjects["lifecycle"], f), s.Lifecycle("schenotify", wire.LifecycleAttach, sc); got != want {
		t.Errorf("lifecycle: %s, bus %s", got, want)
	}
	for _, a := range p.HostActions {
		f["action"] = a
		got := fill(p.Subjects["host"], f)
		if want := s.HostAction(a, sc); got != want {
			t.Errorf("host %s: %s, bus %s", a, got, want)
		}
		if _, parsed, err := s.ParseHostAction(got); err != nil || parsed != sc {
			t.Errorf("host %s does not parse back: %v", a, err)
		}
	}
	if got := fill(p.Subjects["host_serve"], f); got != "lb.host.*."+sc.String() {
		t.Errorf("host_serve %s", got)
	}
	if got := fill(p.Inbox["user"], map[string]string{"user": "pkg"}); got != wire.InboxPrefixFor("pkg") {
		t.Errorf("inbox %s", got)
	}
	// a claimable tenant credential is bound to the instance the name holds
	name := fill(p.ConnName, map[string]string{"plugin": "schenotify", "scope": sc.String()})
	if parsed, err := wire.ParsePackageConnName(name); err != nil || parsed != sc {
		t.Errorf("connect_name %q does not parse back to %s: %v", name, sc, err)
	}
	if p.BindingReasons[wire.ReasonNotAttached] != wire.ErrNotAttached.Reason {
		t.Errorf("binding reasons: %v", p.BindingReasons)
	}
	if p.Headers["invocation_id"] != wire.HeaderInvocationID || p.ErrorWords["403"] != wire.ErrBindingRefused.Word || p.Stream != wire.LifecycleStream {
		t.Errorf("headers/words/stream: %v %v %s", p.Headers, p.ErrorWords, p.Stream)
	}
}

// TestScopeTokenPattern checks the pattern the Python core validates
// tokens with against binding.CheckToken, the one rule.
func TestScopeTokenPattern(t *testing.T) {
	p, err := buildProtocol(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Python's re.fullmatch and Go's anchored pattern agree on this syntax.
	re := regexp.MustCompile(p.ScopeToken)
	cases := []string{"", "a", "A-b_9", strings.Repeat("x", 64), strings.Repeat("x", 65), "a.b", "*", ">", "a b", "é", "a\n", "0"}
	for i := 0; i < 256; i++ {
		cases = append(cases, "t"+string(rune(i)))
	}
	for _, c := range cases {
		if got, want := re.MatchString(c), binding.CheckToken(c) == nil; got != want {
			t.Errorf("%q: pattern %v, CheckToken %v", c, got, want)
		}
	}
}
