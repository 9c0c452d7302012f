package takeover_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestMetadataWritesKeepTheirBudget: coalesced metadata writes of a replica
// stay within MetaWriteRate, and none is lost while they wait: every
// session's record ends up with its messages counted.
func TestMetadataWritesKeepTheirBudget(t *testing.T) {
	const rate, sessions = 20, 60
	h := newHarness(t, func(c *takeover.Config) { c.MetaWriteRate = rate })
	b := newBinding("meta")
	h.attach(b, `{}`, true)
	// the first message of each session creates its record at once
	for i := range sessions {
		h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 7000+i, 7000+i, plain("first")))
	}
	sc, _ := b.Scope()
	for i := range sessions {
		sid := sidOf("bot-a", "person", 7000+i)
		bustest.Eventually(t, "the first message's metadata", func() bool {
			r := h.record(b, sid)
			return r != nil && r.HistoryCount == 1
		})
	}

	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.Watch(context.Background(), sc.String()+".session.*", jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	var writes []time.Time
	go func() {
		for e := range w.Updates() {
			if e != nil {
				mu.Lock()
				writes = append(writes, time.Now())
				mu.Unlock()
			}
		}
	}()
	// a second message in every session: 60 metadata writes to make, at
	// most 20 a second with a burst of 2
	for i := range sessions {
		h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 7000+i, 7000+i, plain("second")))
	}
	for i := range sessions {
		sid := sidOf("bot-a", "person", 7000+i)
		bustest.Eventually(t, "the second message's metadata", func() bool { return h.record(b, sid).HistoryCount == 2 })
	}
	// the watch may deliver the last write after the read that saw it
	bustest.Eventually(t, "every metadata write seen by the watch", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(writes) >= sessions
	})
	mu.Lock()
	defer mu.Unlock()
	// a lower bound on the time taken, so a slow machine cannot fail it
	span := writes[len(writes)-1].Sub(writes[0])
	if least := time.Duration(float64(sessions-2-1) / rate * float64(time.Second)); span < least*9/10 {
		t.Fatalf("%d metadata writes in %v: faster than %d/s allows (%v)", len(writes), span, rate, least)
	}
	if h.metric("takeover_meta_pending", nil) != 0 {
		t.Fatal("metadata still pending after every record was written")
	}
}
