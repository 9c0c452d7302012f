package acceptance_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// TestNextMessageThroughPackage is schenotify's next-message delivery
// through the ScheNotify package in LangBot's real runtime, now that its
// events are observed (Declaration.ObserveEvents: the listener returns at
// once and forwards in the background, asking LangBot for the bot first):
// a reminder the platform refuses waits; the chat's next message passes
// unchanged and the service, given the message and its bot, sends the
// reminder. TestLinkCardsThroughPackage is GitHubKit's side of it.
func TestNextMessageThroughPackage(t *testing.T) {
	e := newEnv(t, schenotify.Plugin)
	ctx := ctxT(t, 3*time.Minute)
	sn := e.ins[schenotify.Plugin]
	var refuse atomic.Bool
	refuse.Store(true)
	e.rt.SetHostReply("send_message", func(runtimetest.HostCall) (any, error) {
		if refuse.Load() {
			return nil, errors.New("ValueError: this adapter does not support proactive messages")
		}
		return map[string]any{}, nil
	})
	t.Cleanup(func() { e.rt.SetHostReply("send_message", nil) })

	if rets, err := e.rt.Command(ctx, sn, "!sche add in 2s stand up", group, 1); err != nil || len(rets) != 1 {
		t.Fatalf("add: %q %v", runtimetest.Texts(rets), err)
	}
	e.rt.WaitSends(t, 1, 30*time.Second) // refused
	bustest.EventuallyWithin(t, 30*time.Second, "the reminder waits for the chat's next message", func() bool {
		rets, err := e.rt.Command(ctx, sn, "!sche", group, 1)
		return err == nil && len(rets) == 1 && strings.Contains(runtimetest.Texts(rets)[0], "waiting for the next message in this chat")
	})
	refuse.Store(false)

	other := group
	other.LauncherID = "654321"
	for _, s := range []runtimetest.Session{other, group} { // another chat's message sends nothing
		res, err := e.rt.Emit(ctx, sn, runtimetest.Event{Name: "GroupMessageReceived", Session: s, Text: "hello"})
		if err != nil || res.PreventDefault || res.PreventPostorder || res.Emitted != 1 {
			t.Fatalf("message in %s = %+v, %v", s.LauncherID, res, err)
		}
	}
	sends := e.rt.WaitSends(t, 2, 30*time.Second)
	var d struct {
		BotUUID  string `json:"bot_uuid"`
		TargetID string `json:"target_id"`
	}
	if err := json.Unmarshal(sends[1].Data, &d); err != nil || d.BotUUID != group.BotUUID || d.TargetID != group.LauncherID ||
		!strings.Contains(string(sends[1].Data), "stand up") || sends[1].Binding != sn.Binding {
		t.Fatalf("the next message sent %s with binding %+v: %v", sends[1].Data, sends[1].Binding, err)
	}
	bustest.EventuallyWithin(t, 30*time.Second, "the reminder is delivered", func() bool {
		rets, err := e.rt.Command(ctx, sn, "!sche", group, 1)
		return err == nil && len(rets) == 1 && !strings.Contains(runtimetest.Texts(rets)[0], "stand up")
	})
	if n := len(e.rt.Sends()); n != 2 {
		t.Fatalf("%d sends, want the refused one and the delivery", n)
	}
}
