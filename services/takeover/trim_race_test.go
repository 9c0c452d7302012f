package takeover_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// TestHistoryLimitTrimRacingAppends is HIS-1's last case: a trim racing 20
// appends removes only the entries it noted, and no kept entry loses a
// blob. The trim is held by the fault seam between its read (where it notes
// the entries to drop) and its purge, while 20 appends land and race it.
func TestHistoryLimitTrimRacingAppends(t *testing.T) {
	h := newHarness(t)
	b := newBinding("his1race")
	roomy := `{"history_limit":100}` // no trim while the session fills
	tight := `{"history_limit":10}`  // trims once 11 are counted
	h.attach(b, roomy, true)
	sc, _ := b.Scope()
	sid := sidOf("bot-a", "person", 1)
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	say := func(cfg string, n int) {
		chain, _ := json.Marshal([]map[string]string{{"type": "Plain", "text": fmt.Sprintf("#%d", n)}, {"type": "Image", "base64": png}})
		h.mustEvent(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, string(chain)))
	}

	// 15 entries, each with a blob, all counted in the record
	for n := 1; n <= 15; n++ {
		say(roomy, n)
	}
	bustest.Eventually(t, "15 counted", func() bool { r := h.record(b, sid); return r != nil && r.HistoryCount == 15 })

	// the first trim's purge waits for release; any later trim's purge
	// fails, so only the trim under test removes anything
	reached := make(chan struct{})
	release := make(chan struct{})
	var purges atomic.Int32
	takeover.SetFault(h.svc, func(op string, s binding.Scope) error {
		if op != "history.purge" || s != sc {
			return nil
		}
		if purges.Add(1) == 1 {
			close(reached)
			<-release
			return nil
		}
		return errFault
	})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	// #16 brings the count to 16 under limit 10: the trim reads 16 entries
	// and notes the oldest 6 (#1-#6)
	say(tight, 16)
	select {
	case <-reached:
	case <-time.After(15 * time.Second):
		t.Fatal("no trim started")
	}
	before := subjectEntries(t, h, sc, sid)
	if len(before) != 16 {
		t.Fatalf("%d entries stored when the trim paused, want 16", len(before))
	}
	noted, kept := before[:6], before[6:]

	// 20 appends race the trim: half land before its purge, the rest
	// while it purges and deletes
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for n := 17; n <= 36; n++ {
		wg.Go(func() {
			chain, _ := json.Marshal([]map[string]string{{"type": "Plain", "text": fmt.Sprintf("#%d", n)}, {"type": "Image", "base64": png}})
			if _, err := h.event(b, tight, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, string(chain))); err != nil {
				errs <- err
			}
		})
	}
	bustest.Eventually(t, "10 racing appends stored", func() bool { return h.historyCount(b, sid) >= 26 })
	released = true
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("racing event: %v", err)
	}
	bustest.Eventually(t, "the trim to remove the noted entries", func() bool { return h.historyCount(b, sid) == 30 })

	after := subjectEntries(t, h, sc, sid)
	got := map[string]model.Entry{}
	for _, e := range after {
		got[e.Parts[0].Text] = e
	}
	for _, e := range noted {
		if _, ok := got[e.Parts[0].Text]; ok {
			t.Fatalf("noted entry %s survived the trim", e.Parts[0].Text)
		}
	}
	for _, e := range kept {
		if _, ok := got[e.Parts[0].Text]; !ok {
			t.Fatalf("kept entry %s was removed", e.Parts[0].Text)
		}
	}
	for n := 17; n <= 36; n++ {
		if _, ok := got[fmt.Sprintf("#%d", n)]; !ok {
			t.Fatalf("racing append #%d was removed", n)
		}
	}
	if len(after) != 30 {
		t.Fatalf("%d entries after the trim, want 30", len(after))
	}
	obs, err := h.js.ObjectStore(context.Background(), store.BlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the noted blobs deleted", func() bool {
		for _, e := range noted {
			for _, name := range e.Blobs() {
				if _, err := obs.GetInfo(context.Background(), name); !errors.Is(err, jetstream.ErrObjectNotFound) {
					return false
				}
			}
		}
		return true
	})
	checkBlobs := func(entries []model.Entry) {
		t.Helper()
		for _, e := range entries {
			names := e.Blobs()
			if len(names) != 1 {
				t.Fatalf("entry %s names %d blobs", e.Parts[0].Text, len(names))
			}
			info, err := obs.GetInfo(context.Background(), names[0])
			if err != nil || info.Size != uint64(len(pngBytes)) {
				t.Fatalf("entry %s lost its blob %s: %v", e.Parts[0].Text, names[0], err)
			}
		}
	}
	checkBlobs(after)
	if n := purges.Load(); n < 1 {
		t.Fatalf("%d purges", n)
	}

	// with the seam gone, the next trim keeps exactly the newest 10, and
	// they keep their blobs
	takeover.SetFault(h.svc, nil)
	say(tight, 37)
	bustest.Eventually(t, "the trim to 10", func() bool { return h.historyCount(b, sid) == 10 })
	last := subjectEntries(t, h, sc, sid)
	// the racing appends landed in any order: the newest 10 in stream order
	var want, have []string
	for _, e := range after[len(after)-9:] {
		want = append(want, e.Parts[0].Text)
	}
	want = append(want, "#37")
	for _, e := range last {
		have = append(have, e.Parts[0].Text)
	}
	if fmt.Sprint(have) != fmt.Sprint(want) {
		t.Fatalf("kept %v, want %v", have, want)
	}
	checkBlobs(last)
}

// subjectEntries reads every entry stored on a session's history subject,
// oldest first, straight from the stream.
func subjectEntries(t testing.TB, h *harness, sc binding.Scope, sid string) []model.Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, subj := historyOf(t, h.js, sc, sid)
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}})
	if err != nil {
		t.Fatal(err)
	}
	pending := int(cons.CachedInfo().NumPending)
	var out []model.Entry
	for len(out) < pending {
		batch, err := cons.Fetch(pending-len(out), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			var e model.Entry
			if err := json.Unmarshal(m.Data(), &e); err != nil {
				t.Fatal(err)
			}
			meta, _ := m.Metadata()
			e.Seq = meta.Sequence.Stream
			out = append(out, e)
		}
		if n == 0 {
			t.Fatalf("read %d of %d entries", len(out), pending)
		}
	}
	return out
}
