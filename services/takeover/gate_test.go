package takeover_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// gateOf sends a message of chat lid asking for the event gate and returns
// the reply.
func (h *harness) gateOf(b binding.Binding, config string, lid any, text string) wire.EventReply {
	h.t.Helper()
	r, err := h.eventOf(b, config, &wire.Event{Name: takeover.EventPersonMessage, BotUUID: "bot-g",
		Data: msgData("person", lid, lid, plain(text)), WantGate: true}, bus.NewInvocationID())
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func watched(g *wire.EventGate, typ, id string) bool {
	return slices.Contains(g.Loud, [2]string{typ, id})
}

// revokedSince waits for a revocation of sc beyond the first n.
func (h *harness) revokedSince(sc binding.Scope, n int) {
	h.t.Helper()
	bustest.Eventually(h.t, "a gate revocation", func() bool { return revokesOf(h, sc) > n })
}

// revokesOf counts the gate revocations of sc the host received.
func revokesOf(h *harness, sc binding.Scope) int {
	return len(slices.DeleteFunc(h.host.Revokes(), func(s binding.Scope) bool { return s != sc }))
}

// TestEventGateFollowsTheWatchedChats: the gate lists exactly the chats a
// decision could block, and every chat that becomes watched revokes the
// gates given before.
func TestEventGateFollowsTheWatchedChats(t *testing.T) {
	h := newHarness(t)
	b := newBinding("gate1")
	sc, _ := b.Scope()
	const config = `{"trigger_words":["Help","ſtop"],"operator_chats":["bot-op:group:ops-room"]}`
	h.attach(b, config, true)

	r := h.gateOf(b, config, 1, "hello")
	g := r.Gate
	if r.PreventDefault || g == nil {
		t.Fatalf("a quiet chat's reply: %+v, want a gate and no block", r)
	}
	if g.TTLMillis <= 0 || !slices.Equal(g.Events, []string{takeover.EventPersonMessage, takeover.EventGroupMessage, takeover.EventResponded}) {
		t.Fatalf("gate %+v", g)
	}
	if !slices.Equal(g.Loud, [][2]string{{"group", "ops-room"}}) {
		t.Fatalf("watched %v, want only the operator chat", g.Loud)
	}
	set := model.DefaultSettings()
	set.TriggerWords = []string{"Help", "ſtop"}
	if g.Words != model.TriggerPattern(set) || g.Words == "" {
		t.Fatalf("words %q, want the trigger words' pattern", g.Words)
	}
	if r := h.mustEvent(b, config, takeover.EventPersonMessage, "bot-g", msgData("person", 1, 1, plain("hello"))); r.Gate != nil {
		t.Fatal("a gate given without being asked for")
	}

	// a console takeover: revoked, then listed
	n := revokesOf(h, sc)
	sid := sidOf("bot-g", "person", 1)
	h.mustPage(b, config, "POST", "/takeover", map[string]string{"sid": sid}, nil)
	h.revokedSince(sc, n)
	if g := h.gateOf(b, config, 2, "hi").Gate; g == nil || !watched(g, "person", "1") {
		t.Fatalf("a taken-over chat is not watched: %+v", g)
	}
	// released: no longer listed (the release is stored before the page answers)
	h.mustPage(b, config, "DELETE", "/takeover", map[string]string{"sid": sid}, nil)
	bustest.Eventually(t, "the released chat unwatched", func() bool {
		g := h.gateOf(b, config, 2, "hi").Gate
		return g != nil && !watched(g, "person", "1")
	})

	// a trigger word takes the chat over: blocked, revoked, then listed
	n = revokesOf(h, sc)
	if r := h.gateOf(b, config, 3, "STOP it"); !r.PreventDefault {
		t.Fatal("the trigger word (ſ folds to s) did not block")
	}
	h.revokedSince(sc, n)
	bustest.Eventually(t, "the triggered chat watched", func() bool {
		g := h.gateOf(b, config, 4, "hi").Gate
		return g != nil && watched(g, "person", "3")
	})

	// another installation's gate lists nothing of this one's
	other := newBinding("gate1-other")
	h.attach(other, `{}`, true)
	if g := h.gateOf(other, `{}`, 9, "hi").Gate; g == nil || len(g.Loud) != 0 || g.Words != "" {
		t.Fatalf("another installation's gate: %+v", g)
	}
}

// TestEventGateUnreadChatsOnlyWithCancelWords: a chat waiting for a human
// answers its cancel word, so it is watched while cancel words are set.
func TestEventGateUnreadChatsOnlyWithCancelWords(t *testing.T) {
	h := newHarness(t)
	b := newBinding("gate2")
	const config = `{"trigger_words":["human"],"auto_takeover_on_trigger":false}`
	h.attach(b, config, true)
	if r := h.gateOf(b, config, 5, "a human please"); r.PreventDefault {
		t.Fatal("a trigger without auto takeover blocked")
	}
	bustest.Eventually(t, "the unread chat watched", func() bool {
		g := h.gateOf(b, config, 6, "hi").Gate
		return g != nil && watched(g, "person", "5")
	})
	const noCancel = `{"trigger_words":["human"],"auto_takeover_on_trigger":false,"cancel_words":[]}`
	if g := h.gateOf(b, noCancel, 6, "hi").Gate; g == nil || watched(g, "person", "5") {
		t.Fatalf("without cancel words an unread chat is not watched: %+v", g)
	}
}

// TestEventGatePassedReplyIsRecorded: an AI reply the package's gate let
// pass in a chat taken over meanwhile is recorded (the user saw it) and
// counted as a miss; the same reply asked for a decision is blocked and
// not recorded.
func TestEventGatePassedReplyIsRecorded(t *testing.T) {
	h := newHarness(t)
	b := newBinding("gate3")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-a", 7)
	before := h.historyCount(b, sid)
	if r := h.mustEvent(b, `{}`, takeover.EventResponded, "bot-a", aiData("person", 7, "blocked answer")); !r.PreventDefault {
		t.Fatal("an AI reply in a taken-over chat was not blocked")
	}
	r, err := h.eventOf(b, `{}`, &wire.Event{Name: takeover.EventResponded, BotUUID: "bot-a", Data: aiData("person", 7, "answer the user saw"), Passed: true}, bus.NewInvocationID())
	if err != nil {
		t.Fatal(err)
	}
	if !r.PreventDefault {
		t.Fatal("the decision of a passed event is still the service's")
	}
	bustest.Eventually(t, "the passed reply recorded", func() bool { return h.historyCount(b, sid) == before+1 })
	page := h.messages(b, `{}`, sid)
	raw, _ := json.Marshal(page.Messages)
	if !strings.Contains(string(raw), "answer the user saw") || strings.Contains(string(raw), "blocked answer") {
		t.Fatalf("history %s", raw)
	}
	if got := h.metric("takeover_gate_missed_total", nil); got != 1 {
		t.Fatalf("takeover_gate_missed_total %v, want 1", got)
	}
}

// TestEventGateRevokedForAnotherReplicasWrite: a takeover written by
// another replica (here: straight into the bucket) revokes the gates when
// this replica's view sees it, and the next gate lists the chat.
func TestEventGateRevokedForAnotherReplicasWrite(t *testing.T) {
	h := newHarness(t)
	b := newBinding("gate4")
	sc, _ := b.Scope()
	h.attach(b, `{}`, true)
	if g := h.gateOf(b, `{}`, 11, "hi").Gate; g == nil || watched(g, "person", "11") {
		t.Fatalf("gate before the takeover: %+v", g)
	}
	sid := sidOf("bot-g", "person", 11)
	bustest.Eventually(t, "the session's record", func() bool { return h.record(b, sid) != nil })
	rec := h.record(b, sid)
	rec.Takeover = model.TakeoverState{Active: true, StartedAt: h.now().UnixMilli(), ExpiresAt: h.now().Add(time.Hour).UnixMilli(), Operator: "elsewhere", Via: "console"}
	n := revokesOf(h, sc)
	h.putRecord(b, sid, rec)
	h.revokedSince(sc, n)
	if g := h.gateOf(b, `{}`, 12, "hi").Gate; g == nil || !watched(g, "person", "11") {
		t.Fatalf("gate after the takeover: %+v", g)
	}
}
