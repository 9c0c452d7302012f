package takeover_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/admin"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// originalRow is one stored row of the original plugin.
func originalRow(prefix, sessionKey string, session any, messages any) (string, string) {
	v, _ := json.Marshal(map[string]any{"session_key": sessionKey, "session": session, "messages": messages})
	sum := sha256.Sum256([]byte(sessionKey))
	return prefix + "ht_session_v2_" + hex.EncodeToString(sum[:]), base64.StdEncoding.EncodeToString(v)
}

func importFixture(b binding.Binding) (map[string]string, map[string]string) {
	sc, _ := b.Scope()
	p := strings.ReplaceAll(sc.String(), ".", ":") + ":"
	rows := map[string]string{p + "ht_storage_schema": base64.StdEncoding.EncodeToString([]byte("2"))}
	sids := map[string]string{}
	var msgs []map[string]any
	for i := range 400 {
		msgs = append(msgs, map[string]any{"role": "user", "sender_id": "42", "sender_name": "Ann", "content_type": "text", "content": fmt.Sprintf("m%d", i), "ts": 1767225600.5 + float64(i)})
	}
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	msgs = append(msgs, map[string]any{"role": "human", "content_type": "image", "content": png, "ts": 1767226100.0})
	k, v := originalRow(p, "bot-a:person_42", map[string]any{
		"session_key": "bot-a:person_42", "type": "person", "target_id": "42", "bot_uuid": "bot-a", "name": "Ann", "adapter": "qq",
		"members": map[string]any{}, "last_msg_at": 1767226100.0, "last_msg_preview": "hi", "unread": true, "triggered_word": "refund",
		"takeover": map[string]any{"active": true, "started_at": 1767226000.0, "last_human_at": 1767226050.0},
		"custom":   map[string]any{"keep": true},
	}, msgs)
	rows[k], sids["bot"] = v, k[len(k)-64:]
	k, v = originalRow(p, "person_7", map[string]any{"type": "person", "target_id": "7", "name": "Old"}, []map[string]any{{"content": "legacy"}})
	rows[k], sids["legacy"] = v, k[len(k)-64:]
	k, v = originalRow(p, "bot-a:group_9", nil, []map[string]any{{"role": "user", "content_type": "text", "content": "orphan", "ts": 1.0}})
	rows[k], sids["orphan"] = v, k[len(k)-64:]
	// another installation's rows and an unrelated key are ignored
	k, v = originalRow("x:y:z:", "bot-a:person_1", map[string]any{}, nil)
	rows[k] = v
	rows[p+"ht_sessions"] = base64.StdEncoding.EncodeToString([]byte("{}"))
	return rows, sids
}

func runImport(t *testing.T, h *harness, b binding.Binding, rows map[string]string) (*admin.ImportSummary, error) {
	t.Helper()
	data, _ := json.Marshal(rows)
	sc, _ := b.Scope()
	return admin.Import(context.Background(), h.js, admin.ImportOptions{Scope: sc, Data: data})
}

func TestImportOriginalRecords(t *testing.T) {
	h := newHarness(t)
	b := newBinding("imp1")
	h.attach(b, `{"history_limit":2000}`, true)
	rows, sids := importFixture(b)
	sum, err := runImport(t, h, b, rows)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Imported != 3 || sum.Invalid != 0 || sum.Ignored != 3 {
		t.Fatalf("summary %s", sum)
	}
	rec := h.record(b, sids["bot"])
	if rec.Takeover.Active || !rec.Unread || rec.TriggeredWord != "refund" || rec.Adapter != "qq" || rec.Legacy || rec.Import.State != "done" ||
		string(rec.Import.Extra["custom"]) != `{"keep":true}` || rec.LastMsgAt != 1767226100000 {
		t.Fatalf("record %+v", rec)
	}
	if r := h.mustEvent(b, `{"history_limit":2000}`, takeover.EventPersonMessage, "bot-a", msgData("person", 42, 42, plain("hi"))); r.PreventDefault {
		t.Fatal("an imported takeover blocks the AI")
	}
	p := h.messages(b, `{"history_limit":2000}`, sids["bot"])
	var all []model.Entry
	all = append(all, p.Messages...)
	before := p.NextBefore
	for before != 0 {
		var q takeover.MessagePage
		h.mustPage(b, `{"history_limit":2000}`, "GET", "/messages", map[string]any{"sid": sids["bot"], "limit": 200, "before": before}, &q)
		all = append(all, q.Messages...)
		before = q.NextBefore
	}
	// 400 imported + the image + the event just recorded
	if len(all) != 402 || all[len(all)-1].Parts[0].Text != "m0" || all[len(all)-1].TS != 1767225600500 {
		t.Fatalf("%d entries", len(all))
	}
	img := all[1].Parts[0]
	if all[1].Role != "human" || img.Blob == "" || img.Mime != "image/png" {
		t.Fatalf("image entry %+v", all[1])
	}
	var list takeover.SessionList
	h.mustPage(b, `{}`, "GET", "/sessions", nil, &list)
	legacy := 0
	for _, s := range list.Sessions {
		if s.Legacy {
			legacy++
		}
	}
	if legacy != 1 || len(list.Sessions) != 3 { // person_7; the orphan bucket takes its identity from its key
		t.Fatalf("%d legacy sessions of %d", legacy, len(list.Sessions))
	}
}

func TestImportIdempotentAndResumable(t *testing.T) {
	h := newHarness(t)
	b := newBinding("imp2")
	h.attach(b, `{}`, true)
	rows, sids := importFixture(b)
	if _, err := runImport(t, h, b, rows); err != nil {
		t.Fatal(err)
	}
	before := snapshotScope(h, b)
	sum, err := runImport(t, h, b, rows)
	if err != nil || sum.Imported != 0 || sum.Skipped != 3 {
		t.Fatalf("rerun %v %v", sum, err)
	}
	if after := snapshotScope(h, b); after != before {
		t.Fatal("a second run changed the state")
	}
	// a run killed midway: the record is marked running and half the entries exist
	b2 := newBinding("imp2b")
	h.attach(b2, `{}`, true)
	rows2, sids2 := importFixture(b2)
	rec := &model.Record{V: 1, Gen: "00000000000000aa", SessionKey: "bot-a:person_42", Type: "person", TargetID: "42", BotUUID: "bot-a",
		Members: []model.Member{}, Import: &model.ImportState{State: "running"}}
	h.putRecord(b2, sids2["bot"], rec)
	sum, err = runImport(t, h, b2, rows2)
	if err != nil || sum.Resumed != 1 {
		t.Fatalf("resume %v %v", sum, err)
	}
	if n := h.historyCount(b2, sids2["bot"]); n != 401 {
		t.Fatalf("%d entries after resume", n)
	}
	if r := h.record(b2, sids2["bot"]); r.Import.State != "done" {
		t.Fatal("resume did not finish")
	}
	_ = sids
}

func TestImportPrefixAndValidation(t *testing.T) {
	h := newHarness(t)
	b := newBinding("imp3")
	h.attach(b, `{}`, true)
	sc, _ := b.Scope()
	p := strings.ReplaceAll(sc.String(), ".", ":") + ":"
	rows := map[string]string{}
	k, v := originalRow(p, "bot-a:person_1", map[string]any{}, nil)
	rows[k[:len(k)-64]+strings.Repeat("0", 64)] = v // hash mismatch
	k, v = originalRow(p, "bot-a:person_2", map[string]any{}, map[string]any{"not": "array"})
	rows[k] = v
	k, v = originalRow(p, "bot-a:person_3", []int{1}, nil)
	rows[k] = v
	k, v = originalRow("", "bot-a:person_4", map[string]any{}, nil) // a dedicated install's row
	rows[k] = v
	sum, err := runImport(t, h, b, rows)
	if err != nil || sum.Invalid != 3 || sum.Imported != 0 || sum.Ignored != 1 {
		t.Fatalf("summary %v %v", sum, err)
	}
	empty := ""
	data, _ := json.Marshal(rows)
	sum, err = admin.Import(context.Background(), h.js, admin.ImportOptions{Scope: sc, Data: data, SourcePrefix: &empty})
	if err != nil || sum.Imported != 1 {
		t.Fatalf("dedicated prefix %v %v", sum, err)
	}
	rows[p+"ht_storage_schema"] = base64.StdEncoding.EncodeToString([]byte("3"))
	if _, err := runImport(t, h, b, rows); !errors.Is(err, admin.ErrImport) {
		t.Fatalf("schema 3: %v", err)
	}
	// JSON lines input
	lines := fmt.Sprintf(`{"key":%q,"value_base64":%q}`+"\n", k, v)
	sum, err = admin.Import(context.Background(), h.js, admin.ImportOptions{Scope: sc, Data: []byte(lines), SourcePrefix: &empty, DryRun: true})
	if err != nil || sum.Imported != 1 {
		t.Fatalf("json lines %v %v", sum, err)
	}
}
