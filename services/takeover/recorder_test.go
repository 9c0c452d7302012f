package takeover_test

import (
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestSlowRecordingHoldsOnlyItsSession: while one session's append cannot
// finish, recordings of other sessions go on with the free workers, and
// the held session's next recording waits its turn and lands after it.
// With a queue per worker, every session hashed to the held worker waited
// for it.
func TestSlowRecordingHoldsOnlyItsSession(t *testing.T) {
	h := newHarness(t, func(c *takeover.Config) { c.RecordWorkers = 2 })
	slow, other := newBinding("rec-slow"), newBinding("rec-other")
	h.attach(slow, `{}`, true)
	h.attach(other, `{}`, true)
	slowScope, _ := slow.Scope()
	// each session exists, so its recordings append first
	h.mustEvent(slow, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("hi")))
	for i := range 8 {
		h.mustEvent(other, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 10+i, 10+i, plain("hi")))
	}
	held := sidOf("bot-a", "person", 1)
	bustest.Eventually(t, "first entries", func() bool { return h.historyCount(slow, held) == 1 })

	stalled, release := h.holdOp("history.append", slowScope)
	h.mustEvent(slow, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("first")))
	<-stalled
	h.mustEvent(slow, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("second")))
	for i := range 8 {
		h.mustEvent(other, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 10+i, 10+i, plain("more")))
	}
	bustest.Eventually(t, "the other sessions recorded while one append is held", func() bool {
		for i := range 8 {
			if h.historyCount(other, sidOf("bot-a", "person", 10+i)) != 2 {
				return false
			}
		}
		return true
	})
	if n := h.historyCount(slow, held); n != 1 {
		t.Fatalf("the held session has %d entries while its append is held, want 1", n)
	}

	release()
	bustest.Eventually(t, "the held session's two recordings", func() bool { return h.historyCount(slow, held) == 3 })
	var got []string // newest first
	for _, e := range h.messages(slow, `{}`, held).Messages {
		got = append(got, e.Parts[0].Text)
	}
	if len(got) != 3 || got[0] != "second" || got[1] != "first" {
		t.Fatalf("held session's history %q, want [second first hi]", got)
	}
}
