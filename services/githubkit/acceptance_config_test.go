package githubkit_test

import (
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// TestAT12Warnings checks that replaced config values are logged (field and
// reason, never the value or the token) when the stored config changes.
func TestAT12Warnings(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", map[string]any{"language": "en_US", "github_token": "ghp_WarnSecret", "github_api_url": h.fake.URL,
		"poll_interval": "abc", "max_events_per_push": 99})
	h.attach(a, true)
	logs := h.logs.String()
	for _, want := range []string{`"field":"poll_interval"`, `"field":"max_events_per_push"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "ghp_WarnSecret") || strings.Contains(logs, "abc") {
		t.Fatalf("logs hold a config value:\n%s", logs)
	}
	if h.metric("githubkit_config_warnings_total", map[string]string{"field": "poll_interval"}) != 1 {
		t.Fatal("warning not counted")
	}
	// the same config again: no new warning
	a.b.RuntimeRevision = 2
	h.attach(a, true)
	if h.metric("githubkit_config_warnings_total", map[string]string{"field": "poll_interval"}) != 1 {
		t.Fatal("unchanged config warned again")
	}
	// the command sees the normalised values: 120 s and a cap of 30
	h.addEvents(hw, 100, "watch")
	if got := h.cmd(a, "sub "+hw); !strings.Contains(got, "every 120 s") {
		t.Fatalf("sub.ok %q", got)
	}
}

// TestAT19ToolCodes maps each GitHub failure to its tool code.
func TestAT19ToolCodes(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	cases := []struct {
		fault fakegithub.Fault
		code  string
	}{
		{fakegithub.Fault{Status: 404}, `"code":"not_found","message":"Not Found","status":404`},
		{fakegithub.Fault{Status: 410}, `"code":"not_found"`},
		{fakegithub.Fault{Status: 401, Body: `{"message":"Bad credentials"}`}, `"code":"unauthorized","message":"Bad credentials","status":401`},
		{fakegithub.Fault{Status: 403, Body: `{"message":"Forbidden"}`}, `"code":"forbidden"`},
		{fakegithub.Fault{Status: 403, Header: mkHdr("X-RateLimit-Remaining", "0")}, `"code":"rate_limited"`},
		{fakegithub.Fault{Status: 422, Body: `{"message":"Validation Failed"}`}, `"code":"upstream","message":"Validation Failed","status":422`},
		{fakegithub.Fault{Status: 500, Body: "<html>boom</html>"}, `"code":"upstream","message":"Internal Server Error","status":500`},
	}
	for _, c := range cases {
		f := c.fault
		f.Times = 1
		h.fake.Inject(f)
		res, err := h.tool(a, githubkit.ToolRepo, map[string]any{"repo": hw})
		if err != nil || !strings.Contains(string(res), c.code) {
			t.Errorf("%d: %s %v, want %s", c.fault.Status, res, err, c.code)
		}
	}
}
