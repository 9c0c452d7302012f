package takeover_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
)

// A record that does not decode whole, but whose takeover does, still
// blocks the AI from the view; recording into it fails as unreadable and
// writes nothing.
func TestPartlyBrokenRecordStillBlocks(t *testing.T) {
	h := newHarness(t)
	b := newBinding("broken")
	h.attach(b, `{}`, true)
	sid := sidOf("bot-a", "person", 77)
	sc, _ := b.Scope()
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := bus.Key(sc, "session", sid)
	expires := h.now().UnixMilli() + 600_000
	raw := fmt.Sprintf(`{"v":1,"gen":"00000000000000c1","session_key":"bot-a:person_77","type":"person","target_id":"77","bot_uuid":"bot-a","members":"not a list","takeover":{"active":true,"expires_at":%d}}`, expires)
	rev, err := kv.Put(context.Background(), key, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the view to see the record", func() bool {
		seen, _ := takeover.ViewRevision(h.svc, sc, sid)
		return seen >= rev
	})
	r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 77, 77, plain("hello")))
	if !r.PreventDefault {
		t.Fatal("a taken-over session with a broken field was not blocked")
	}
	// nor may a package let any chat of the scope pass on its own: the
	// record cannot say which chat it holds
	r, err = h.eventOf(b, `{}`, &wire.Event{Name: takeover.EventPersonMessage, BotUUID: "bot-a",
		Data: msgData("person", 78, 78, plain("hello")), WantGate: true}, bus.NewInvocationID())
	if err != nil || r.Gate != nil {
		t.Fatalf("a scope with a broken record got a gate: %+v, %v", r.Gate, err)
	}
	bustest.Eventually(t, "the recording to fail", func() bool {
		return h.metric("takeover_record_dropped_total", map[string]string{"reason": "storage"}) >= 1
	})
	if e, err := kv.Get(context.Background(), key); err != nil || e.Revision() != rev {
		t.Fatalf("the broken record was written over: %v", err)
	}
	if n := h.historyCount(b, sid); n != 0 {
		t.Fatalf("%d entries recorded into a broken session", n)
	}
}
