package takeover_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/admin"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// legacyHistory is the single history stream of the layout before sharding.
const legacyHistory = "LANGBOT_TAKEOVER_HISTORY"

// toLegacyLayout stops the service and rewrites the sharded history into
// the single stream of the earlier layout, as that version stored it: one
// subject langbot.takeover.history.<scope>.<sid> per session, each append
// with its entry id as Nats-Msg-Id.
func toLegacyLayout(t *testing.T, h *harness) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.stop()
	type stored struct {
		subject string
		msg     jetstream.Msg
	}
	var all []stored
	for k := range store.HistoryShards {
		s, err := h.js.Stream(ctx, store.HistoryStream(k))
		if err != nil {
			t.Fatal(err)
		}
		cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for range cons.CachedInfo().NumPending {
			m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
			if err != nil {
				t.Fatal(err)
			}
			_, sc, ids, err := wire.Subjects{}.ParseInternal(takeover.Plugin, m.Subject())
			if err != nil || len(ids) != 2 {
				t.Fatalf("history subject %q: %v", m.Subject(), err)
			}
			old, _ := wire.Subjects{}.Internal(takeover.Plugin, store.KindHistory, sc, ids[1])
			all = append(all, stored{old, m})
		}
		if err := h.js.DeleteStream(ctx, store.HistoryStream(k)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: legacyHistory, Subjects: []string{"langbot.takeover.history.>"}, MaxMsgsPerSubject: 2200,
		Duplicates: 2 * time.Minute, AllowDirect: true, AllowAtomicPublish: true,
	}); err != nil {
		t.Fatal(err)
	}
	for i, s := range all {
		msg := &nats.Msg{Subject: s.subject, Data: s.msg.Data(), Header: s.msg.Headers()}
		if _, err := h.js.PublishMsg(ctx, msg, jetstream.WithMsgID(fmt.Sprint("entry-", i))); err != nil {
			t.Fatal(err)
		}
	}
	return len(all)
}

// entryIDs are the ids and texts of a session's page, newest first.
func entryIDs(p takeover.MessagePage) []string {
	var out []string
	for _, e := range p.Messages {
		text := ""
		if len(e.Parts) > 0 {
			text = e.Parts[0].Text
		}
		out = append(out, e.ID+" "+e.Role+" "+text)
	}
	return out
}

func TestMigrateHistoryFromSingleStream(t *testing.T) {
	h := newHarness(t)
	type session struct {
		b   binding.Binding
		lid int
		n   int
	}
	b1, b2 := newBinding("mig1"), newBinding("mig2")
	sessions := []session{{b1, 1, 5}, {b1, 2, 3}, {b2, 1, 4}}
	for _, b := range []binding.Binding{b1, b2} {
		h.attach(b, `{}`, true)
	}
	before := map[string][]string{}
	for _, s := range sessions {
		for i := range s.n {
			h.mustEvent(s.b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", s.lid, s.lid, plain(fmt.Sprintf("m%d", i))))
		}
		sid := sidOf("bot-a", "person", s.lid)
		bustest.Eventually(t, "recorded", func() bool { return h.historyCount(s.b, sid) == s.n })
		before[s.b.InstallationUUID+sid] = entryIDs(h.messages(s.b, `{}`, sid))
	}
	total := toLegacyLayout(t, h)

	// The service refuses to start beside the old stream, saying what to do.
	svc, err := takeover.New(takeover.Config{}, bus.Deps{Conn: h.srv.Conn(t), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := svc.Run(ctx); !errors.Is(err, store.ErrLegacyHistory) {
		t.Fatalf("start beside the old stream: %v, want ErrLegacyHistory", err)
	}
	// So do the operator tools.
	if _, err := admin.GCBlobs(ctx, h.js, admin.GCOptions{DryRun: true}); !errors.Is(err, store.ErrLegacyHistory) {
		t.Fatalf("gc beside the old stream: %v, want ErrLegacyHistory", err)
	}

	sum, err := admin.MigrateHistory(ctx, h.js, admin.MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Sessions != len(sessions) || sum.Entries != total || !sum.Removed || len(sum.Left) != 0 {
		t.Fatalf("summary %+v, want %d sessions, %d entries, stream removed", sum, len(sessions), total)
	}
	if _, err := h.js.Stream(ctx, legacyHistory); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("old stream after migration: %v", err)
	}
	h.stop = nil
	h.svc = h.startReplica(h.srv.Conn(t))
	for _, b := range []binding.Binding{b1, b2} {
		h.attach(b, `{}`, true)
	}
	for _, s := range sessions {
		sid := sidOf("bot-a", "person", s.lid)
		if got, want := entryIDs(h.messages(s.b, `{}`, sid)), before[s.b.InstallationUUID+sid]; !slices.Equal(got, want) {
			t.Errorf("%s %d after migration:\n got %v\nwant %v", s.b.InstallationUUID, s.lid, got, want)
		}
	}
	// Recording goes on into the shards.
	h.mustEvent(b1, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("after")))
	sid := sidOf("bot-a", "person", 1)
	bustest.Eventually(t, "recorded after migration", func() bool { return h.historyCount(b1, sid) == 6 })

	// A second run finds nothing to do.
	if sum, err := admin.MigrateHistory(ctx, h.js, admin.MigrateOptions{}); err != nil || sum.Entries != 0 || sum.Removed {
		t.Fatalf("second run: %+v, %v", sum, err)
	}
}

// TestMigrateHistoryRerun checks that a run which could not finish (here: a
// subject that is no session's) keeps the old stream, and that running it
// again copies each session once, not twice.
func TestMigrateHistoryRerun(t *testing.T) {
	h := newHarness(t)
	b := newBinding("mig3")
	h.attach(b, `{}`, true)
	for i := range 4 {
		h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain(fmt.Sprint("m", i))))
	}
	sid := sidOf("bot-a", "person", 1)
	bustest.Eventually(t, "recorded", func() bool { return h.historyCount(b, sid) == 4 })
	want := entryIDs(h.messages(b, `{}`, sid))
	toLegacyLayout(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc, _ := b.Scope()
	stray, _ := wire.Subjects{}.Internal(takeover.Plugin, store.KindHistory, sc, "not-a-session")
	if _, err := h.js.Publish(ctx, stray, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}

	for run := range 2 {
		sum, err := admin.MigrateHistory(ctx, h.js, admin.MigrateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Sessions != 1 || sum.Entries != 4 || sum.Removed || !slices.Equal(sum.Left, []string{stray}) {
			t.Fatalf("run %d: %+v", run, sum)
		}
		if n := h.historyCount(b, sid); n != 4 {
			t.Fatalf("run %d: the session's shard subject holds %d entries, want 4", run, n)
		}
	}
	old, err := h.js.Stream(ctx, legacyHistory)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Purge(ctx, jetstream.WithPurgeSubject(stray)); err != nil {
		t.Fatal(err)
	}
	sum, err := admin.MigrateHistory(ctx, h.js, admin.MigrateOptions{})
	if err != nil || !sum.Removed || sum.Entries != 4 {
		t.Fatalf("after the stray subject went: %+v, %v", sum, err)
	}
	h.stop = nil
	h.svc = h.startReplica(h.srv.Conn(t))
	h.attach(b, `{}`, true)
	if got := entryIDs(h.messages(b, `{}`, sid)); !slices.Equal(got, want) {
		t.Fatalf("after migration:\n got %v\nwant %v", got, want)
	}
}
