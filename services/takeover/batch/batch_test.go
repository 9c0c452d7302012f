package batch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover/batch"
)

// batchStream creates stream "B" on subjects b.> (atomic publish as given)
// and returns a JetStream context on conn.
func batchStream(t *testing.T, nc *nats.Conn, atomic bool, replicas int) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := bus.EnsureStream(context.Background(), js, bus.StreamSpec{
		Name: "B", Subjects: []string{"b.>"}, Replicas: replicas, AllowDirect: true,
		Duplicates: 0, AtomicPublish: atomic,
	})
	if err != nil {
		t.Fatal(err)
	}
	return js, st
}

// singleNodeBatcher starts a server with stream "B" and a batcher on it
// that batches from two waiting messages on.
func singleNodeBatcher(t *testing.T, atomic bool) (*batch.Batcher, jetstream.Stream) {
	t.Helper()
	srv := bustest.NewServer(t)
	nc := srv.Conn(t)
	js, st := batchStream(t, nc, atomic, 1)
	b := batch.New(nc, js, batch.Config{Atomic: true, Min: 2})
	t.Cleanup(b.Close)
	return b, st
}

type published struct {
	id, subject string
	seq         uint64
	err         error
}

// publishConcurrently publishes n messages with the ids ids(i) at once
// and returns what each Publish answered.
func publishConcurrently(b *batch.Batcher, n int, ids func(i int) string) []published {
	out := make([]published, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			p := published{id: ids(i), subject: fmt.Sprintf("b.s%d", i%37)}
			msg := &nats.Msg{Subject: p.subject, Data: []byte("body-" + p.id)}
			p.seq, p.err = b.Publish(context.Background(), msg, p.id)
			out[i] = p
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// checkStored asserts that every answered sequence holds the message it
// was answered for, and returns how many stored messages came in an
// atomic batch.
func checkStored(t *testing.T, st jetstream.Stream, ps []published) int {
	t.Helper()
	batched := 0
	seen := map[uint64]string{}
	for _, p := range ps {
		if p.err != nil {
			t.Fatalf("publish %s: %v", p.id, p.err)
		}
		if other, dup := seen[p.seq]; dup && other != p.id {
			t.Fatalf("sequence %d answered for %s and %s", p.seq, other, p.id)
		}
		seen[p.seq] = p.id
		m, err := st.GetMsg(context.Background(), p.seq)
		if err != nil {
			t.Fatalf("get %d (%s): %v", p.seq, p.id, err)
		}
		if m.Subject != p.subject || string(m.Data) != "body-"+p.id || m.Header.Get(jetstream.MsgIDHeader) != p.id {
			t.Fatalf("sequence %d holds %s %q (id %q), answered for %s", p.seq, m.Subject, m.Data, m.Header.Get(jetstream.MsgIDHeader), p.id)
		}
		if m.Header.Get("Nats-Batch-Id") != "" {
			batched++
		}
	}
	return batched
}

func streamMsgs(t *testing.T, st jetstream.Stream) uint64 {
	t.Helper()
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestBatcherGroupsConcurrentPublishes(t *testing.T) {
	b, st := singleNodeBatcher(t, true)

	ps := publishConcurrently(b, 400, func(i int) string { return fmt.Sprintf("m%d", i) })
	batched := checkStored(t, st, ps)
	if n := streamMsgs(t, st); n != 400 {
		t.Fatalf("stream holds %d messages, want 400", n)
	}
	// 400 publishes at once cannot all have gone out one by one while the
	// first write was in flight
	if batched == 0 {
		t.Fatal("no message was written in an atomic batch")
	}
	t.Logf("%d of 400 messages in atomic batches", batched)
}

func TestBatcherOnReplicatedStream(t *testing.T) {
	c := bustest.NewCluster(t, 3)
	nc := c.Conn(t)
	js, st := batchStream(t, nc, true, 3)
	b := batch.New(nc, js, batch.Config{Atomic: true, Min: 2})
	defer b.Close()

	// a round's backlog usually goes as one batch; a batch that fails (a
	// fresh replicated stream can refuse its first) falls back to single
	// publishes, which must still store every message once. So rounds go
	// on until one batch is stored, and every round is checked.
	const n, rounds = 200, 5
	batched := 0
	for r := 0; r < rounds && batched == 0; r++ {
		ps := publishConcurrently(b, n, func(i int) string { return fmt.Sprintf("r%d-%d", r, i) })
		batched = checkStored(t, st, ps)
		if got, want := streamMsgs(t, st), uint64(n*(r+1)); got != want {
			t.Fatalf("after round %d the stream holds %d messages, want %d", r+1, got, want)
		}
		t.Logf("round %d: %d of %d messages batched; %+v", r+1, batched, n, b.Stats())
	}
	if batched == 0 {
		t.Fatalf("no message was written in an atomic batch in %d rounds: %+v", rounds, b.Stats())
	}
}

func TestBatcherStoresADuplicateIDOnce(t *testing.T) {
	b, st := singleNodeBatcher(t, true)

	// stored before: a batch holding it is refused by the server and its
	// messages go again one by one
	first, err := b.Publish(context.Background(), &nats.Msg{Subject: "b.s0", Data: []byte("body-same")}, "same")
	if err != nil {
		t.Fatal(err)
	}
	// the same id many times among others, at once: held out of the batch
	// that already carries it
	ps := publishConcurrently(b, 120, func(i int) string {
		if i%3 == 0 {
			return "same"
		}
		return fmt.Sprintf("d%d", i)
	})
	for _, p := range ps {
		if p.err != nil {
			t.Fatalf("publish %s: %v", p.id, p.err)
		}
		if p.id == "same" && p.seq != first {
			t.Fatalf("duplicate answered sequence %d, first was %d", p.seq, first)
		}
	}
	if n := streamMsgs(t, st); n != 81 {
		t.Fatalf("stream holds %d messages, want 81 (80 distinct + 1)", n)
	}
}

func TestBatcherWithoutAtomicStreamPublishesSingly(t *testing.T) {
	// the stream refuses atomic batches: every batch falls back
	b, st := singleNodeBatcher(t, false)

	ps := publishConcurrently(b, 150, func(i int) string { return fmt.Sprintf("s%d", i) })
	if batched := checkStored(t, st, ps); batched != 0 {
		t.Fatalf("%d messages carry batch headers after a refused batch", batched)
	}
	if n := streamMsgs(t, st); n != 150 {
		t.Fatalf("stream holds %d messages, want 150", n)
	}
}

func TestBatcherCancelledAndClosed(t *testing.T) {
	b, st := singleNodeBatcher(t, true)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Publish(ctx, &nats.Msg{Subject: "b.x", Data: []byte("x")}, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled publish: %v", err)
	}
	if _, err := b.Publish(context.Background(), &nats.Msg{Subject: "b.x", Data: []byte("x")}, ""); err == nil {
		t.Fatal("a publish without a message id was accepted")
	}
	b.Close()
	if _, err := b.Publish(context.Background(), &nats.Msg{Subject: "b.x", Data: []byte("x")}, "y"); !errors.Is(err, batch.ErrClosed) {
		t.Fatalf("publish after close: %v", err)
	}
	if n := streamMsgs(t, st); n != 0 {
		t.Fatalf("stream holds %d messages, want 0", n)
	}
}
