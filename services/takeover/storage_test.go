package takeover_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

func TestHistoryLimit(t *testing.T) {
	h := newHarness(t)
	b := newBinding("his1")
	cfg := `{"history_limit":300}`
	h.attach(b, cfg, true)
	for i := 1; i <= 301; i++ {
		h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain(fmt.Sprintf("#%d", i))))
	}
	sid := sidOf("bot-a", "person", 1)
	var all []model.Entry
	before := uint64(0)
	for {
		var p takeover.MessagePage
		h.mustPage(b, cfg, "GET", "/messages", map[string]any{"sid": sid, "limit": 200, "before": before}, &p)
		all = append(all, p.Messages...)
		if p.NextBefore == 0 {
			break
		}
		before = p.NextBefore
	}
	if len(all) != 300 || all[len(all)-1].Parts[0].Text != "#2" || all[0].Parts[0].Text != "#301" {
		t.Fatalf("%d entries, oldest %q", len(all), all[len(all)-1].Parts[0].Text)
	}
	if n := h.historyCount(b, sid); n > 330 {
		t.Fatalf("%d stored, want at most 330", n)
	}
	// a lower limit applies at the next trim
	low := `{"history_limit":50}`
	h.mustEvent(b, low, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("#302")))
	bustest.Eventually(t, "the trim to 50", func() bool { return h.historyCount(b, sid) == 50 })
	p := h.messages(b, low, sid)
	if len(p.Messages) != 50 || p.Messages[0].Parts[0].Text != "#302" {
		t.Fatalf("%d entries after trim", len(p.Messages))
	}
}

func TestHistoryPaging(t *testing.T) {
	h := newHarness(t)
	b := newBinding("his2")
	h.attach(b, `{}`, true)
	for i := 1; i <= 120; i++ {
		h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain(fmt.Sprintf("#%d", i))))
	}
	sid := sidOf("bot-a", "person", 1)
	var sizes []int
	before := uint64(0)
	var texts []string
	for {
		var p takeover.MessagePage
		h.mustPage(b, `{}`, "GET", "/messages", map[string]any{"sid": sid, "before": before}, &p)
		sizes = append(sizes, len(p.Messages))
		for _, m := range p.Messages {
			texts = append(texts, m.Parts[0].Text)
		}
		// an append meanwhile does not shift the pages
		h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("late")))
		if p.NextBefore == 0 {
			break
		}
		before = p.NextBefore
	}
	if fmt.Sprint(sizes) != "[50 50 20]" || texts[0] != "#120" || texts[119] != "#1" {
		t.Fatalf("pages %v, first %q last %q", sizes, texts[0], texts[len(texts)-1])
	}
}

func TestLargeImageDoesNotLockSession(t *testing.T) {
	h := newHarness(t)
	b := newBinding("st7")
	h.attach(b, `{}`, true)
	img := make([]byte, 8<<20)
	copy(img, pngBytes)
	chain, _ := json.Marshal([]map[string]string{{"type": "Image", "base64": "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)}})
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, string(chain)))
	sid := sidOf("bot-a", "person", 1)
	bustest.Eventually(t, "image entry", func() bool { return h.historyCount(b, sid) == 1 })
	p := h.messages(b, `{}`, sid)
	e := p.Messages[0]
	raw, _ := json.Marshal(e)
	if len(raw) > 4096 || e.Parts[0].Blob == "" || e.Parts[0].Size != 8<<20 || e.Parts[0].Mime != "image/png" {
		t.Fatalf("entry of %d bytes: %s", len(raw), raw)
	}
	sc, _ := b.Scope()
	if !strings.HasPrefix(e.Parts[0].Blob, sc.String()+"."+sid+".") {
		t.Fatalf("blob name %q", e.Parts[0].Blob)
	}
	for i := range 100 {
		h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain(fmt.Sprint(i))))
	}
	bustest.Eventually(t, "100 more entries", func() bool { return h.historyCount(b, sid) == 101 })
	obs, _ := h.js.ObjectStore(context.Background(), store.BlobBucket)
	info, err := obs.GetInfo(context.Background(), e.Parts[0].Blob)
	if err != nil || info.Size != 8<<20 {
		t.Fatalf("blob %v %v", info, err)
	}
}

func TestOneActionOneWritePerStore(t *testing.T) {
	h := newHarness(t)
	b := newBinding("st1")
	h.attach(b, `{}`, true)
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("first")))
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 2, 2, plain("other")))
	sid := sidOf("bot-a", "person", 1)
	kvs, _ := h.js.Stream(context.Background(), "KV_"+bus.Bucket(takeover.Plugin))
	kvBefore, _ := kvs.Info(context.Background())
	histBefore, _, _ := historyState(t, h.js)
	otherRec := h.record(b, sidOf("bot-a", "person", 2))
	// with the view live, recording into a known session reads nothing
	var reads atomic.Int64
	takeover.SetFault(h.svc, func(op string, _ binding.Scope) error {
		if op == "kv.get" {
			reads.Add(1)
		}
		return nil
	})
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("second")))
	takeover.SetFault(h.svc, nil)
	if n := reads.Load(); n != 0 {
		t.Fatalf("%d record reads to record one message", n)
	}
	kvAfter, _ := kvs.Info(context.Background())
	histAfter, _, _ := historyState(t, h.js)
	if d := kvAfter.State.LastSeq - kvBefore.State.LastSeq; d > 1 {
		t.Fatalf("%d KV writes for one message", d)
	}
	if d := histAfter - histBefore; d != 1 {
		t.Fatalf("%d appends for one message", d)
	}
	if h.historyCount(b, sid) != 2 {
		t.Fatal("append on the wrong subject")
	}
	if o := h.record(b, sidOf("bot-a", "person", 2)); o.UpdatedAt != otherRec.UpdatedAt {
		t.Fatal("another session changed")
	}
	_ = jetstream.ErrKeyNotFound
}

func TestContentExtractionRecorded(t *testing.T) {
	h := newHarness(t)
	b := newBinding("his4")
	h.attach(b, `{}`, true)
	png := base64.StdEncoding.EncodeToString(pngBytes)
	chain := `[{"type":"Plain","text":"see "},{"type":"At","target":9,"display":"Ann"},{"type":"AtAll"},
		{"type":"Image","url":"https://x.example/a.png"},{"type":"Image","base64":"` + png + `"},
		{"type":"File","name":"a.txt","base64":"aGVsbG8="},{"type":"Voice","url":"https://v"}]`
	h.mustEvent(b, `{}`, takeover.EventGroupMessage, "bot-a", msgData("group", "g1", 7, chain))
	sid := sidOf("bot-a", "group", "g1")
	p := h.messages(b, `{}`, sid)
	e := p.Messages[0]
	kinds := []string{}
	for _, part := range e.Parts {
		kinds = append(kinds, part.Type)
	}
	if strings.Join(kinds, ",") != "text,image,image,file,other" || e.Parts[0].Text != "see @Ann @All" {
		t.Fatalf("parts %+v", e.Parts)
	}
	if e.Parts[2].Blob == "" || e.Parts[3].Blob == "" || e.Parts[3].Name != "a.txt" || e.Parts[4].Component != "Voice" {
		t.Fatalf("attachment parts %+v", e.Parts)
	}
	if e.SenderName != "Member" || p.Session.Name != "Group" || p.Session.LastPreview.Kind != "text" || len(p.Session.Members) != 1 {
		t.Fatalf("names/preview %+v", p.Session)
	}
	var blob takeover.BlobData
	h.mustPage(b, `{}`, "GET", "/blob", map[string]string{"sid": sid, "name": e.Parts[2].Blob}, &blob)
	if blob.Mime != "image/png" || blob.Size != len(pngBytes) || !strings.HasPrefix(blob.DataURL, "data:image/png;base64,") {
		t.Fatalf("blob %+v", blob.Mime)
	}
}
