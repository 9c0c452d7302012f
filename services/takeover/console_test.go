package takeover_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	"github.com/langbot-nats/plugins/services/takeover/store"
)

func TestInstallationsSeeOnlyTheirOwnState(t *testing.T) {
	h := newHarness(t)
	a, b := newBinding("isoA"), newBinding("isoB")
	cfgA := `{"takeover_timeout":600,"trigger_words":["human"],"user_notice_on_takeover":"hi"}`
	cfgB := `{"takeover_timeout":60}`
	h.attach(a, cfgA, true)
	h.attach(b, cfgB, true)
	if r := h.mustEvent(a, cfgA, takeover.EventPersonMessage, "bot-1", msgData("person", 42, 42, plain("human"))); !r.PreventDefault {
		t.Fatal("A not taken over")
	}
	var list takeover.SessionList
	h.mustPage(b, cfgB, "GET", "/sessions", nil, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("B sees %d sessions", len(list.Sessions))
	}
	sid := sidOf("bot-1", "person", 42)
	if err := h.page(b, cfgB, "GET", "/takeover_status", map[string]string{"sid": sid}, nil); !isCode(err, 404, "") {
		t.Fatalf("B status of A's sid: %v", err)
	}
	if r := h.mustEvent(b, cfgB, takeover.EventPersonMessage, "bot-1", msgData("person", 42, 42, plain("hello"))); r.PreventDefault {
		t.Fatal("B's event blocked by A's takeover")
	}
	var tv takeover.TakeoverView
	h.mustPage(b, cfgB, "GET", "/takeover_status", map[string]string{"sid": sid}, &tv)
	if tv.Active || tv.Timeout != 60 {
		t.Fatalf("B status %+v", tv)
	}
	h.mustPage(a, cfgA, "GET", "/sessions", nil, &list)
	if len(list.Sessions) != 1 || !list.Sessions[0].Takeover.Active {
		t.Fatalf("A list %+v", list.Sessions)
	}
	// notice and reply idempotency keys carry the scope
	scA, _ := a.Scope()
	h.mustPage(a, cfgA, "POST", "/reply", map[string]string{"sid": sid, "idempotency_key": "key-00001", "text": "hello"}, nil)
	for _, c := range h.host.Sends() {
		if !strings.HasPrefix(c.IdempotencyKey, "takeover:"+scA.String()+":") {
			t.Fatalf("idempotency key %q lacks the scope", c.IdempotencyKey)
		}
	}
	// every key and subject starts with its scope
	for _, k := range h.keys(bus.Bucket(takeover.Plugin)) {
		sc, _, _, err := bus.ParseKey(k)
		if err != nil {
			t.Fatalf("key %q without a scope", k)
		}
		_ = sc
	}
	for _, bb := range []struct {
		name string
		n    int
	}{{"A", h.historyCount(a, sid)}, {"B", h.historyCount(b, sid)}} {
		if bb.n == 0 {
			t.Fatalf("%s has no history under its own scope", bb.name)
		}
	}
}

func TestRevokeAffectsOnlyItsInstallation(t *testing.T) {
	h := newHarness(t)
	a, b := newBinding("iso4A"), newBinding("iso4B")
	h.attach(a, `{}`, true)
	h.attach(b, `{}`, true)
	sidA := h.takeOver(a, `{}`, "bot-1", 1)
	sidB := h.takeOver(b, `{}`, "bot-1", 1)
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	h.mustPage(b, `{}`, "POST", "/reply", map[string]string{"sid": sidB, "idempotency_key": "key-00001", "image_base64": png}, nil)

	h.revoke(b, wire.ReasonDisable, bus.StateDisabled)
	var list takeover.SessionList
	h.mustPage(b, `{}`, "GET", "/sessions", nil, &list)
	if len(list.Sessions) != 1 {
		t.Fatal("disabled B cannot read")
	}
	if err := h.page(b, `{}`, "POST", "/takeover", map[string]string{"sid": sidB}, nil); !isCode(err, 403, "installation_inactive") {
		t.Fatalf("action while disabled: %v", err)
	}
	h.attach(b, `{}`, true)
	h.mustPage(b, `{}`, "GET", "/sessions", nil, &list)
	if len(list.Sessions) != 1 {
		t.Fatal("B's data lost on disable")
	}

	aKeys := snapshotScope(h, a)
	h.revoke(b, wire.ReasonUninstall, bus.StateRemoved)
	scB, _ := b.Scope()
	bustest.Eventually(t, "B purged", func() bool {
		for _, k := range h.keys(bus.Bucket(takeover.Plugin)) {
			if strings.HasPrefix(k, scB.String()+".") && k != bus.AuthorityKey(scB) {
				return false
			}
		}
		for _, k := range h.keys(bus.DedupeBucket(takeover.Plugin)) {
			if strings.HasPrefix(k, scB.String()+".") {
				return false
			}
		}
		return h.historyCount(b, sidB) == 0
	})
	obs, _ := h.js.ObjectStore(context.Background(), store.BlobBucket)
	objs, _ := obs.List(context.Background())
	for _, o := range objs {
		if strings.HasPrefix(o.Name, scB.String()+".") {
			t.Fatalf("blob %q left", o.Name)
		}
	}
	if got := snapshotScope(h, a); got != aKeys {
		t.Fatalf("A changed:\n%s\n%s", aKeys, got)
	}
	if _, err := h.event(b, `{}`, takeover.EventPersonMessage, "bot-1", msgData("person", 1, 1, plain("x"))); !isCode(err, 403, "") {
		t.Fatalf("event after uninstall: %v", err)
	}
	if r := h.mustEvent(a, `{}`, takeover.EventPersonMessage, "bot-1", msgData("person", 1, 1, plain("x"))); !r.PreventDefault {
		t.Fatal("A lost its takeover")
	}
	_ = sidA
}

type scopeT = binding.Scope

var errFault = errors.New("injected fault")

// snapshotScope renders every key (with revision and value) of a scope in
// both buckets, its history stream state and its blobs.
func snapshotScope(h *harness, b binding.Binding) string {
	h.t.Helper()
	sc, _ := b.Scope()
	ctx := context.Background()
	var lines []string
	for _, bucket := range []string{bus.Bucket(takeover.Plugin), bus.DedupeBucket(takeover.Plugin)} {
		kv, err := h.js.KeyValue(ctx, bucket)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, k := range h.keys(bucket) {
			if !strings.HasPrefix(k, sc.String()+".") {
				continue
			}
			e, err := kv.Get(ctx, k)
			if err != nil {
				continue
			}
			lines = append(lines, fmt.Sprintf("%s %d %s", k, e.Revision(), e.Value()))
		}
	}
	subj := wire.Subjects{}.InternalScope(takeover.Plugin, store.KindHistory, sc)
	for k := range store.HistoryShards {
		hist, err := h.js.Stream(ctx, store.HistoryStream(k))
		if err != nil {
			h.t.Fatal(err)
		}
		info, err := hist.Info(ctx, jetstream.WithSubjectFilter(subj))
		if err != nil {
			h.t.Fatal(err)
		}
		for k, n := range info.State.Subjects {
			lines = append(lines, fmt.Sprintf("%s %d", k, n))
		}
	}
	obs, _ := h.js.ObjectStore(ctx, store.BlobBucket)
	objs, _ := obs.List(ctx)
	for _, o := range objs {
		if strings.HasPrefix(o.Name, sc.String()+".") {
			lines = append(lines, o.Name)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// A host attempt refused with reply_in_progress while another attempt of
// the same reply runs is retried under its own invocation id: once the
// first attempt has finished, that retry gets the reply's result. (The
// runner used to keep the 409 as the invocation's final answer, so every
// retry got it again: seen in a cluster test after a leader change.)
func TestReplyRetryAfterInProgress(t *testing.T) {
	h := newHarness(t)
	b := newBinding("rep-retry")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-1", 1)
	body := map[string]string{"sid": sid, "idempotency_key": "retry-key", "text": "hello"}
	sc, _ := b.Scope()
	held, release := h.holdOp("kv.update", sc)
	first := make(chan error, 1)
	go func() { first <- h.page(b, `{}`, "POST", "/reply", body, nil) }()
	<-held // the first attempt holds the reply record, before its send
	for range 2 {
		if err := h.pageCall(b, `{}`, "POST", "/reply", body, "", "second-attempt", nil); !isCode(err, 409, "reply_in_progress") {
			t.Fatalf("while the first attempt runs: %v, want 409 reply_in_progress", err)
		}
	}
	release()
	if err := <-first; err != nil {
		t.Fatalf("first attempt: %v", err)
	}
	var r takeover.ReplyResult
	if err := h.pageCall(b, `{}`, "POST", "/reply", body, "", "second-attempt", &r); err != nil || !r.Delivered || !r.Saved {
		t.Fatalf("retry after the first attempt finished: %+v, %v", r, err)
	}
	if n := len(h.host.Sends()); n != 1 {
		t.Fatalf("%d sends, want 1", n)
	}
}

func TestReplyIdempotency(t *testing.T) {
	h := newHarness(t)
	b := newBinding("rep1")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-1", 1)
	body := map[string]string{"sid": sid, "idempotency_key": "same-key-1", "text": "hello"}
	var r1, r2 takeover.ReplyResult
	h.mustPage(b, `{}`, "POST", "/reply", body, &r1)
	h.mustPage(b, `{}`, "POST", "/reply", body, &r2)
	if !r1.Delivered || !r1.Saved || r1.Entry == nil || r2.Entry == nil || r1.Entry.ID != r2.Entry.ID {
		t.Fatalf("results %+v %+v", r1, r2)
	}
	if n := len(h.host.Sends()); n != 1 {
		t.Fatalf("%d sends", n)
	}
	// concurrently
	body2 := map[string]string{"sid": sid, "idempotency_key": "conc-key-2", "text": "again"}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = h.page(b, `{}`, "POST", "/reply", body2, nil) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !isCode(err, 409, "reply_in_progress") {
			t.Fatalf("concurrent reply: %v", err)
		}
	}
	var r3 takeover.ReplyResult
	h.mustPage(b, `{}`, "POST", "/reply", body2, &r3)
	if n := len(h.host.Sends()); n != 2 || !r3.Saved {
		t.Fatalf("%d sends after concurrent replies, saved=%v", n, r3.Saved)
	}
	if got := len(h.messages(b, `{}`, sid).Messages); got != 3 {
		t.Fatalf("%d entries", got)
	}
	// a host timeout: outcome unknown, and the retry carries the same key
	h.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		return bustest.HostReply{Drop: c.Action == wire.ActionSendMessage}
	})
	body3 := map[string]string{"sid": sid, "idempotency_key": "lost-key-3", "text": "?"}
	if err := h.page(b, `{}`, "POST", "/reply", body3, nil); !isCode(err, 503, "outcome_unknown") {
		t.Fatalf("timeout: %v", err)
	}
	h.host.Respond(nil)
	h.mustPage(b, `{}`, "POST", "/reply", body3, nil)
	sends := h.host.Sends()
	if a, b := sends[len(sends)-2].IdempotencyKey, sends[len(sends)-1].IdempotencyKey; a != b || !strings.HasSuffix(a, ":lost-key-3") {
		t.Fatalf("retry keys %q %q", a, b)
	}
}

func TestDeliveredButNotSaved(t *testing.T) {
	h := newHarness(t)
	b := newBinding("rep2")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-1", 1)
	takeover.SetFault(h.svc, func(op string, _ scopeT) error {
		if op == "history.append" {
			return errFault
		}
		return nil
	})
	body := map[string]string{"sid": sid, "idempotency_key": "key-notsaved", "text": "hi"}
	var r takeover.ReplyResult
	h.mustPage(b, `{}`, "POST", "/reply", body, &r)
	if !r.Delivered || r.Saved || r.Warning != "history_not_saved" {
		t.Fatalf("result %+v", r)
	}
	takeover.SetFault(h.svc, nil)
	h.mustPage(b, `{}`, "POST", "/reply", body, &r)
	if n := len(h.host.Sends()); n != 1 {
		t.Fatalf("%d sends", n)
	}
}

func TestReplyValidation(t *testing.T) {
	h := newHarness(t)
	b := newBinding("rep3")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-1", 1)
	if err := h.page(b, `{}`, "POST", "/reply", map[string]string{"sid": sid, "idempotency_key": "key-00001"}, nil); !isCode(err, 400, "") {
		t.Fatalf("empty: %v", err)
	}
	big := base64.StdEncoding.EncodeToString(make([]byte, 10<<20+1))
	if err := pageUnhurried(t, h, b, "/reply", map[string]string{"sid": sid, "idempotency_key": "key-00002", "file_base64": big}); !isCode(err, 413, "") {
		t.Fatalf("too large: %v", err)
	}
	txt := base64.StdEncoding.EncodeToString([]byte("just text"))
	if err := h.page(b, `{}`, "POST", "/reply", map[string]string{"sid": sid, "idempotency_key": "key-00003", "image_base64": txt}, nil); !isCode(err, 400, "") {
		t.Fatalf("non-image: %v", err)
	}
	if n := len(h.host.Sends()); n != 0 {
		t.Fatalf("%d sends for invalid replies", n)
	}
	var r takeover.ReplyResult
	h.mustPage(b, `{}`, "POST", "/reply", map[string]string{"sid": sid, "idempotency_key": "key-00004", "file_base64": txt, "file_name": "../../x\u0000y.txt"}, &r)
	if r.Entry.Parts[0].Name != "xy.txt" || h.host.Sends()[0].SendMessage().MessageChain[0].Name != "xy.txt" {
		t.Fatalf("file name %+v", r.Entry.Parts)
	}
}

// pageUnhurried POSTs a console body of megabytes and returns the error
// reply. What the caller checks is the answer, not how soon it comes: under
// the race detector on a loaded machine, moving and decoding a 14 MB body
// can take longer than the harness's 20 s per call, so this waits as long
// as the test may run.
func pageUnhurried(t *testing.T, h *harness, b binding.Binding, endpoint string, body any) error {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(15 * time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	_, err = h.inv.Invoke(ctx, takeover.Plugin, wire.EndpointPage, bus.NewInvocationID(), &wire.Request{
		Binding: b, Config: json.RawMessage(`{}`),
		Page: &wire.Page{PageID: "console", Endpoint: endpoint, Method: "POST", Body: raw},
	})
	return err
}

func TestTakeoverOnReplyAndAudit(t *testing.T) {
	h := newHarness(t)
	b := newBinding("tim5")
	on := `{"user_notice_on_takeover":"human here"}`
	h.attach(b, on, true)
	h.mustEvent(b, on, takeover.EventPersonMessage, "bot-1", msgData("person", 1, 1, plain("hi")))
	sid := sidOf("bot-1", "person", 1)
	var r takeover.ReplyResult
	if err := h.pageAs(b, on, "POST", "/reply", map[string]string{"sid": sid, "idempotency_key": "key-00001", "text": "operator text"}, "alice", &r); err != nil {
		t.Fatal(err)
	}
	rec := h.record(b, sid)
	if !rec.Takeover.Active || rec.Takeover.Via != "reply" || rec.Takeover.Operator != "alice" || r.Entry.Operator != "alice" {
		t.Fatalf("takeover %+v entry operator %q", rec.Takeover, r.Entry.Operator)
	}
	sends := h.host.Sends()
	if len(sends) != 2 || sends[0].SendMessage().MessageChain[0].Text != "human here" || sends[1].SendMessage().MessageChain[0].Text != "operator text" {
		t.Fatalf("send order %+v", sends)
	}
	// a page call without caller is "host"
	h.mustPage(b, on, "DELETE", "/takeover", map[string]string{"sid": sid}, nil)
	if rec := h.record(b, sid); rec.Takeover.ReleasedBy != "host" {
		t.Fatalf("released_by %q", rec.Takeover.ReleasedBy)
	}
	// takeover_on_reply false: no start, but an active takeover is extended
	off := `{"takeover_on_reply":false}`
	h.mustPage(b, off, "POST", "/reply", map[string]string{"sid": sid, "idempotency_key": "key-00002", "text": "x"}, nil)
	if h.record(b, sid).Takeover.Active {
		t.Fatal("reply started a takeover with takeover_on_reply false")
	}
	h.mustPage(b, off, "POST", "/takeover", map[string]string{"sid": sid}, nil)
	exp := h.record(b, sid).Takeover.ExpiresAt
	h.clock.Advance(5 * time.Second)
	h.mustPage(b, off, "POST", "/reply", map[string]string{"sid": sid, "idempotency_key": "key-00003", "text": "y"}, nil)
	h.clock.Advance(-5 * time.Second)
	if h.record(b, sid).Takeover.ExpiresAt <= exp {
		t.Fatal("reply did not extend the takeover")
	}
}

func TestDeleteExportClear(t *testing.T) {
	h := newHarness(t)
	b := newBinding("api3")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-1", 1)
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	h.mustPage(b, `{}`, "POST", "/reply", map[string]string{"sid": sid, "idempotency_key": "key-00001", "text": "t", "image_base64": png, "file_base64": "aGVsbG8=", "file_name": "h.txt"}, nil)
	var ex takeover.Export
	h.mustPage(b, `{}`, "GET", "/export", map[string]any{"sid": sid, "inline_blobs": true}, &ex)
	if ex.Format != "langbot.takeover.export" || len(ex.Messages) != 2 || len(ex.Blobs) != 2 || ex.Messages[0].Role != "user" {
		t.Fatalf("export %d messages %d blobs", len(ex.Messages), len(ex.Blobs))
	}
	for name, bd := range ex.Blobs {
		if bd.DataURL == "" {
			t.Fatalf("blob %s not inline", name)
		}
	}
	if err := h.page(b, `{}`, "DELETE", "/clear", map[string]any{}, nil); !isCode(err, 400, "") {
		t.Fatalf("clear without confirm: %v", err)
	}
	h.mustPage(b, `{}`, "DELETE", "/session", map[string]string{"sid": sid}, nil)
	if h.record(b, sid) != nil || h.historyCount(b, sid) != 0 {
		t.Fatal("delete left the record or history")
	}
	obs, _ := h.js.ObjectStore(context.Background(), store.BlobBucket)
	for name := range ex.Blobs {
		if _, err := obs.GetInfo(context.Background(), name); err == nil {
			t.Fatalf("blob %s left", name)
		}
	}
	if err := h.page(b, `{}`, "GET", "/messages", map[string]string{"sid": sid}, nil); !isCode(err, 404, "") {
		t.Fatalf("deleted session readable: %v", err)
	}
	// clear
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-1", msgData("person", 2, 2, plain("a")))
	h.mustEvent(b, `{}`, takeover.EventGroupMessage, "bot-1", msgData("group", 3, 2, plain("b")))
	var cleared map[string]int
	h.mustPage(b, `{}`, "DELETE", "/clear", map[string]any{"confirm": true}, &cleared)
	var list takeover.SessionList
	h.mustPage(b, `{}`, "GET", "/sessions", nil, &list)
	if cleared["cleared"] != 2 || len(list.Sessions) != 0 {
		t.Fatalf("cleared %v, left %d", cleared, len(list.Sessions))
	}
	// recording still works
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-1", msgData("person", 2, 2, plain("new")))
	if p := h.messages(b, `{}`, sidOf("bot-1", "person", 2)); len(p.Messages) != 1 {
		t.Fatalf("%d entries after clear", len(p.Messages))
	}
}

func TestLegacySessionReadOnly(t *testing.T) {
	h := newHarness(t)
	b := newBinding("id6")
	h.attach(b, `{}`, true)
	legacySID := model.SID("person_42")
	h.putRecord(b, legacySID, &model.Record{V: 1, Gen: "0000000000000001", SessionKey: "person_42", Type: "person", TargetID: "42", Name: "Old", Members: []model.Member{}})
	var list takeover.SessionList
	h.mustPage(b, `{}`, "GET", "/sessions", nil, &list)
	if len(list.Sessions) != 1 || !list.Sessions[0].Legacy {
		t.Fatalf("list %+v", list.Sessions)
	}
	for _, op := range [][2]string{{"POST", "/takeover"}, {"DELETE", "/takeover"}, {"POST", "/mark_handled"}} {
		if err := h.page(b, `{}`, op[0], op[1], map[string]string{"sid": legacySID}, nil); !isCode(err, 409, "legacy_read_only") {
			t.Fatalf("%v on legacy: %v", op, err)
		}
	}
	if err := h.page(b, `{}`, "POST", "/reply", map[string]string{"sid": legacySID, "idempotency_key": "key-00001", "text": "x"}, nil); !isCode(err, 409, "legacy_read_only") {
		t.Fatalf("reply on legacy: %v", err)
	}
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-b", msgData("person", 42, 42, plain("hi")))
	h.mustPage(b, `{}`, "GET", "/sessions", nil, &list)
	if len(list.Sessions) != 2 {
		t.Fatalf("%d sessions", len(list.Sessions))
	}
	if r := h.record(b, legacySID); r.Name != "Old" || r.HistoryCount != 0 {
		t.Fatal("legacy row changed")
	}
	h.mustPage(b, `{}`, "GET", "/export", map[string]string{"sid": legacySID}, nil)
	h.mustPage(b, `{}`, "DELETE", "/session", map[string]string{"sid": legacySID}, nil)
}

// TestReplyWithoutHostSaysSo: with no host connected, a reply fails with
// 503 send_failed whose message says no host answered (it said the host
// refused the message).
func TestReplyWithoutHostSaysSo(t *testing.T) {
	h := newHarness(t)
	b := newBinding("rep-nohost")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-1", 1)
	h.hostC.Close()
	err := h.page(b, `{}`, "POST", "/reply", map[string]string{"sid": sid, "idempotency_key": "nohost-key", "text": "hello"}, nil)
	var e *wire.Error
	if !errors.As(err, &e) || e.Code != 503 || e.Reason != takeover.ReasonSendFailed {
		t.Fatalf("reply without a host: %v, want 503 send_failed", err)
	}
	if strings.Contains(e.Message, "refused") || !strings.Contains(e.Message, "no host") {
		t.Fatalf("message %q: want it to say no host answered, not that one refused", e.Message)
	}
}
