package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// replicaBehind is a session's history as the stream leader holds it
// (leader: 13 entries, the newest an acknowledged operator reply) and a
// replica that has applied only the first 12 (replica), each a real
// JetStream stream; reads go to the replica, as when a cluster places the
// read's consumer on a follower that lags the leader (TestClusterLeaderStops
// lost the newest reply that way after a restart).
type replicaBehind struct {
	leader, replica *Store
	sc              binding.Scope
	sid             string
	entries         []*model.Entry
}

func newReplicaBehind(t *testing.T) *replicaBehind {
	t.Helper()
	ctx := context.Background()
	sc, err := binding.NewScope("inst", "ws", "inst1")
	if err != nil {
		t.Fatal(err)
	}
	r := &replicaBehind{sc: sc, sid: "0123456789abcdef0123456789abcdef"}
	for _, s := range []**Store{&r.leader, &r.replica} {
		js, err := jetstream.New(bustest.NewServer(t).Conn(t))
		if err != nil {
			t.Fatal(err)
		}
		*s = New(js, wire.Subjects{}, nil)
		if err := (*s).EnsureHistory(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 13 {
		e := &model.Entry{V: 1, ID: fmt.Sprintf("e%02d", i), Gen: "g1", TS: int64(1000 + i), Role: model.RoleHuman, Operator: "host",
			Parts: []model.Part{{Type: model.PartText, Text: fmt.Sprintf("op-%02d", i)}}}
		r.entries = append(r.entries, e)
		stores := []*Store{r.leader, r.replica}
		if i == 12 {
			stores = stores[:1] // acknowledged by the leader, not yet on the replica
		}
		for _, s := range stores {
			if _, err := s.AppendEntry(ctx, sc, r.sid, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.leader.replica = func(name string) jetstream.Stream {
		for k := range r.replica.hist {
			if HistoryStream(k) == name {
				return r.replica.hist[k].stream
			}
		}
		t.Fatalf("no replica of %s", name)
		return nil
	}
	return r
}

// catchUp applies the newest entry on the replica.
func (r *replicaBehind) catchUp(ctx context.Context) error {
	_, err := r.replica.AppendEntry(ctx, r.sc, r.sid, r.entries[12])
	return err
}

// TestReadOnReplicaBehindLeaderIsNeverShort: a history read served by a
// replica that has not applied the newest acknowledged entry fails (the
// caller answers 503 and is retried) instead of returning the history
// without it; once the replica has it, the read returns all 13, whether
// it caught up before the read or while the read waited. Both the
// session's read and the scope's (the sweep's filter) are bounded.
func TestReadOnReplicaBehindLeaderIsNeverShort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := newReplicaBehind(t)
	got, last, err := r.leader.ReadHistory(ctx, r.sc, r.sid)
	if err == nil {
		t.Fatalf("a read on a replica behind the leader returned %d of 13 entries (last seq %d) and no error", len(got), last)
	}
	h, _ := r.leader.history(r.sc, r.sid)
	all := r.leader.subj.InternalScope(Plugin, KindHistory, r.sc)
	if got, _, err := r.leader.readSubject(ctx, r.sc, h, all); err == nil {
		t.Fatalf("a scope read on a replica behind the leader returned %d of 13 entries and no error", len(got))
	}

	// the replica applies the entry while the read waits for it
	replica := r.leader.replica
	caught := make(chan error, 1)
	r.leader.replica = func(name string) jetstream.Stream {
		go func() { caught <- r.catchUp(ctx) }()
		return replica(name)
	}
	got, last, err = r.leader.ReadHistory(ctx, r.sc, r.sid)
	if cerr := <-caught; cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 13 || got[12].ID != r.entries[12].ID || last != 13 {
		t.Fatalf("read %d entries, last seq %d; want 13 ending with %s at seq 13", len(got), last, r.entries[12].ID)
	}
	if got, _, err := r.leader.readSubject(ctx, r.sc, h, all); err != nil || len(got) != 13 {
		t.Fatalf("scope read: %d entries, %v; want 13", len(got), err)
	}
}
