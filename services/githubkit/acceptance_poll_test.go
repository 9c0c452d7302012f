package githubkit_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

const hw = fakegithub.DefaultRepo

func eventsReqs(h *harness) []fakegithub.Request { return h.requestsTo("/repos/" + hw + "/events") }

func TestAT27ETag(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.addEvents(hw, 100, "push_full")
	h.cmd(a, "sub "+hw)
	h.fake.ResetRequests()
	h.fire(a, hw)
	if r := eventsReqs(h); len(r) != 1 || r[0].IfNoneMatch != "" {
		t.Fatalf("first poll %+v", r)
	}
	etag := h.record(a, hw).ETag
	rev := h.recordRev(a, hw)
	h.fire(a, hw)
	r := eventsReqs(h)
	if len(r) != 2 || r[1].IfNoneMatch != etag || etag == "" {
		t.Fatalf("second poll %+v (etag %q)", r, etag)
	}
	if h.recordRev(a, hw) != rev || len(h.sends()) != 0 {
		t.Fatal("a 304 wrote or sent")
	}
	if h.metric("githubkit_polls_total", map[string]string{"outcome": "not_modified"}) != 1 {
		t.Fatal("not_modified not counted")
	}
	// a lagging subscriber: a failed send keeps its cursor behind head
	h.host.Respond(func(bustest.HostCall) bustest.HostReply {
		return bustest.HostReply{Err: wire.Errorf(wire.ErrInternal, "down")}
	})
	h.addEvents(hw, 101, "watch")
	h.fire(a, hw)
	h.fake.ResetRequests()
	h.fire(a, hw)
	if r := eventsReqs(h); len(r) != 1 || r[0].IfNoneMatch != "" {
		t.Fatalf("lagging poll %+v", r)
	}
}

func TestAT28PollInterval(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.fake.SetPollInterval(hw, 300)
	if got := h.cmd(a, "sub "+hw); !strings.Contains(got, "every 300 s") {
		t.Fatalf("sub.ok: %q", got)
	}
	if s := h.schedule(a, hw); s != "@every 5m0s" {
		t.Fatalf("schedule %q", s)
	}
	// the header changing later republishes from the poll
	h.fake.SetPollInterval(hw, 600)
	h.fire(a, hw)
	if s := h.schedule(a, hw); s != "@every 10m0s" {
		t.Fatalf("schedule after the poll %q", s)
	}
	if got := h.cmd(a, "sub "+hw); !strings.Contains(got, "every 600 s") {
		t.Fatalf("sub.ok: %q", got)
	}
}

func TestAT29Pagination(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.addEvents(hw, 99, "watch")
	h.cmd(a, "sub "+hw)
	if r := h.record(a, hw); *r.Head != "99" {
		t.Fatalf("head %v", *r.Head)
	}
	h.addEvents(hw, 100, "release_full")
	h.fire(a, hw)
	if s := h.sends(); len(s) != 1 || !strings.Contains(s[0].SendMessage().MessageChain[0].Text, "v1.1.0") {
		t.Fatalf("numeric cursor: %+v", s)
	}
	// 250 new events: three pages, stopping at the cursor
	for i := range 250 {
		h.addEvents(hw, int64(200+i), "watch")
	}
	h.fake.ResetRequests()
	h.fire(a, hw)
	if n := len(eventsReqs(h)); n != 3 {
		t.Fatalf("%d pages for 250 events", n)
	}
	if r := h.record(a, hw); *r.Head != "449" || *r.Subscribers[0].Cursor != "449" {
		t.Fatalf("after 250: %+v", r)
	}
	if strings.Contains(h.logs.String(), "poll_gap") {
		t.Fatal("gap logged without a gap")
	}
	// 350 new events: three pages and a gap
	for i := range 350 {
		h.addEvents(hw, int64(1000+i), "watch")
	}
	h.fake.ResetRequests()
	h.fire(a, hw)
	if n := len(eventsReqs(h)); n != 3 {
		t.Fatalf("%d pages for 350 events", n)
	}
	if !strings.Contains(h.logs.String(), "poll_gap") {
		t.Fatal("no poll_gap log")
	}
}

func TestAT30FilterThenCap(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.addEvents(hw, 100, "watch")
	h.cmd(a, "sub "+hw)
	rel := *a
	rel.session.LauncherID = "releases-chat"
	h.cmd(&rel, "sub "+hw+" release")
	var fx []string
	for i := range 12 {
		if i == 2 || i == 5 {
			fx = append(fx, "release_full")
		} else {
			fx = append(fx, "push_full")
		}
	}
	h.addEvents(hw, 101, fx...)
	h.fire(a, hw)
	sends := h.sends()
	if len(sends) != 2 {
		t.Fatalf("%d sends", len(sends))
	}
	for _, s := range sends {
		m := s.SendMessage()
		text := m.MessageChain[0].Text
		switch m.TargetID {
		case "releases-chat":
			if strings.Count(text, "published the release") != 2 || strings.Contains(text, "more") {
				t.Errorf("release subscriber: %q", text)
			}
		default:
			if strings.Count(text, "\n") != 11 || !strings.Contains(text, "7 more") {
				t.Errorf("all-events subscriber: %q", text)
			}
		}
	}
}

func TestAT31AtLeastOnce(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.addEvents(hw, 100, "watch")
	h.cmd(a, "sub "+hw)
	var failB, dropB atomic.Bool
	failB.Store(true)
	h.host.Respond(func(bustest.HostCall) bustest.HostReply {
		if dropB.Load() {
			return bustest.HostReply{Drop: true}
		}
		if failB.Load() {
			return bustest.HostReply{Err: wire.Errorf(wire.ErrUnavailable, "down")}
		}
		return bustest.HostReply{}
	})
	h.addEvents(hw, 101, "release_full")
	h.fire(a, hw)
	if r := h.record(a, hw); *r.Subscribers[0].Cursor != "100" || r.Subscribers[0].SendFailures != 1 || *r.Head != "101" {
		t.Fatalf("after a failed send: %+v %+v", r, r.Subscribers[0])
	}
	dropB.Store(true) // a timeout
	h.fire(a, hw)
	s := h.sends()
	if len(s) != 2 || s[0].IdempotencyKey != s[1].IdempotencyKey || !strings.HasSuffix(s[0].IdempotencyKey, ":100-101") {
		t.Fatalf("resend keys %+v", s)
	}
	dropB.Store(false)
	failB.Store(false)
	h.fire(a, hw)
	if r := h.record(a, hw); *r.Subscribers[0].Cursor != "101" || r.Subscribers[0].SendFailures != 0 {
		t.Fatalf("after success: %+v", r.Subscribers[0])
	}
	// ten failures drop the events
	failB.Store(true)
	h.addEvents(hw, 102, "watch")
	for i := 0; i < githubkit.SendFailuresToDrop; i++ {
		h.fire(a, hw)
	}
	if r := h.record(a, hw); *r.Subscribers[0].Cursor != "102" || r.Subscribers[0].SendFailures != 0 {
		t.Fatalf("after ten failures: %+v", r.Subscribers[0])
	}
	if h.metric("githubkit_push_messages_total", map[string]string{"outcome": "dropped"}) != 1 {
		t.Fatal("drop not counted")
	}
}

func TestAT32StaleBinding(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.addEvents(hw, 100, "watch")
	h.cmd(a, "sub "+hw)
	h.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		return bustest.HostReply{Err: wire.Errorf(wire.ErrBindingRefused, "stale")}
	})
	h.addEvents(hw, 101, "watch")
	h.fire(a, hw)
	bustest.Eventually(h.t, "superseded", func() bool { return h.authority(a.sc).State == bus.StateSuperseded })
	h.fake.ResetRequests()
	h.addEvents(hw, 102, "watch")
	h.fire(a, hw)
	if len(h.sends()) != 1 || len(h.fake.Requests()) != 0 {
		t.Fatalf("after superseded: %d sends, %d requests", len(h.sends()), len(h.fake.Requests()))
	}
}

func TestAT33RateLimits(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	// the clock stands still: a wait the poll sets is measured from the
	// instant the test read, however long the poll took under load
	h.clock.Set(time.Now())
	h.fake.AddRepo("o/other", 0)
	h.cmd(a, "sub "+hw)
	h.cmd(a, "sub o/other")
	reset := h.clock.Now().Add(30 * time.Minute).Truncate(time.Second)
	h.fake.Inject(fakegithub.Fault{Path: "/repos/" + hw + "/events", Status: 403, Times: 1,
		Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(reset.Unix(), 10)}},
		Body:   `{"message":"API rate limit exceeded"}`})
	h.fire(a, hw)
	nb := h.record(a, hw).Poll.NotBefore
	if nb == nil || nb.Before(reset.Add(time.Second)) || nb.After(reset.Add(6*time.Second)) {
		t.Fatalf("not_before %v, reset %v", nb, reset)
	}
	h.fake.ResetRequests()
	h.fire(a, hw)
	h.fire(a, "o/other") // same token: skipped too
	if n := len(h.fake.Requests()); n != 0 {
		t.Fatalf("%d requests before the reset", n)
	}
	h.clock.Advance(31 * time.Minute)
	h.fire(a, "o/other")
	if n := len(h.fake.Requests()); n != 1 {
		t.Fatalf("%d requests after the reset", n)
	}
	// 429 with Retry-After 120
	h.fake.Inject(fakegithub.Fault{Path: "/repos/o/other/events", Status: 429, Times: 1, Header: http.Header{"Retry-After": {"120"}}})
	h.clock.Advance(10 * time.Minute)
	now := h.clock.Now()
	h.fire(a, "o/other")
	if nb := h.record(a, "o/other").Poll.NotBefore; nb == nil || nb.Sub(now) < 121*time.Second || nb.Sub(now) > 126*time.Second {
		t.Fatalf("429 not_before %v (now %v)", nb, now)
	}
	// a secondary limit without headers waits 60 s
	h.clock.Advance(10 * time.Minute)
	h.fake.Inject(fakegithub.Fault{Path: "/repos/o/other/events", Status: 403, Times: 1,
		Body: `{"message":"You have exceeded a secondary rate limit","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`})
	now = h.clock.Now()
	h.fire(a, "o/other")
	if nb := h.record(a, "o/other").Poll.NotBefore; nb == nil || nb.Sub(now) < 61*time.Second || nb.Sub(now) > 66*time.Second {
		t.Fatalf("secondary not_before %v (now %v)", nb, now)
	}
	if r := h.record(a, "o/other"); r.Poll.TransientFailures != 0 || r.Poll.PermanentFailures != 0 {
		t.Fatalf("rate limits changed the counters: %+v", r.Poll)
	}
}

func TestAT34Backoff(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.clock.Set(time.Now()) // stands still: the backoff is measured from the instant the test read
	h.cmd(a, "sub "+hw)
	h.fake.Inject(fakegithub.Fault{Path: "/repos/" + hw + "/events", Status: 500})
	interval := 120 * time.Second
	for k := 1; k <= 8; k++ {
		now := h.clock.Now()
		h.fire(a, hw)
		r := h.record(a, hw)
		d := min(interval*time.Duration(1<<(k-1)), githubkit.BackoffCap)
		got := r.Poll.NotBefore.Sub(now)
		if r.Poll.TransientFailures != k || got < d/2-time.Second || got > d+time.Second {
			t.Fatalf("k=%d: failures %d, wait %v, want [%v, %v]", k, r.Poll.TransientFailures, got, d/2, d)
		}
		h.clock.Advance(got + time.Second)
	}
	h.fake.ClearFaults()
	h.fire(a, hw)
	if r := h.record(a, hw); r.Poll.TransientFailures != 0 || r.Poll.NotBefore != nil {
		t.Fatalf("after success %+v", r.Poll)
	}
}

func TestAT35Broken(t *testing.T) {
	for _, status := range []int{404, 401, 410} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			h, a := oneInstall(t, "en_US")
			h.cmd(a, "sub "+hw)
			other := *a
			other.session.LauncherID = "chat-2"
			h.cmd(&other, "sub "+hw+" push")
			fails := func(st, n int) {
				h.fake.Inject(fakegithub.Fault{Path: "/repos/" + hw + "/events", Status: st, Times: n})
			}
			fails(status, 2)
			h.fire(a, hw)
			h.fire(a, hw)
			fails(502, 1)
			h.fire(a, hw)
			if r := h.record(a, hw); r.Poll.PermanentFailures != 2 || r.Poll.TransientFailures != 1 {
				t.Fatalf("counters %+v", r.Poll)
			}
			h.clock.Advance(time.Hour)
			fails(status, 3)
			for range 3 {
				h.fire(a, hw)
			}
			r := h.record(a, hw)
			if r.Poll.Broken == nil || r.Poll.Broken.Status != status {
				t.Fatalf("not broken: %+v", r.Poll)
			}
			sends := h.sends()
			if len(sends) != 2 || !strings.Contains(sends[0].SendMessage().MessageChain[0].Text, "Stopped following") ||
				!strings.Contains(sends[0].IdempotencyKey, ":broken:") {
				t.Fatalf("broken notices %d: %s", len(sends), h.logs.String())
			}
			if h.schedule(a, hw) != "" {
				t.Fatal("schedule kept")
			}
			h.fake.ResetRequests()
			h.fire(a, hw)
			if n := len(h.fake.Requests()); n != 0 {
				t.Fatalf("%d requests after broken", n)
			}
			if subs := h.cmd(a, "subs"); !strings.Contains(subs, fmt.Sprintf("HTTP %d", status)) {
				t.Fatalf("subs %q", subs)
			}
			if got := h.cmd(a, "sub "+hw); !strings.Contains(got, "Subscribed") {
				t.Fatalf("revive: %q", got)
			}
			if r := h.record(a, hw); r.Poll.Broken != nil || r.Poll.PermanentFailures != 0 || h.schedule(a, hw) == "" {
				t.Fatalf("not revived %+v", r.Poll)
			}
		})
	}
}

func TestAT36PayloadGaps(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "t", 120))
	a.cfg["max_events_per_push"] = 10
	h.attach(a, true)
	h.addEvents(hw, 100, "watch")
	h.cmd(a, "sub "+hw)
	h.addEvents(hw, 101, "push_trimmed")
	h.fake.ResetRequests()
	h.fire(a, hw)
	if n := len(h.requestsTo("/repos/" + hw + "/compare/")); n != 1 {
		t.Fatalf("%d compare calls", n)
	}
	if text := h.sends()[0].SendMessage().MessageChain[0].Text; !strings.Contains(text, "pushed 3 new commits to master: Fix all the bugs") {
		t.Fatalf("enriched push %q", text)
	}
	// seven trimmed pushes with distinct heads: five calls, two without a count
	for i := range 7 {
		h.fake.AddEvents(hw, fakegithub.RawEvent("PushEvent", int64(102+i), "octocat", map[string]any{
			"ref": "refs/heads/main", "before": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
			"head": fmt.Sprintf("%040d", i+1)}))
	}
	h.fake.ResetRequests()
	h.fire(a, hw)
	if n := len(h.requestsTo("/repos/" + hw + "/compare/")); n != 5 {
		t.Fatalf("%d compare calls, want 5", n)
	}
	text := h.sends()[1].SendMessage().MessageChain[0].Text
	if strings.Count(text, "pushed 3 new commits") != 5 || strings.Count(text, "octocat pushed to main") != 2 {
		t.Fatalf("digest %q", text)
	}
	// a zero before: no compare
	h.addEvents(hw, 200, "push_trimmed_newbranch")
	h.fake.ResetRequests()
	h.fire(a, hw)
	if n := len(h.requestsTo("/repos/" + hw + "/compare/")); n != 0 {
		t.Fatalf("%d compare calls for a new branch", n)
	}
	// AT-38: a trimmed closed PR is enriched to merged, with its title
	h.addEvents(hw, 201, "pr_closed_trimmed", "pr_opened_trimmed")
	h.fire(a, hw)
	text = h.sends()[len(h.sends())-1].SendMessage().MessageChain[0].Text
	if !strings.Contains(text, "merged PR #1290: Speed up the build") || !strings.Contains(text, "opened PR #1350: Update the greeting") {
		t.Fatalf("PR digest %q", text)
	}
	for _, bad := range []string{" 0 commit", "null", "None", "<nil>"} {
		for _, s := range h.sends() {
			if strings.Contains(s.SendMessage().MessageChain[0].Text, bad) {
				t.Fatalf("%q in %q", bad, s.SendMessage().MessageChain[0].Text)
			}
		}
	}
}
