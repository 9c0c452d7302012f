package githubkit_test

import (
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// TestHookSecretNeverShownInGroup: "!gh hook" in a group chat refuses with
// a pointer to the private chat, shows no secret and writes nothing (no
// hook, no rotation); the same admin gets the URL and secret in a private
// chat, and "off" still works in the group (issue 33: before, the group
// reply carried the secret every member could read).
func TestHookSecretNeverShownInGroup(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	e.cmd(e.a, "sub "+hw)
	before := e.state()
	got := e.cmd(e.a, "hook "+hw, withPrivilege(2))
	if strings.Contains(got, "Secret") || !strings.Contains(got, "private chat") || !strings.Contains(got, "!gh hook "+hw) {
		t.Fatalf("group reply: %q; want a refusal pointing to the private chat, without a secret", got)
	}
	if after := e.state(); !sameState(before, after) {
		t.Fatalf("the refused group command wrote: %v -> %v", before, after)
	}
	id, secret := e.hook(hw) // in a private chat
	// a second run in the group neither shows nor rotates the secret
	before = e.state()
	if got := e.cmd(e.a, "hook "+hw, withPrivilege(2)); strings.Contains(got, secret) || strings.Contains(got, id) {
		t.Fatalf("group reply shows the webhook: %q", got)
	}
	if after := e.state(); !sameState(before, after) {
		t.Fatalf("the refused group command rotated: %v -> %v", before, after)
	}
	zh := newInst(t, "a", e.baseConfig("zh_Hans", "token-a", 120))
	zh.b.RuntimeRevision = 2
	zh.cfg = e.baseConfig("zh_Hans", "token-a", 120)
	e.attach(zh, true)
	if got := e.cmd(zh, "hook "+hw, withPrivilege(2)); !strings.Contains(got, "私聊") || strings.Contains(got, "Secret") {
		t.Fatalf("zh_Hans group reply: %q", got)
	}
	if got := e.cmd(zh, "hook "+hw+" off", withPrivilege(2)); !strings.Contains(got, hw) || strings.Contains(got, "私聊中显示") {
		t.Fatalf("off in the group: %q", got)
	}
}

// TestHookArgumentsReadOnce: "!gh hook" reads its arguments the same way
// for a repository and an organisation: a user gets the admins-only
// refusal, words after the target other than one "off" get the usage, and
// a group chat gets the private-chat pointer naming the target; none of
// them writes anything.
func TestHookArgumentsReadOnce(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	e.fake.AddOrgEvents("acme", "acme/api", fakegithub.Event("watch", 100))
	e.cmd(e.a, "sub "+hw)
	if got := e.cmd(e.a, "sub acme"); !strings.Contains(got, "organisation acme") {
		t.Fatalf("sub acme: %q", got)
	}
	before := e.state()
	for _, target := range []string{hw, "acme"} {
		for _, tc := range []struct {
			args string
			opts []cmdOpt
			want string
		}{
			{"", nil, "Only bot admins"},
			{" off", nil, "Only bot admins"},
			{" now", []cmdOpt{withPrivilege(2)}, "Usage: !gh hook"},
			{" off now", []cmdOpt{withPrivilege(2)}, "Usage: !gh hook"},
			{"", []cmdOpt{withPrivilege(2)}, "Send !gh hook " + target + " to the bot in a private chat"},
		} {
			if got := e.cmd(e.a, "hook "+target+tc.args, tc.opts...); !strings.Contains(got, tc.want) {
				t.Errorf("hook %s%s: %q, want %q", target, tc.args, got, tc.want)
			}
		}
	}
	if got := e.cmd(e.a, "hook not/a/repo now", withPrivilege(2)); !strings.Contains(got, "is not a repository") {
		t.Errorf("hook not/a/repo now: %q, want the bad repository text", got)
	}
	if after := e.state(); !sameState(before, after) {
		t.Fatalf("refused hook commands wrote: %v -> %v", before, after)
	}
}
