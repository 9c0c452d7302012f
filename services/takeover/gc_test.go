package takeover_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/admin"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

func TestAttachmentsInObjectStore(t *testing.T) {
	h := newHarness(t)
	a, b := newBinding("his3a"), newBinding("his3b")
	cfg := `{"history_limit":10}`
	h.attach(a, cfg, true)
	h.attach(b, cfg, true)
	sid := h.takeOver(a, cfg, "bot-1", 1)
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	var r takeover.ReplyResult
	h.mustPage(a, cfg, "POST", "/reply", map[string]string{"sid": sid, "idempotency_key": "key-00001", "text": "t", "image_base64": png,
		"file_base64": base64.StdEncoding.EncodeToString([]byte("%PDF-1.4 doc")), "file_name": "a.pdf"}, &r)
	scA, _ := a.Scope()
	img, file := r.Entry.Parts[1], r.Entry.Parts[2]
	if img.Blob != scA.String()+"."+sid+"."+r.Entry.ID+".1" || file.Blob == "" || file.Mime != "application/pdf" {
		t.Fatalf("parts %+v", r.Entry.Parts)
	}
	var bd takeover.BlobData
	h.mustPage(a, cfg, "GET", "/blob", map[string]string{"sid": sid, "name": img.Blob}, &bd)
	if bd.Mime != "image/png" || bd.Size != len(pngBytes) {
		t.Fatalf("blob %+v", bd.Mime)
	}
	h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-1", msgData("person", 1, 1, plain("b")))
	if err := h.page(b, cfg, "GET", "/blob", map[string]string{"sid": sid, "name": img.Blob}, nil); !isCode(err, 404, "") {
		t.Fatalf("B reads A's blob: %v", err)
	}
	// an orphan: the append fails after the blobs were written
	takeover.SetFault(h.svc, func(op string, _ binding.Scope) error {
		if op == "history.append" {
			return errFault
		}
		return nil
	})
	var r2 takeover.ReplyResult
	h.mustPage(a, cfg, "POST", "/reply", map[string]string{"sid": sid, "idempotency_key": "key-00002", "image_base64": png}, &r2)
	takeover.SetFault(h.svc, nil)
	if r2.Saved {
		t.Fatal("append fault did not bite")
	}
	orphan := scA.String() + "." + sid + "." + model.ReplyEntryID(scA.String(), sid, "key-00002") + ".0"
	obs, _ := h.js.ObjectStore(context.Background(), store.BlobBucket)
	if _, err := obs.GetInfo(context.Background(), orphan); err != nil {
		t.Fatalf("orphan not written: %v", err)
	}
	// a trim deletes only the trimmed entries' blobs
	for i := range 12 {
		h.mustEvent(a, cfg, takeover.EventPersonMessage, "bot-1", msgData("person", 1, 1, plain(string(rune('a'+i)))))
	}
	bustest.Eventually(t, "trim", func() bool { _, err := obs.GetInfo(context.Background(), img.Blob); return err != nil })
	// gc: the orphan goes, a removed scope's blobs go, named blobs stay
	c := newBinding("his3c")
	h.attach(c, cfg, true)
	sidC := h.takeOver(c, cfg, "bot-1", 9)
	h.mustPage(c, cfg, "POST", "/reply", map[string]string{"sid": sidC, "idempotency_key": "key-00003", "image_base64": png}, nil)
	var rc takeover.ReplyResult
	h.mustPage(c, cfg, "POST", "/reply", map[string]string{"sid": sidC, "idempotency_key": "key-00004", "image_base64": png}, &rc)
	sum, err := admin.GCBlobs(context.Background(), h.js, admin.GCOptions{MinAge: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Orphans != 1 || sum.Removed != 0 {
		t.Fatalf("gc %s", sum)
	}
	if _, err := obs.GetInfo(context.Background(), orphan); err == nil {
		t.Fatal("orphan kept")
	}
	if _, err := obs.GetInfo(context.Background(), rc.Entry.Parts[0].Blob); err != nil {
		t.Fatal("a named blob was deleted")
	}
	// a removed scope: write a tombstone directly, as an uninstall whose purge failed would leave it
	kv, _ := h.js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
	scC, _ := c.Scope()
	e, _ := kv.Get(context.Background(), bus.AuthorityKey(scC))
	var auth map[string]any
	_ = jsonUnmarshal(e.Value(), &auth)
	auth["state"] = "removed"
	v, _ := jsonMarshal(auth)
	if _, err := kv.Update(context.Background(), bus.AuthorityKey(scC), v, e.Revision()); err != nil {
		t.Fatal(err)
	}
	sum, err = admin.GCBlobs(context.Background(), h.js, admin.GCOptions{MinAge: time.Nanosecond})
	if err != nil || sum.Removed != 2 {
		t.Fatalf("gc of removed scope %s %v", sum, err)
	}
	// DELETE /session deletes all of a session's blobs
	h.mustPage(a, cfg, "DELETE", "/session", map[string]string{"sid": sid}, nil)
	objs, _ := obs.List(context.Background())
	for _, o := range objs {
		if len(o.Name) > len(scA.String()) && o.Name[:len(scA.String())] == scA.String() {
			t.Fatalf("blob %s left after delete", o.Name)
		}
	}
}

var (
	jsonMarshal   = json.Marshal
	jsonUnmarshal = json.Unmarshal
)
