package acceptance_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestOperatorCommandAndToolThroughPackage is issue 20's `!ho` command and
// request_human tool through the HumanTakeover package's generated
// components in LangBot's real runtime, forwarding to the takeover
// service: the tool marks the chat waiting and answers what to say, its
// alert reaches the operator chat as send_message with the package's
// binding, an admin's `!ho list` lists the chat, and a user's `!ho take`
// is refused.
func TestOperatorCommandAndToolThroughPackage(t *testing.T) {
	e := startEnv(t)
	ctx := ctxT(t, 3*time.Minute)
	cfg := e.stack.packageConfig(takeover.Plugin)
	cfg["operator_chats"] = []string{"bot-1:group:900"}
	pkg := e.pkgs[takeover.Plugin]
	tk, err := e.rt.Install(ctx, pkg.Data, pkg.Author, pkg.Name, cfg)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	e.waitApplied(takeover.Plugin, tk)
	user := runtimetest.Session{LauncherType: "person", LauncherID: "61", SenderID: "61", BotUUID: "bot-1"}

	res, err := e.rt.Tool(ctx, tk, "request_human", map[string]any{"reason": "wants a refund decision"}, user)
	var out struct {
		Status    string `json:"status"`
		SayToUser string `json:"say_to_user"`
		Alerted   *bool  `json:"operators_alerted"`
	}
	if err != nil || json.Unmarshal(res, &out) != nil || out.Status != "waiting" || !strings.Contains(out.SayToUser, "human") ||
		out.Alerted == nil || !*out.Alerted {
		t.Fatalf("request_human = %s, %v", res, err)
	}
	sends := e.rt.WaitSends(t, 1, 30*time.Second)
	var alert struct {
		BotUUID    string `json:"bot_uuid"`
		TargetType string `json:"target_type"`
		TargetID   string `json:"target_id"`
		Chain      []struct {
			Text string `json:"text"`
		} `json:"message_chain"`
	}
	if err := json.Unmarshal(sends[0].Data, &alert); err != nil || sends[0].Binding != tk.Binding || alert.BotUUID != "bot-1" ||
		alert.TargetType != "group" || alert.TargetID != "900" || len(alert.Chain) != 1 ||
		!strings.Contains(alert.Chain[0].Text, "refund decision") || !strings.Contains(alert.Chain[0].Text, "!ho") {
		t.Fatalf("alert send_message %s with binding %+v: %v", sends[0].Data, sends[0].Binding, err)
	}

	admin := runtimetest.Session{LauncherType: "person", LauncherID: "1", SenderID: "1", BotUUID: "bot-1"}
	rets, err := e.rt.Command(ctx, tk, "!ho list", admin, 2)
	if err != nil || len(rets) != 1 {
		t.Fatalf("!ho list = %q, %v", runtimetest.Texts(rets), err)
	}
	if list := runtimetest.Texts(rets)[0]; !strings.Contains(list, "\n1. 61 (private chat), waiting") {
		t.Fatalf("!ho list = %q, want chat 61 listed as waiting", list)
	}
	rets, err = e.rt.Command(ctx, tk, "!ho take 1", user, 1)
	if err != nil || len(rets) != 1 || !strings.Contains(runtimetest.Texts(rets)[0], "Only admins") {
		t.Fatalf("a user's !ho take = %q, %v", runtimetest.Texts(rets), err)
	}
	page, err := e.rt.Page(ctx, tk, takeover.ConsolePageID, "/sessions", "GET", map[string]any{})
	var list struct {
		Sessions []struct {
			Unread   bool `json:"unread"`
			Takeover struct {
				Active bool `json:"active"`
			} `json:"takeover"`
		} `json:"sessions"`
	}
	if err != nil || page.Error != "" || json.Unmarshal(page.Data, &list) != nil || len(list.Sessions) != 1 ||
		!list.Sessions[0].Unread || list.Sessions[0].Takeover.Active {
		t.Fatalf("sessions after the tool and the refused take = %s (%s), %v", page.Data, page.Error, err)
	}
}
