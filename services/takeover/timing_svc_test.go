package takeover_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

func TestExpiryBySchedule(t *testing.T) {
	h := newHarness(t)
	b := newBinding("tim1")
	short := `{"takeover_timeout":4,"trigger_words":["human"],"user_notice_on_release":"bye"}`
	long := `{"takeover_timeout":600}`
	h.attach(b, short, true)
	sc, _ := b.Scope()
	live := make(chan model.Live, 100)
	subj, _ := wire.Subjects{}.Internal(takeover.Plugin, store.KindLive, sc)
	sub, err := h.nc.Subscribe(subj, func(m *nats.Msg) {
		var l model.Live
		_ = json.Unmarshal(m.Data, &l)
		live <- l
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	other := h.takeOver(b, long, "bot-a", 99)
	otherRev := h.record(b, other).UpdatedAt
	h.mustEvent(b, short, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("human")))
	sid := sidOf("bot-a", "person", 1)
	rec := h.record(b, sid)
	if !rec.Takeover.Active {
		t.Fatal("trigger did not take over")
	}
	// between the deadline and the fire, reads say released and nothing is written
	h.clock.Advance(5 * time.Second)
	var tv takeover.TakeoverView
	h.mustPage(b, short, "GET", "/takeover_status", map[string]string{"sid": sid}, &tv)
	if tv.Active || tv.Remaining != 0 {
		t.Fatalf("status past the deadline: %+v", tv)
	}
	if r := h.mustEvent(b, short, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("hi"))); r.PreventDefault {
		t.Fatal("blocked past the deadline")
	}
	h.clock.Advance(-5 * time.Second)
	bustest.Eventually(t, "metadata of the second message", func() bool { return h.record(b, sid).HistoryCount == 2 })
	kvs, _ := h.js.Stream(context.Background(), "KV_"+bus.Bucket(takeover.Plugin))
	before, _ := kvs.Info(context.Background())
	if !h.record(b, sid).Takeover.Active {
		t.Fatal("a read or an event after the deadline wrote the release")
	}

	bustest.Eventually(t, "expiry", func() bool { r := h.record(b, sid); return r != nil && !r.Takeover.Active })
	after, _ := kvs.Info(context.Background())
	if d := after.State.LastSeq - before.State.LastSeq; d != 1 {
		t.Fatalf("%d KV writes for one expiry", d)
	}
	rec = h.record(b, sid)
	if rec.Takeover.ReleaseReason != "timeout" || rec.Takeover.ReleasedBy != "" {
		t.Fatalf("release %+v", rec.Takeover)
	}
	bustest.Eventually(t, "release notice", func() bool {
		for _, c := range h.host.Sends() {
			if c.SendMessage().MessageChain[0].Text == "bye" {
				return true
			}
		}
		return false
	})
	n := 0
	for _, c := range h.host.Sends() {
		if c.SendMessage().MessageChain[0].Text == "bye" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d release notices", n)
	}
	got := false
	for !got {
		select {
		case l := <-live:
			got = l.Type == model.LiveTakeover && l.SID == sid && !l.Data.(map[string]any)["active"].(bool)
		case <-time.After(5 * time.Second):
			t.Fatal("no live takeover event for the release")
		}
	}
	if o := h.record(b, other); !o.Takeover.Active || o.UpdatedAt != otherRev {
		t.Fatal("expiry touched another session")
	}
}

func TestExtensionOutlivesOldSchedule(t *testing.T) {
	h := newHarness(t)
	b := newBinding("tim2")
	cfg := `{"takeover_timeout":2}`
	h.attach(b, cfg, true)
	sid := h.takeOver(b, cfg, "bot-a", 1)
	first := h.record(b, sid).Takeover.ExpiresAt
	bustest.Eventually(t, "a second to pass", func() bool { return time.Now().UnixMilli() >= first-1000 })
	h.mustPage(b, cfg, "POST", "/takeover", map[string]string{"sid": sid}, nil)
	second := h.record(b, sid).Takeover.ExpiresAt
	if second <= first {
		t.Fatal("extension did not move the deadline")
	}
	bustest.Eventually(t, "the first deadline to pass", func() bool { return time.Now().UnixMilli() > model.ScheduleAt(first)+300 })
	if r := h.record(b, sid); !r.Takeover.Active {
		t.Fatal("the old schedule released the extended takeover")
	}
	bustest.Eventually(t, "release at the new deadline", func() bool { return !h.record(b, sid).Takeover.Active })
	if r := h.record(b, sid); r.Takeover.ReleasedAt < second {
		t.Fatalf("released at %d before the new deadline %d", r.Takeover.ReleasedAt, second)
	}
}

func TestConfigChangeKeepsRunningDeadline(t *testing.T) {
	h := newHarness(t)
	b := newBinding("tim3")
	h.attach(b, `{"takeover_timeout":600}`, true)
	sid := h.takeOver(b, `{"takeover_timeout":600}`, "bot-a", 1)
	exp := h.record(b, sid).Takeover.ExpiresAt
	// a newer revision with a shorter timeout
	b2 := b
	b2.RuntimeRevision = 2
	h.attach(b2, `{"takeover_timeout":60}`, true)
	var tv takeover.TakeoverView
	h.mustPage(b2, `{"takeover_timeout":60}`, "GET", "/takeover_status", map[string]string{"sid": sid}, &tv)
	if !tv.Active || tv.ExpiresAt != exp || tv.Timeout != 60 {
		t.Fatalf("status after config change: %+v", tv)
	}
	_ = context.Background()
}

func TestPausedInstallationExpiresOnResume(t *testing.T) {
	h := newHarness(t)
	b := newBinding("tim4")
	cfg := `{"takeover_timeout":2}`
	h.attach(b, cfg, true)
	sid := h.takeOver(b, cfg, "bot-a", 1)
	h.revoke(b, wire.ReasonDisable, bus.StateDisabled)
	exp := h.record(b, sid).Takeover.ExpiresAt
	bustest.Eventually(t, "the deadline and its fire", func() bool { return time.Now().UnixMilli() > model.ScheduleAt(exp)+1500 })
	if !h.record(b, sid).Takeover.Active {
		t.Fatal("a fire while disabled wrote the release")
	}
	h.attach(b, cfg, true)
	bustest.Eventually(t, "resume sweep release", func() bool { return !h.record(b, sid).Takeover.Active })
	if r := h.record(b, sid); r.Takeover.ReleaseReason != "timeout" {
		t.Fatalf("reason %q", r.Takeover.ReleaseReason)
	}
}
