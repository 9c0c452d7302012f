package bus_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

func TestDirectReaderFirstCountsTheSubject(t *testing.T) {
	ctx := context.Background()
	srv := bustest.NewServer(t)
	nc := srv.Conn(t)
	js := directStream(t, nc)
	var seqs []uint64
	for i := range 10 {
		ack, err := js.Publish(ctx, "b.a", []byte(fmt.Sprintf("a%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Sequence)
		if _, err := js.Publish(ctx, "b.b", []byte("other")); err != nil {
			t.Fatal(err)
		}
	}
	d := bus.NewDirectReader(nc, "B")
	defer d.Close()

	got, err := d.First(ctx, "b.a", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Pending+1 != 10 {
		t.Fatalf("first 3: %d messages, subject holds %d", len(got), got[0].Pending+1)
	}
	for i, m := range got {
		if m.Subject != "b.a" || m.Sequence != seqs[i] || string(m.Data) != fmt.Sprintf("a%d", i) {
			t.Fatalf("message %d: %s seq %d %q, want seq %d", i, m.Subject, m.Sequence, m.Data, seqs[i])
		}
	}
	if all, err := d.First(ctx, "b.a", 50); err != nil || len(all) != 10 {
		t.Fatalf("first 50: %d messages, %v", len(all), err)
	}
	if none, err := d.First(ctx, "b.none", 3); err != nil || len(none) != 0 {
		t.Fatalf("an empty subject: %d messages, %v", len(none), err)
	}
	last, err := d.LastPerSubject(ctx, "b.>")
	if err != nil || len(last) != 2 || string(last[0].Data) != "a9" || string(last[1].Data) != "other" {
		t.Fatalf("last per subject: %+v, %v", last, err)
	}
}

// directStream creates stream "B" on subjects b.> with direct gets allowed
// and returns a JetStream context on nc.
func directStream(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.EnsureStream(context.Background(), js, bus.StreamSpec{
		Name: "B", Subjects: []string{"b.>"}, Replicas: 1, AllowDirect: true,
	}); err != nil {
		t.Fatal(err)
	}
	return js
}
