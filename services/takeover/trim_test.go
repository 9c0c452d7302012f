package takeover_test

import (
	"fmt"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestTrimDoesNotHoldRecordings: a trim that cannot finish (its purge held)
// does not hold up the recordings queued on the same worker. Trims come in
// waves when sessions grow in step; run by the recording worker, each would
// delay every recording behind it.
func TestTrimDoesNotHoldRecordings(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) { c.RecordWorkers = 1 })
	b := newBinding("trimhold")
	tight := `{"history_limit":10,"trigger_words":["human"]}` // a trim once 11 are counted
	h.attach(b, tight, true)
	sc, _ := b.Scope()
	a, other := sidOf("bot-a", "person", 1), sidOf("bot-a", "person", 2)

	held, _ := h.holdOp("history.purge", sc)
	for n := 1; n <= 11; n++ {
		h.mustEvent(b, tight, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain(fmt.Sprint("#", n))))
	}
	bustest.Eventually(t, "11 counted", func() bool { r := h.record(b, a); return r != nil && r.HistoryCount == 11 })
	<-held // a trim of session 1 is under way and cannot finish

	// one more for session 1, with the trigger word: its recording writes
	// the record itself (not through the coalesced metadata) and finds the
	// session over its limit, so it asks for a trim; then one for session 2
	// on the same, only worker
	h.mustEvent(b, tight, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("a human please")))
	h.mustEvent(b, tight, takeover.EventPersonMessage, "bot-a", msgData("person", 2, 2, plain("other")))
	bustest.Eventually(t, "both recorded while the trim is held", func() bool {
		return h.historyCount(b, a) == 12 && h.historyCount(b, other) == 1
	})
	if n := h.metric("takeover_history_trims_total", map[string]string{"result": "ok"}); n != 0 {
		t.Fatalf("%v trims finished while their purge was held", n)
	}
}
