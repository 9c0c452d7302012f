package githubkit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// noiseInst is an installation in zone with chat a subscribed to hw and
// primed (the first poll records the head).
func noiseInst(t *testing.T, lang, zone string) (*harness, *inst) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	cfg := h.baseConfig(lang, "token-a", 120)
	cfg["timezone"] = zone
	a := newInst(t, "a", cfg)
	h.attach(a, true)
	h.addEvents(hw, 100, "watch")
	h.cmd(a, "sub "+hw)
	h.fire(a, hw)
	return h, a
}

func chatSID(in *inst) string {
	return githubkit.Identity{BotUUID: in.session.BotUUID, TargetType: in.session.LauncherType, TargetID: string(in.session.LauncherID)}.SID()
}

// noiseRec reads chat a's noise record: its raw JSON fields and revision.
func noiseRec(t *testing.T, h *harness, in *inst) (map[string]any, uint64) {
	t.Helper()
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(githubkit.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := bus.Key(in.sc, githubkit.KindNoise, chatSID(in))
	e, err := kv.Get(context.Background(), key)
	if err != nil {
		return nil, 0
	}
	var m map[string]any
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		t.Fatal(err)
	}
	return m, e.Revision()
}

// flushSchedule returns the "@at" time of chat a's armed summary schedule.
func flushSchedule(t *testing.T, h *harness, in *inst) string {
	t.Helper()
	st, err := h.js.Stream(context.Background(), githubkit.NoiseStreamName)
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := h.subj.Internal(githubkit.Plugin, githubkit.KindNoiseSched, in.sc, chatSID(in))
	m, err := st.GetLastMsgForSubject(context.Background(), subj)
	if err != nil {
		return ""
	}
	return m.Header.Get("Nats-Schedule")
}

// fireFlush fires chat a's summary as its schedule would, and waits until
// the summary consumer acknowledged it.
func fireFlush(t *testing.T, h *harness, in *inst) {
	t.Helper()
	subj, _ := h.subj.Internal(githubkit.Plugin, githubkit.KindNoiseFlush, in.sc, chatSID(in))
	ack, err := h.js.Publish(context.Background(), subj, []byte(`{"v":1}`))
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "summary handled", func() bool {
		c, err := h.js.Consumer(context.Background(), githubkit.NoiseStreamName, githubkit.NoiseConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.AckFloor.Stream >= ack.Sequence
	})
}

// The tests below stop the service's clock in 2099 (2026's calendar): the
// server fires a schedule by the real clock, at once when its instant is
// past, so a summary schedule armed from a clock stopped in the real past
// would fire while the test still holds the clock in quiet hours. Armed in
// 2099, a schedule fires only when the test fires it (fireFlush).

// TestQuietHoursHeldAndSummarised: in the chat's quiet hours (the
// installation's zone) pushed events are held, not sent; a fire before
// the window ends sends nothing and re-arms; at its end one summary
// carries them; after it, events are pushed again. Only admins change it.
func TestQuietHoursHeldAndSummarised(t *testing.T) {
	h, a := noiseInst(t, "en_US", "Asia/Shanghai")
	h.clock.Set(time.Date(2099, 3, 2, 14, 30, 0, 0, time.UTC)) // 22:30 in Shanghai
	if got := h.cmd(a, "quiet 22:00-07:00"); !strings.Contains(got, "Only bot admins") {
		t.Fatalf("non-admin change: %q", got)
	}
	if m, _ := noiseRec(t, h, a); m != nil {
		t.Fatalf("a refused change stored %v", m)
	}
	for _, bad := range []string{"quiet 25:00-07:00", "quiet 22:00-22:00", "quiet 22-07", "quiet 22:00 07:00"} {
		if got := h.cmd(a, bad, withPrivilege(2)); !strings.HasPrefix(got, "Usage: !gh quiet") {
			t.Fatalf("%s: %q", bad, got)
		}
	}
	if got := h.cmd(a, "quiet 22:00-07:00", withPrivilege(2)); !strings.Contains(got, "Quiet hours here: 22:00-07:00 (Asia/Shanghai)") {
		t.Fatalf("quiet reply %q", got)
	}
	if got := h.cmd(a, "免打扰"); !strings.Contains(got, "22:00-07:00") {
		t.Fatalf("the Chinese alias shows %q", got)
	}
	h.addEvents(hw, 101, "push_full", "release_full")
	h.fire(a, hw)
	if n := len(h.sends()); n != 0 {
		t.Fatalf("%d sends in quiet hours", n)
	}
	if got := flushSchedule(t, h, a); got != "@at 2099-03-02T23:00:00Z" {
		t.Fatalf("summary schedule %q, want 07:00 Shanghai", got)
	}
	// a repeated poll of the same range holds nothing twice
	rec, _ := noiseRec(t, h, a)
	if held := rec["held"].([]any); len(held) != 1 {
		t.Fatalf("held %v", held)
	}
	// fired early (the window is still on): nothing sent, re-armed
	fireFlush(t, h, a)
	if n := len(h.sends()); n != 0 {
		t.Fatalf("%d sends before the window ended", n)
	}
	h.clock.Set(time.Date(2099, 3, 2, 23, 0, 5, 0, time.UTC))
	fireFlush(t, h, a)
	sends := h.sends()
	if len(sends) != 1 {
		t.Fatalf("%d sends at the window's end", len(sends))
	}
	text := sends[0].SendMessage().MessageChain[0].Text
	for _, want := range []string{"🌙 While this chat was quiet (since 2099-03-02 22:30), held: 2", "📦 octocat/Hello-World",
		"pushed 2 new commits to master", "published the release Spring release", "/releases/tag/"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary %q lacks %q", text, want)
		}
	}
	if sends[0].SendMessage().TargetID != string(a.session.LauncherID) {
		t.Fatalf("summary went to %s", sends[0].SendMessage().TargetID)
	}
	if rec, _ := noiseRec(t, h, a); rec["held"] != nil || rec["flush_at"] != nil {
		t.Fatalf("after the summary: %v", rec)
	}
	// a second fire (a redelivery) sends nothing more
	fireFlush(t, h, a)
	// out of the window: pushed as it happens
	h.addEvents(hw, 103, "fork")
	h.fire(a, hw)
	if n := len(h.sends()); n != 2 {
		t.Fatalf("%d sends after the window", n)
	}
	if got := h.cmd(a, "quiet off", withPrivilege(2)); !strings.Contains(got, "No quiet hours here") {
		t.Fatalf("off: %q", got)
	}
	if m, _ := noiseRec(t, h, a); m != nil {
		t.Fatalf("nothing chosen, nothing held, but the record stays: %v", m)
	}
}

// TestDigestOneSummaryPerInterval: with a digest, each event is held and
// one summary goes out per interval, timed from the last one; turning it
// off sends what is held at once.
func TestDigestOneSummaryPerInterval(t *testing.T) {
	h, a := noiseInst(t, "zh_Hans", "UTC")
	t0 := time.Date(2099, 3, 2, 9, 0, 0, 0, time.UTC)
	h.clock.Set(t0)
	for _, bad := range []string{"digest 5m", "digest 48h", "digest soon", "digest 90s"} {
		if got := h.cmd(a, bad, withPrivilege(2)); !strings.HasPrefix(got, "用法：!gh digest") {
			t.Fatalf("%s: %q", bad, got)
		}
	}
	if got := h.cmd(a, "摘要 1h", withPrivilege(2)); !strings.Contains(got, "每 1h 汇总发送一条") {
		t.Fatalf("digest reply %q", got)
	}
	h.addEvents(hw, 101, "push_full")
	h.fire(a, hw)
	h.clock.Set(t0.Add(20 * time.Minute))
	h.addEvents(hw, 102, "release_full")
	h.fire(a, hw)
	if n := len(h.sends()); n != 0 {
		t.Fatalf("%d sends with a digest", n)
	}
	if got := flushSchedule(t, h, a); got != "@at 2099-03-02T10:00:00Z" {
		t.Fatalf("digest schedule %q", got)
	}
	h.clock.Set(t0.Add(time.Hour))
	fireFlush(t, h, a)
	sends := h.sends()
	if len(sends) != 1 {
		t.Fatalf("%d sends at the digest", len(sends))
	}
	text := sends[0].SendMessage().MessageChain[0].Text
	if !strings.HasPrefix(text, "🗞 摘要（自 2099-03-02 09:00），动态 2 条\n📦 octocat/Hello-World\n") || strings.Count(text, "\n   http") != 2 {
		t.Fatalf("digest %q", text)
	}
	// the next event waits for the next tick, an interval after the last
	h.clock.Set(t0.Add(70 * time.Minute))
	h.addEvents(hw, 103, "fork")
	h.fire(a, hw)
	if got := flushSchedule(t, h, a); got != "@at 2099-03-02T11:00:00Z" {
		t.Fatalf("next digest schedule %q", got)
	}
	// off: what is held goes at once
	if got := h.cmd(a, "digest off", withPrivilege(2)); !strings.Contains(got, "未开启摘要") {
		t.Fatalf("off: %q", got)
	}
	if got := flushSchedule(t, h, a); got != "@at 2099-03-02T10:10:00Z" {
		t.Fatalf("schedule after off %q, want now", got)
	}
	fireFlush(t, h, a)
	if n := len(h.sends()); n != 2 {
		t.Fatalf("%d sends after off", n)
	}
	if m, _ := noiseRec(t, h, a); m == nil || m["held"] != nil {
		t.Fatalf("after off: %v", m)
	}
}

// TestHeldBounded: a chat holds at most 30 entries; the events beyond
// are counted and the summary says how many were left out.
func TestHeldBounded(t *testing.T) {
	h, a := noiseInst(t, "en_US", "UTC")
	h.clock.Set(time.Date(2099, 3, 2, 23, 0, 0, 0, time.UTC))
	h.cmd(a, "quiet 22:00-06:00", withPrivilege(2))
	for i := int64(0); i < 33; i++ {
		h.addEvents(hw, 101+i, "watch")
		h.fire(a, hw)
	}
	rec, _ := noiseRec(t, h, a)
	if held := rec["held"].([]any); len(held) != 30 || rec["more"] != float64(3) {
		t.Fatalf("held %d, more %v", len(held), rec["more"])
	}
	h.clock.Set(time.Date(2099, 3, 3, 6, 0, 0, 0, time.UTC))
	fireFlush(t, h, a)
	sends := h.sends()
	if len(sends) != 1 {
		t.Fatalf("%d sends", len(sends))
	}
	if text := sends[0].SendMessage().MessageChain[0].Text; !strings.Contains(text, "held: 33") || !strings.HasSuffix(text, "…and 3 more, not listed") {
		t.Fatalf("summary %q", text)
	}
}

// TestWebhookHeldAndFilteredByPath: a delivered push is held for a quiet
// chat and filtered by path: from the files the
// delivery lists, with no GitHub request; a poll where nothing changed
// stays one conditional request with quiet hours, a digest and path: on.
func TestWebhookHeldAndFilteredByPath(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	other := wire.Session{LauncherType: "group", LauncherID: wire.ID("session-a2"), SenderID: "u1", BotUUID: e.a.session.BotUUID}
	e.addEvents(hw, 100, "watch")
	e.cmd(e.a, "sub "+hw+" push")
	e.cmd(e.a, "sub "+hw+" push path:docs/**", withSession(other))
	e.fire(e.a, hw)
	e.clock.Set(time.Date(2099, 3, 2, 23, 0, 0, 0, time.UTC))
	e.cmd(e.a, "quiet 22:00-06:00", withPrivilege(2))
	e.cmd(e.a, "digest 1h", withPrivilege(2), withSession(other))
	id, secret := e.hook(hw)
	event, body := fakegithub.Webhook("push_forced") // modifies README only
	e.fake.ResetRequests()
	if code, why := e.post(delivery{id: id, event: event, guid: "p-1", body: body, secret: secret}); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	e.idle()
	if n := len(e.sends()); n != 0 {
		t.Fatalf("%d sends: the quiet chat holds, the path: chat filters", n)
	}
	rec, _ := noiseRec(t, e.harness, e.a)
	if held, _ := rec["held"].([]any); len(held) != 1 {
		t.Fatalf("held %v", rec["held"])
	}
	otherInst := &inst{sc: e.a.sc, session: other}
	if rec, _ := noiseRec(t, e.harness, otherInst); rec == nil || rec["held"] != nil {
		t.Fatalf("the path: chat held %v", rec)
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Fatalf("a delivered push cost %d GitHub requests", n)
	}
	e.fake.ResetRequests()
	e.fire(e.a, hw)
	if n := len(e.fake.Requests()); n != 1 {
		t.Fatalf("an unchanged poll made %d requests, want 1", n)
	}
}

// TestStillQuietRearmedPastTheServersNow: a summary that fires while the
// service's clock still says quiet (here the server's clock is years
// ahead, so the schedule the hold armed fires at once) is re-armed in the
// server's future, not again at the window's end the server has passed:
// re-armed there, it fired again at once, in a loop, until the service's
// clock left the window. Nothing is sent while quiet.
func TestStillQuietRearmedPastTheServersNow(t *testing.T) {
	h, a := noiseInst(t, "en_US", "UTC")
	h.clock.Set(time.Date(2020, 3, 2, 23, 0, 0, 0, time.UTC))
	h.cmd(a, "quiet 22:00-06:00", withPrivilege(2))
	before := time.Now()
	h.addEvents(hw, 101, "watch")
	h.fire(a, hw)
	end := time.Date(2020, 3, 3, 6, 0, 0, 0, time.UTC)
	var flushAt time.Time
	bustest.Eventually(t, "the fired summary re-armed", func() bool {
		rec, _ := noiseRec(t, h, a)
		s, _ := rec["flush_at"].(string)
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatalf("flush_at %q: %v", s, err)
		}
		flushAt = at
		return !at.Equal(end)
	})
	if !flushAt.After(before) {
		t.Fatalf("re-armed at %v, before the server fired it (%v)", flushAt, before)
	}
	if got, want := flushSchedule(t, h, a), "@at "+flushAt.UTC().Format(time.RFC3339); got != want {
		t.Fatalf("schedule %q, want %q", got, want)
	}
	if n := len(h.sends()); n != 0 {
		t.Fatalf("%d sends in quiet hours", n)
	}
	if rec, _ := noiseRec(t, h, a); len(rec["held"].([]any)) != 1 {
		t.Fatalf("held %v", rec["held"])
	}
}
