package bustest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// WaitLifecycle waits until plugin's lifecycle consumer has acknowledged
// every lifecycle message published for it so far, and fails t after
// timeout.
//
// "Nothing pending and nothing awaiting ack" is not enough on its own: the
// server updates a consumer's pending count after a publish is acknowledged,
// not before, so a test that checks right after publishing can see an idle
// consumer that has not yet heard of the newest message. The ack floor
// passing the plugin's last message is the condition that cannot be early.
func WaitLifecycle(t testing.TB, js jetstream.JetStream, subjects wire.Subjects, plugin string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last uint64
	for {
		done, err := lifecycleAcked(js, subjects, plugin, &last)
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("bustest: %s lifecycle consumer did not catch up to seq %d: %v", plugin, last, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func lifecycleAcked(js jetstream.JetStream, subjects wire.Subjects, plugin string, last *uint64) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if *last == 0 {
		st, err := js.Stream(ctx, wire.LifecycleStream)
		if err != nil {
			return false, err
		}
		m, err := st.GetLastMsgForSubject(ctx, subjects.LifecycleFilter(plugin))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			return true, nil
		case err != nil:
			return false, err
		}
		*last = m.Sequence
	}
	c, err := js.Consumer(ctx, wire.LifecycleStream, bus.LifecycleConsumer(plugin))
	if err != nil {
		return false, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return false, err
	}
	return info.AckFloor.Stream >= *last && info.NumAckPending == 0, nil
}
