package bustest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

// TestIsCaughtUp: a consumer is caught up only once it has acknowledged
// the last message of its subject; other subjects and an empty stream do
// not hold it back.
func TestIsCaughtUp(t *testing.T) {
	js := bustest.NewServer(t).JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "d", FilterSubject: "s.a", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	check := func(subject string, want bool) {
		t.Helper()
		got, err := bustest.IsCaughtUp(ctx, js, "S", "d", subject)
		if err != nil || got != want {
			t.Fatalf("IsCaughtUp(%q) = %v, %v; want %v", subject, got, err, want)
		}
	}
	check("s.a", true) // nothing stored
	check("", true)
	for _, subj := range []string{"s.a", "s.a", "s.b"} {
		if _, err := js.Publish(ctx, subj, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	check("s.a", false)
	batch, err := c.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check("s.a", false) // one of two acknowledged
	batch, err = c.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		check("s.a", false) // delivered, not acknowledged
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	bustest.CaughtUp(t, js, "S", "d", "s.a")
	check("", false) // the stream's last message (s.b) is not the consumer's
}
