package takeover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

func TestLargeAggregateDoesNotTouchSmallRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 12 000 entries")
	}
	h := newHarness(t)
	b := newBinding("st2")
	h.attach(b, `{}`, true)
	sc, _ := b.Scope()
	ctx := context.Background()
	kv, _ := h.js.KeyValue(ctx, bus.Bucket(takeover.Plugin))
	const sessions, per = 1200, 10
	filler := strings.Repeat("x", 1024)
	var futures []jetstream.PubAckFuture
	for i := range sessions {
		lid := fmt.Sprint(10000 + i)
		sid := sidOf("bot-a", "person", lid)
		rec := model.NewRecord("bot-a", "person", lid, "", 1)
		rec.HistoryCount = per
		v, _ := json.Marshal(rec)
		key, _ := bus.Key(sc, "session", sid)
		if _, err := kv.Create(ctx, key, v); err != nil {
			t.Fatal(err)
		}
		_, _, subj := store.HistoryOf(wire.Subjects{}, sc, sid)
		for j := range per {
			e, _ := json.Marshal(model.Entry{V: 1, ID: fmt.Sprintf("%d-%d", i, j), Gen: rec.Gen, TS: 1, Role: model.RoleUser, Parts: []model.Part{{Type: model.PartText, Text: filler}}})
			f, err := h.js.PublishAsync(subj, e)
			if err != nil {
				t.Fatal(err)
			}
			futures = append(futures, f)
		}
		if i%100 == 99 {
			select {
			case <-h.js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				t.Fatal("seeding stalled")
			}
		}
	}
	select {
	case <-h.js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		t.Fatal("seeding timed out")
	}
	waitAcks(t, futures)
	// one small message to a small session
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("small")))
	sid := sidOf("bot-a", "person", 1)
	kvs, _ := h.js.Stream(ctx, "KV_"+bus.Bucket(takeover.Plugin))
	k1, _ := kvs.Info(ctx)
	h1, _, _ := historyState(t, h.js)
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("small again")))
	bustest.Eventually(t, "metadata", func() bool { return h.record(b, sid).HistoryCount == 2 })
	k2, _ := kvs.Info(ctx)
	h2, _, _ := historyState(t, h.js)
	if d := k2.State.LastSeq - k1.State.LastSeq; d != 1 {
		t.Fatalf("%d KV writes", d)
	}
	if d := h2 - h1; d != 1 || h.historyCount(b, sid) != 2 {
		t.Fatalf("%d appends", d)
	}
	h.stop()
	h.svc = h.startReplica(h.srv.Conn(t))
	h.attach(b, `{}`, true)
	if p := h.messages(b, `{}`, sid); len(p.Messages) != 2 || p.Messages[0].Parts[0].Text != "small again" {
		t.Fatalf("after restart %+v", p.Messages)
	}
}
