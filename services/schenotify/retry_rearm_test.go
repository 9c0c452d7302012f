package schenotify_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// A retried schedule_notify whose earlier attempt stored the reminder but
// left it unarmed (the arm and its undo both failed while JetStream was
// away; the attempt answered as temporary, so the retry runs again) arms it
// again, and it is delivered once at its time.
func TestRetryArmsItsOwnUnarmedReminder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := bind("installation-rearm", 1)
	s := sess("bot", "person", "1")
	// No lead: with the default 5 s lead the schedule of a reminder due in
	// a few seconds fires at once, and the check below would find it
	// already fired and gone.
	cfg := testConfig()
	cfg.Lead = -1
	e.start(t, cfg, nil, nil, nil)
	ctx := context.Background()
	sc := scopeOf(b)

	due := nextSecond().Add(5 * time.Second)
	params := map[string]any{"message": "armed again", "time_str": rfc(due)}
	const invID = "inv-rearm-1"
	if r := e.toolID(t, invID, b, cfgEN, s, schenotify.ToolSchedule, params); r["status"] != "ok" {
		t.Fatalf("schedule_notify: %v", r)
	}
	id := schenotify.DerivedID(sc.String(), invID)

	// what the failed attempt would have left: the record and its index
	// entry, no schedule, no settled invocation
	sched, err := wire.Subjects{}.Internal(schenotify.Plugin, schenotify.KindSched, sc, id)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := e.js.Stream(ctx, schenotify.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(ctx, jetstream.WithPurgeSubject(sched)); err != nil {
		t.Fatal(err)
	}
	dedupe, err := e.js.KeyValue(ctx, bus.DedupeBucket(schenotify.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	if err := dedupe.Purge(ctx, bus.InvocationKey(sc, invID)); err != nil {
		t.Fatal(err)
	}

	if r := e.toolID(t, invID, b, cfgEN, s, schenotify.ToolSchedule, params); r["status"] != "ok" || r["id"] != id {
		t.Fatalf("retry: %v", r)
	}
	if _, err := stream.GetLastMsgForSubject(ctx, sched); err != nil {
		t.Fatalf("the retry left the reminder unarmed: %v", err)
	}
	calls := e.host.wait(t, 1, 10*time.Second)
	if sentText(calls[0]) != "[Notify] armed again" {
		t.Fatalf("delivered %q", sentText(calls[0]))
	}
	if n := len(e.host.sends()); n != 1 {
		t.Fatalf("%d sends, want 1", n)
	}
}
