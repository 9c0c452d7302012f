package githubkit_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// TestWebhookFiltersAsPolled: each chat's kinds and refinements (branch,
// tag, label) apply to a webhook delivery as they do to a polled event: a
// delivery a chat's filters drop is not pushed to it, one they keep is,
// and a second installation with the same subscriptions polling the same
// events as Events API items pushes each to the same chats.
func TestWebhookFiltersAsPolled(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	refined := e.a.session
	other := wire.Session{LauncherType: "group", LauncherID: wire.ID("session-a2"), SenderID: "u1", BotUUID: refined.BotUUID}
	e.cmd(e.a, "sub "+hw+" push pr release branch:master tag:v2.* -label:wip")
	e.cmd(e.a, "sub "+hw+" issues release", withSession(other))
	id, secret := e.hook(hw)
	repo := fmt.Sprintf(`"sender":{"login":"octocat"},"repository":{"id":1296269,"full_name":%q}`, hw)
	push := func(ref, after string) string {
		return fmt.Sprintf(`{"ref":%q,"before":"883efe034920928c47fe18598c01249d1a9fdabd","after":%q,"forced":false,`+
			`"commits":[{"id":%q,"message":"Work","distinct":true}],"head_commit":{"id":%q,"message":"Work"},%s}`, ref, after, after, after, repo)
	}
	pr := func(n int, label string) string {
		return fmt.Sprintf(`{"action":"opened","number":%d,"pull_request":{"number":%d,"title":"Change %d","merged":false,`+
			`"labels":[{"name":%q}]},%s}`, n, n, n, label, repo)
	}
	release := func(tag string) string {
		return fmt.Sprintf(`{"action":"published","release":{"tag_name":%q,"name":%q,"prerelease":false},%s}`, tag, tag, repo)
	}
	cases := []struct {
		name, event, marker, body string
		to                        []string // launcher ids pushed to
	}{
		{"push to another branch", "push", "to feature/x", push("refs/heads/feature/x", "1111111111111111111111111111111111111111"), nil},
		{"push to master", "push", "to master", push("refs/heads/master", "2222222222222222222222222222222222222222"), []string{string(refined.LauncherID)}},
		{"PR labeled wip", "pull_request", "#1360", pr(1360, "wip"), nil},
		{"PR labeled bug", "pull_request", "#1361", pr(1361, "bug"), []string{string(refined.LauncherID)}},
		{"release outside tag:v2.*", "release", "v1.9.0", release("v1.9.0"), []string{string(other.LauncherID)}},
		{"release within tag:v2.*", "release", "v2.1.0", release("v2.1.0"), []string{string(refined.LauncherID), string(other.LauncherID)}},
		{"issue (a kind only the other chat takes)", "issues", "#1370", fmt.Sprintf(`{"action":"opened","issue":{"number":1370,"title":"Bug","labels":[{"name":"wip"}]},%s}`, repo),
			[]string{string(other.LauncherID)}},
		{"star (a kind neither takes)", "watch", "starred", fmt.Sprintf(`{"action":"started",%s}`, repo), nil},
	}
	for i, c := range cases {
		before := len(e.sends())
		code, why := e.post(delivery{id: id, event: c.event, guid: fmt.Sprintf("f-%d", i), body: []byte(c.body), secret: secret})
		if code != http.StatusAccepted {
			t.Fatalf("%s: %d %s", c.name, code, why)
		}
		if len(c.to) > 0 {
			e.host.WaitSends(t, before+len(c.to), bustest.WaitTimeout)
		}
		e.idle()
		var got []string
		for _, s := range e.sends()[before:] {
			got = append(got, s.SendMessage().TargetID)
		}
		slices.Sort(got)
		if !slices.Equal(got, c.to) {
			t.Errorf("%s: pushed to %v, want %v", c.name, got, c.to)
		}
	}

	// the same events polled by an installation without a webhook, with
	// the same subscriptions in two chats of its own
	b := newInst(t, "b", e.baseConfig("en_US", "token-b", 120))
	e.attach(b, true)
	bOther := wire.Session{LauncherType: "group", LauncherID: wire.ID("session-b2"), SenderID: "u1", BotUUID: b.session.BotUUID}
	e.cmd(b, "sub "+hw+" push pr release branch:master tag:v2.* -label:wip")
	e.cmd(b, "sub "+hw+" issues release", withSession(bOther))
	e.fire(b, hw) // the first poll sets the cursor
	types := map[string]string{"push": "PushEvent", "pull_request": "PullRequestEvent", "release": "ReleaseEvent", "issues": "IssuesEvent", "watch": "WatchEvent"}
	for i, c := range cases {
		var payload map[string]any
		if err := json.Unmarshal([]byte(c.body), &payload); err != nil {
			t.Fatal(err)
		}
		delete(payload, "sender")
		delete(payload, "repository")
		e.fake.AddEvents(hw, fakegithub.RawEvent(types[c.event], int64(500+i), "octocat", payload))
	}
	before := len(e.sends())
	e.fire(b, hw)
	digest := map[string]string{}
	for _, s := range e.sends()[before:] {
		digest[s.SendMessage().TargetID] += s.SendMessage().MessageChain[0].Text
	}
	for _, c := range cases {
		var got, want []string
		for _, chat := range []wire.Session{b.session, bOther} {
			if strings.Contains(digest[string(chat.LauncherID)], c.marker) {
				got = append(got, string(chat.LauncherID))
			}
		}
		for _, to := range c.to {
			want = append(want, strings.Replace(to, "session-a", "session-b", 1))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("polled %s: pushed to %v, want %v (as the webhook)", c.name, got, want)
		}
	}
}
