package takeover_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

func TestGroupRecordingPolicy(t *testing.T) {
	h := newHarness(t)
	h.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Action == wire.ActionGetBotInfo {
			return bustest.HostReply{Data: map[string]any{"bot": map[string]any{"uuid": "bot-a", "name": "Bot", "adapter": "qq",
				"adapter_runtime_values": map[string]any{"bot_account_id": 10001}}}}
		}
		return bustest.HostReply{}
	})
	cases := []struct {
		name  string
		chain string
		setup func(h *harness, b binding.Binding, cfg, sid string)
		want  map[string]bool
	}{
		{"plain", plain("just chatting"), nil, map[string]bool{"all": true, "addressed": false, "active_only": false}},
		{"@bot", `[{"type":"At","target":10001},{"type":"Plain","text":" hi"}]`, nil, map[string]bool{"all": true, "addressed": true, "active_only": false}},
		{"trigger", plain("human please"), nil, map[string]bool{"all": true, "addressed": true, "active_only": true}},
		{"taken over", plain("x"), func(h *harness, b binding.Binding, cfg, sid string) {
			want := h.metric("takeover_sessions_active", nil) + 1
			h.putRecord(b, sid, &model.Record{V: 1, Gen: "00000000000000b1", SessionKey: "bot-a:group_g", Type: "group", TargetID: "g", BotUUID: "bot-a",
				Members: []model.Member{}, Takeover: model.TakeoverState{Active: true, ExpiresAt: h.now().UnixMilli() + 600_000}})
			bustest.Eventually(h.t, "the view to see the takeover", func() bool { return h.metric("takeover_sessions_active", nil) == want })
		}, map[string]bool{"all": true, "addressed": true, "active_only": true}},
		{"unread", plain("x"), func(h *harness, b binding.Binding, cfg, sid string) {
			h.putRecord(b, sid, &model.Record{V: 1, Gen: "00000000000000b2", SessionKey: "bot-a:group_g", Type: "group", TargetID: "g", BotUUID: "bot-a",
				Members: []model.Member{}, Unread: true})
		}, map[string]bool{"all": true, "addressed": false, "active_only": true}},
	}
	for _, policy := range []string{"all", "addressed", "active_only"} {
		cfg := fmt.Sprintf(`{"record_groups":%q,"trigger_words":["human"],"auto_takeover_on_trigger":false}`, policy)
		for _, tc := range cases {
			b := newBinding("his5")
			h.attach(b, cfg, true)
			sid := sidOf("bot-a", "group", "g")
			// warm the bot cache so the account id is known
			h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", "warm", "warm", plain("w")))
			bustest.Eventually(t, "bot info", func() bool { return len(h.host.Calls()) > 0 })
			if tc.setup != nil {
				tc.setup(h, b, cfg, sid)
			}
			before := h.historyCount(b, sid)
			r := h.mustEvent(b, cfg, takeover.EventGroupMessage, "bot-a", msgData("group", "g", 5, tc.chain))
			if blocked := tc.name == "taken over"; r.PreventDefault != blocked {
				t.Errorf("%s/%s: blocked=%v", policy, tc.name, r.PreventDefault)
			}
			if got := h.historyCount(b, sid) > before; got != tc.want[policy] {
				t.Errorf("%s/%s: recorded=%v, want %v", policy, tc.name, got, tc.want[policy])
			}
			if !tc.want[policy] && tc.setup == nil && h.record(b, sid) != nil {
				t.Errorf("%s/%s: an unrecorded message created a session", policy, tc.name)
			}
		}
	}
}

func TestForeignIdentityCannotWrite(t *testing.T) {
	h := newHarness(t)
	h.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Action == wire.ActionGetBotInfo {
			return bustest.HostReply{Data: map[string]any{"bot": map[string]any{"uuid": "bot-a", "name": "Bot", "adapter": "tg"}}}
		}
		return bustest.HostReply{}
	})
	b := newBinding("id3")
	h.attach(b, `{}`, true)
	sid := sidOf("bot-a", "person", 42)
	h.putRecord(b, sid, &model.Record{V: 1, Gen: "00000000000000c1", SessionKey: "bot-a:person_42", Type: "person", TargetID: "42", BotUUID: "bot-a", Adapter: "qq",
		Members: []model.Member{}, Takeover: model.TakeoverState{Active: true, ExpiresAt: h.now().UnixMilli() + 600_000}})
	// the first event fetches the adapter in the background; wait for it
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", "other", "other", plain("w")))
	bustest.Eventually(t, "bot info", func() bool { return len(h.host.Calls()) > 0 })
	before := snapshotScope(h, b)
	refused := h.metric("takeover_identity_refused_total", nil)
	r := h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 42, 42, plain("from tg")))
	if !r.PreventDefault {
		t.Fatal("identity refusal unblocked the AI")
	}
	bustest.Eventually(t, "refusal counted", func() bool { return h.metric("takeover_identity_refused_total", nil) > refused })
	if h.historyCount(b, sid) != 0 || h.record(b, sid).Adapter != "qq" {
		t.Fatal("a foreign adapter wrote into the session")
	}
	_ = before
}

func TestTwoBotsSameLauncherStaySeparate(t *testing.T) {
	h := newHarness(t)
	b := newBinding("id2")
	h.attach(b, `{}`, true)
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 42, 42, plain("from A")))
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-b", msgData("person", 42, 42, plain("from B")))
	sa, sb := sidOf("bot-a", "person", 42), sidOf("bot-b", "person", 42)
	pa, pb := h.messages(b, `{}`, sa), h.messages(b, `{}`, sb)
	if len(pa.Messages) != 1 || pa.Messages[0].Parts[0].Text != "from A" || len(pb.Messages) != 1 || pb.Messages[0].Parts[0].Text != "from B" {
		t.Fatal("histories mixed")
	}
	h.mustPage(b, `{}`, "POST", "/reply", map[string]string{"sid": sb, "idempotency_key": "key-b-0001", "text": "to B"}, nil)
	sends := h.host.Sends()
	if len(sends) != 1 {
		t.Fatalf("%d sends", len(sends))
	}
	if sm := sends[0].SendMessage(); sm.BotUUID != "bot-b" || sm.TargetType != "person" || sm.TargetID != "42" {
		t.Fatalf("reply went to %+v", sm)
	}
}

func TestStartDoesNoTenantWrites(t *testing.T) {
	h := newHarness(t)
	b := newBinding("iso3")
	h.attach(b, `{}`, true)
	h.takeOver(b, `{}`, "bot-a", 1)
	before := snapshotScope(h, b)
	kvs, _ := h.js.Stream(context.Background(), "KV_"+bus.Bucket(takeover.Plugin))
	k1, _ := kvs.Info(context.Background())
	h1, _, _ := historyState(t, h.js)
	h.startReplica(h.srv.Conn(t)) // a second replica starts
	k2, _ := kvs.Info(context.Background())
	h2, _, _ := historyState(t, h.js)
	if k1.State.LastSeq != k2.State.LastSeq || h1 != h2 {
		t.Fatal("starting a replica wrote tenant state")
	}
	if snapshotScope(h, b) != before {
		t.Fatal("scope changed")
	}
}

func TestBindingMismatchWritesNothing(t *testing.T) {
	h := newHarness(t)
	a, b := newBinding("iso5a"), newBinding("iso5b")
	h.attach(a, `{}`, true)
	h.attach(b, `{}`, true)
	before, beforeB := snapshotScope(h, a), snapshotScope(h, b)
	body, _ := json.Marshal(&wire.Request{Binding: b, Config: json.RawMessage(`{}`), Event: &wire.Event{Name: takeover.EventPersonMessage, BotUUID: "bot-a",
		Data: msgData("person", 1, 1, plain("x"))}})
	sc, _ := a.Scope()
	_, err := h.inv.InvokeRaw(context.Background(), wire.Subjects{}.Invocation(takeover.Plugin, wire.EndpointEvent, sc), bus.NewInvocationID(), body)
	if !isCode(err, 403, "") {
		t.Fatalf("mismatch: %v", err)
	}
	older := a
	older.RuntimeRevision = 2
	h.attach(older, `{}`, true)
	_, err = h.event(a, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("x")))
	if !isCode(err, 403, "") {
		t.Fatalf("older revision: %v", err)
	}
	if snapshotScope(h, b) != beforeB {
		t.Fatal("a mismatched invocation wrote")
	}
	// the newer attach changed only the authority record
	after := snapshotScope(h, a)
	strip := func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.Contains(l, ".authority ") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if strip(after) != strip(before) {
		t.Fatal("a refused invocation wrote")
	}
}

func TestFailedWriteIsReportedAndLeavesNothing(t *testing.T) {
	h := newHarness(t)
	b := newBinding("st5")
	h.attach(b, `{}`, true)
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("x")))
	sid := sidOf("bot-a", "person", 1)
	before := snapshotScope(h, b)
	takeover.SetFault(h.svc, func(op string, _ binding.Scope) error {
		if op == "kv.get" || op == "history.read" {
			return nil
		}
		return errFault
	})
	if err := h.page(b, `{}`, "POST", "/takeover", map[string]string{"sid": sid}, nil); !isCode(err, 503, "") {
		t.Fatalf("takeover with storage down: %v", err)
	}
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 2, 2, plain("new")))
	if snapshotScope(h, b) != before {
		t.Fatal("failed writes left state")
	}
	takeover.SetFault(h.svc, nil)
	h.mustPage(b, `{}`, "POST", "/takeover", map[string]string{"sid": sid}, nil)
	if !h.record(b, sid).Takeover.Active {
		t.Fatal("retry after recovery failed")
	}
}

func TestCorruptRecordIsIsolated(t *testing.T) {
	h := newHarness(t)
	b := newBinding("st6")
	h.attach(b, `{}`, true)
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("ok")))
	bad := strings.Repeat("f", 64)
	kv, _ := h.js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
	sc, _ := b.Scope()
	key, _ := bus.Key(sc, "session", bad)
	if _, err := kv.Put(context.Background(), key, []byte("{garbage")); err != nil {
		t.Fatal(err)
	}
	var list takeover.SessionList
	h.mustPage(b, `{}`, "GET", "/sessions", nil, &list)
	found := false
	for _, s := range list.Sessions {
		if s.SID == bad && s.Error == "unreadable" {
			found = true
		}
	}
	if !found || len(list.Sessions) != 2 {
		t.Fatalf("list %+v", list.Sessions)
	}
	if err := h.page(b, `{}`, "POST", "/takeover", map[string]string{"sid": bad}, nil); !isCode(err, 500, "unreadable") {
		t.Fatalf("action on corrupt: %v", err)
	}
	h.mustPage(b, `{}`, "POST", "/takeover", map[string]string{"sid": sidOf("bot-a", "person", 1)}, nil)
	h.mustPage(b, `{}`, "DELETE", "/session", map[string]string{"sid": bad}, nil)
	if _, err := kv.Get(context.Background(), key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("corrupt value after delete: %v", err)
	}
}

func TestReadsHaveNoSideEffects(t *testing.T) {
	h := newHarness(t)
	b := newBinding("api2")
	cfg := `{"trigger_words":["human"],"auto_takeover_on_trigger":false}`
	h.attach(b, cfg, true)
	h.mustEvent(b, cfg, takeover.EventGroupMessage, "bot-a", msgData("group", "g", 5, plain("human")))
	sid := sidOf("bot-a", "group", "g")
	before := snapshotScope(h, b)
	for _, op := range []struct {
		method, ep string
		body       any
	}{
		{"GET", "/info", nil}, {"GET", "/sessions", nil}, {"GET", "/messages", map[string]string{"sid": sid}},
		{"GET", "/takeover_status", map[string]string{"sid": sid}}, {"GET", "/user_info", map[string]string{"sid": sid, "member_id": "5"}},
		{"GET", "/group_info", map[string]string{"sid": sid}}, {"GET", "/export", map[string]string{"sid": sid}},
	} {
		h.mustPage(b, cfg, op.method, op.ep, op.body, nil)
	}
	if snapshotScope(h, b) != before {
		t.Fatal("a read changed state")
	}
	var sum takeover.Summary
	h.mustPage(b, cfg, "POST", "/mark_handled", map[string]string{"sid": sid}, &sum)
	if sum.Unread || sum.TriggeredWord != "" || h.record(b, sid).Unread {
		t.Fatal("mark_handled kept unread")
	}
	var card takeover.UserCard
	h.mustPage(b, cfg, "GET", "/user_info", map[string]string{"sid": sid, "member_id": "5"}, &card)
	if !card.FromGroup || card.Name != "Member" || card.GroupID != "g" || card.BotName == "" {
		t.Fatalf("user card %+v", card)
	}
	if err := h.page(b, cfg, "GET", "/group_info", map[string]string{"sid": sidOf("bot-a", "person", 1)}, nil); !isCode(err, 404, "") {
		t.Fatalf("unknown sid: %v", err)
	}
}

func TestNoticesOncePerTransition(t *testing.T) {
	h := newHarness(t)
	b := newBinding("tim6")
	cfg := `{"user_notice_on_takeover":"on","user_notice_on_release":"off"}`
	h.attach(b, cfg, true)
	sid := h.takeOver(b, cfg, "bot-a", 1)
	h.mustPage(b, cfg, "POST", "/takeover", map[string]string{"sid": sid}, nil) // extension
	h.mustPage(b, cfg, "DELETE", "/takeover", map[string]string{"sid": sid}, nil)
	h.mustPage(b, cfg, "DELETE", "/takeover", map[string]string{"sid": sid}, nil) // no-op
	h.mustPage(b, cfg, "POST", "/takeover", map[string]string{"sid": sid}, nil)
	h.mustPage(b, cfg, "DELETE", "/session", map[string]string{"sid": sid}, nil)
	sends := h.host.WaitSends(t, 3, 10*time.Second)
	var texts, keys []string
	for _, s := range sends {
		texts = append(texts, s.SendMessage().MessageChain[0].Text)
		keys = append(keys, s.IdempotencyKey)
	}
	if strings.Join(texts, ",") != "on,off,on" {
		t.Fatalf("notices %v", texts)
	}
	if !strings.HasSuffix(keys[0], ":on") || !strings.HasSuffix(keys[1], ":off") || keys[0] == keys[2] {
		t.Fatalf("keys %v", keys)
	}
	// none when the text is empty
	b2 := newBinding("tim6b")
	h.attach(b2, `{}`, true)
	h.host.Reset()
	sid2 := h.takeOver(b2, `{}`, "bot-a", 1)
	h.mustPage(b2, `{}`, "DELETE", "/takeover", map[string]string{"sid": sid2}, nil)
	if n := len(h.host.Sends()); n != 0 {
		t.Fatalf("%d notices with empty texts", n)
	}
}

func TestConcurrentWritesNotLostOrReordered(t *testing.T) {
	h := newHarness(t)
	h.startReplica(h.srv.Conn(t))
	b := newBinding("st3")
	h.attach(b, `{}`, true)
	const senders, per = 20, 10
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				h.mustEvent(b, `{}`, takeover.EventGroupMessage, "bot-a", msgData("group", "g", fmt.Sprint(s), plain(fmt.Sprintf("%d-%d", s, i))))
			}
		}()
	}
	wg.Wait()
	sid := sidOf("bot-a", "group", "g")
	bustest.Eventually(t, "all entries", func() bool { return h.historyCount(b, sid) == senders*per })
	bustest.Eventually(t, "all members", func() bool { return len(h.record(b, sid).Members) == senders })
	p := h.messages(b, `{}`, sid)
	next := map[string]int{}
	for i := len(p.Messages) - 1; i >= 0; i-- {
		var s, n int
		fmt.Sscanf(p.Messages[i].Parts[0].Text, "%d-%d", &s, &n)
		key := fmt.Sprint(s)
		if n != next[key] {
			t.Fatalf("sender %s: got #%d, want #%d", key, n, next[key])
		}
		next[key]++
	}
	bustest.Eventually(t, "history count", func() bool { return h.record(b, sid).HistoryCount == senders*per })
}

// ST-3 made deterministic: the first replica's appends to the session are
// held, so a message it decides is answered after the recording budget with
// its entry not yet stored; the sender's next message goes to the second
// replica, whose entry is stored first. The history still lists the
// sender's messages in send order. Which replica takes a message is the
// queue group's choice, so messages are sent until the first replica has
// taken one and the second one a later one (each 1 in 2).
func TestLateAppendKeepsSendOrder(t *testing.T) {
	h := newHarness(t)
	h.startReplica(h.srv.Conn(t))
	b := newBinding("st3late")
	h.attach(b, `{}`, true)
	sc, _ := b.Scope()
	sid := sidOf("bot-a", "group", "g")
	n := 0
	// send sends the sender's next message and says whether the first
	// replica decided it (its decision is counted before the reply)
	send := func() (first bool) {
		was := bustest.Metric(t, h.regs[0], "takeover_decisions_total", nil)
		h.mustEvent(b, `{}`, takeover.EventGroupMessage, "bot-a", msgData("group", "g", "7", plain(fmt.Sprintf("7-%d", n))))
		n++
		return bustest.Metric(t, h.regs[0], "takeover_decisions_total", nil) > was
	}
	send() // the session exists before the hold
	bustest.Eventually(t, "the first entry", func() bool { return h.historyCount(b, sid) == 1 })
	held, release := h.holdOp("history.append", sc)
	late, second := -1, 0 // the first replica's first message; the second's messages since
	for n < 64 && (late < 0 || second == 0) {
		if m := n; send() {
			if late < 0 {
				late = m
				<-held // its append is waiting, its reply went
			}
		} else if late >= 0 {
			second++
		}
	}
	if late < 0 || second == 0 {
		t.Fatalf("after %d messages the replicas did not take turns (first took #%d)", n, late)
	}
	// the messages before the held one and the second replica's after it
	// are stored while the held one is not
	bustest.Eventually(t, "the second replica's entries", func() bool { return h.historyCount(b, sid) == late+second })
	release()
	bustest.Eventually(t, "all entries", func() bool { return h.historyCount(b, sid) == n })
	raw := subjectEntries(t, h, sc, sid)
	pos := -1
	for i, e := range raw {
		if e.Parts[0].Text == fmt.Sprintf("7-%d", late) {
			pos = i
		}
	}
	if pos == late {
		t.Fatalf("the held entry #%d was stored in its place: the test did not reorder the stream", late)
	}
	p := h.messages(b, `{}`, sid)
	if len(p.Messages) != n {
		t.Fatalf("%d entries, want %d", len(p.Messages), n)
	}
	for i := range n {
		if got, want := p.Messages[n-1-i].Parts[0].Text, fmt.Sprintf("7-%d", i); got != want {
			t.Fatalf("entry %d is %s, want %s (stream order: %v)", i, got, want, entryTexts(raw))
		}
	}
	// pages of 2 follow the same order (the cursor is a place, not a sequence)
	var paged []model.Entry
	for before := uint64(0); ; {
		var pg takeover.MessagePage
		h.mustPage(b, `{}`, "GET", "/messages", map[string]any{"sid": sid, "limit": 2, "before": before}, &pg)
		paged = append(paged, pg.Messages...)
		if before = pg.NextBefore; before == 0 {
			break
		}
	}
	if got, want := fmt.Sprint(entryTexts(paged)), fmt.Sprint(entryTexts(p.Messages)); got != want {
		t.Fatalf("pages %s, want %s", got, want)
	}
}

// entryTexts is the first part's text of each entry.
func entryTexts(es []model.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Parts[0].Text
	}
	return out
}
