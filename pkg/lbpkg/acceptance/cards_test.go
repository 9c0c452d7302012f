package acceptance_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// TestLinkCardsThroughPackage is issue 21's link-card acceptance through
// the GitHubKit package's generated event listener in LangBot's real
// runtime: a message with a GitHub link passes unchanged and gets one card
// by send_message into its chat; the bot's own message gets none; the
// chat's rate limit holds.
func TestLinkCardsThroughPackage(t *testing.T) {
	e := newEnv(t, githubkit.Plugin)
	ctx := ctxT(t, 3*time.Minute)
	gh := e.ins[githubkit.Plugin]
	const base = "https://github.com/octocat/Hello-World"
	emit := func(s runtimetest.Session, text string) {
		t.Helper()
		res, err := e.rt.Emit(ctx, gh, runtimetest.Event{Name: "GroupMessageReceived", Session: s, Text: text})
		if err != nil || res.PreventDefault || res.PreventPostorder || res.Emitted != 1 {
			t.Fatalf("emit %q = %+v, %v", text, res, err)
		}
	}
	sendText := func(c runtimetest.HostCall) (target, text string) {
		var d struct {
			BotUUID  string `json:"bot_uuid"`
			TargetID string `json:"target_id"`
			Chain    []struct {
				Text string `json:"text"`
			} `json:"message_chain"`
		}
		if err := json.Unmarshal(c.Data, &d); err != nil || len(d.Chain) != 1 || d.BotUUID != group.BotUUID || c.Binding != gh.Binding {
			t.Fatalf("send_message %s with binding %+v: %v", c.Data, c.Binding, err)
		}
		return d.TargetID, d.Chain[0].Text
	}
	outcome := func(o string, n int) {
		t.Helper()
		bustest.Eventually(t, "card outcome "+o, func() bool {
			c := 0
			for _, line := range strings.Split(e.stack.logs.String(), "\n") {
				if strings.Contains(line, `"msg":"link cards"`) && strings.Contains(line, `"outcome":"`+o+`"`) {
					c++
				}
			}
			return c >= n
		})
	}

	emit(group, "look at "+base+"/issues/1347 please")
	sends := e.rt.WaitSends(t, 1, 20*time.Second)
	target, text := sendText(sends[0])
	if target != group.LauncherID || !strings.HasPrefix(text, "📝 octocat/Hello-World#1347 [open] Found a bug\nIssue by") {
		t.Fatalf("card to %s:\n%s", target, text)
	}

	own := group
	own.SenderID = "10001" // the account id the host gives for bot-1
	emit(own, base+"/pull/1290")
	outcome("own_message", 1)

	// the default burst is 6 cards a chat: one spent above
	emit(group, base+" "+base+"/releases/tag/v1.1.0 "+base+"/commit/6dcb09b5b57875f334f61aebed695e2e4193db5e")
	emit(group, base+"/issues/1348 "+base+"/issues/1349 "+base+"/issues/1300")
	outcome("sent", 3)
	emit(group, base+"/pull/1290")
	outcome("limited", 1)
	sends = e.rt.Sends()
	if len(sends) != 3 {
		t.Fatalf("%d cards sent, want 3", len(sends))
	}
	cards := 0
	for _, s := range sends {
		_, text := sendText(s)
		cards += len(strings.Split(text, "\n\n"))
		if strings.Contains(text, "#1290") {
			t.Errorf("the bot's own or a rate-limited link got a card:\n%s", text)
		}
	}
	if cards != 6 {
		t.Fatalf("%d cards in the chat, want the burst of 6", cards)
	}
}
