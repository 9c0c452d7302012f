package bus_test

import (
	"context"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

// TestLeaderLastSequence: the last sequence of a subject and of a
// wildcard filter, 0 for a subject with no message, an error for a stream
// that does not exist.
func TestLeaderLastSequence(t *testing.T) {
	ctx := context.Background()
	nc := bustest.NewServer(t).Conn(t)
	js := directStream(t, nc)
	want := map[string]uint64{}
	for _, subj := range []string{"b.a.1", "b.b.1", "b.a.2", "b.b.1", "b.c"} {
		ack, err := js.Publish(ctx, subj, []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		want[subj] = ack.Sequence
	}
	for filter, seq := range map[string]uint64{"b.b.1": want["b.b.1"], "b.a.>": want["b.a.2"], "b.>": want["b.c"], "b.none": 0} {
		got, err := bus.LeaderLastSequence(ctx, nc, "B", filter)
		if err != nil || got != seq {
			t.Errorf("%s: %d, %v; want %d", filter, got, err, seq)
		}
	}
	if _, err := bus.LeaderLastSequence(ctx, nc, "NOPE", "b.>"); err == nil {
		t.Error("a stream that does not exist: no error")
	}
}
