package githubkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// orgInst is an installation with its chat subscribed to the organisation
// acme, primed at event 100; it returns the org poll's subject.
func orgInst(t *testing.T) (*harness, *inst, string) {
	t.Helper()
	h, a := oneInstall(t, "en_US")
	h.fake.AddOrgEvents("acme", "acme/api", fakegithub.Event("watch", 100))
	if got := h.cmd(a, "sub acme"); !strings.Contains(got, "organisation acme") {
		t.Fatalf("sub org: %q", got)
	}
	poll := h.featSubject(a, githubkit.KindOrgPoll, githubkit.OrgKey("acme"))
	h.fireOn(poll, githubkit.OrgConsumer) // primes
	return h, a, poll
}

// orgRec reads the organisation record acme of in: its head, poll state
// and subscribers decode as a repository record's do.
func (h *harness) orgRec(in *inst) *githubkit.RepoRecord {
	h.t.Helper()
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(githubkit.Plugin))
	if err != nil {
		h.t.Fatal(err)
	}
	key, err := bus.Key(in.sc, "org", githubkit.OrgKey("acme"))
	if err != nil {
		h.t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	var r githubkit.RepoRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		h.t.Fatal(err)
	}
	return &r
}

// TestOrgPollFailedSendRetried: a failed send leaves the chat's cursor
// where it was; the next poll sends the same lines under the same
// idempotency key, and once delivered nothing is sent again.
func TestOrgPollFailedSendRetried(t *testing.T) {
	h, a, poll := orgInst(t)
	var mu sync.Mutex
	down := true
	delivered := map[string]int{} // idempotency key -> successful sends
	h.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		mu.Lock()
		defer mu.Unlock()
		if c.Action != wire.ActionSendMessage {
			return bustest.HostReply{}
		}
		if down {
			return bustest.HostReply{Err: wire.Errorf(wire.ErrInternal, "down")}
		}
		delivered[c.IdempotencyKey]++
		return bustest.HostReply{}
	})
	h.fake.AddOrgEvents("acme", "acme/web", fakegithub.Event("issue_opened", 101))
	h.fireOn(poll, githubkit.OrgConsumer)
	failed := h.sends()
	if len(failed) == 0 {
		t.Fatal("no send attempted")
	}
	r := h.orgRec(a)
	if c := r.Subscribers[0].Cursor; c == nil || *c != "100" || r.Subscribers[0].SendFailures != 1 {
		t.Fatalf("after a failed send: cursor %v, failures %d", c, r.Subscribers[0].SendFailures)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	h.fireOn(poll, githubkit.OrgConsumer)
	h.fireOn(poll, githubkit.OrgConsumer)
	mu.Lock()
	defer mu.Unlock()
	if len(delivered) != 1 || delivered[failed[0].IdempotencyKey] != 1 {
		t.Fatalf("delivered %v, failed attempt's key %q", delivered, failed[0].IdempotencyKey)
	}
	last := h.sends()[len(h.sends())-1]
	if !strings.Contains(sendText(last), "acme/web: ") {
		t.Fatalf("org push %q", sendText(last))
	}
	if c := h.orgRec(a).Subscribers[0].Cursor; c == nil || *c != "101" {
		t.Fatalf("cursor after delivery %v", c)
	}
}

// TestOrgPollBacksOff: a GitHub 5xx backs the organisation's poll off (no
// request until not_before) and a success clears it; a rate limit on the
// organisation's feed holds the installation's repository polls too (one
// rate-limit memory).
func TestOrgPollBacksOff(t *testing.T) {
	h, a, poll := orgInst(t)
	h.cmd(a, "sub "+hw)
	h.fake.Inject(fakegithub.Fault{Path: "/orgs/acme/events", Status: 502})
	now := h.clock.Now()
	h.fireOn(poll, githubkit.OrgConsumer)
	r := h.orgRec(a)
	if r.Poll.TransientFailures != 1 || r.Poll.NotBefore == nil || !r.Poll.NotBefore.After(now) {
		t.Fatalf("after a 502: %+v", r.Poll)
	}
	h.fake.ResetRequests()
	h.fireOn(poll, githubkit.OrgConsumer)
	if n := len(h.requestsTo("/orgs/acme/events")); n != 0 {
		t.Fatalf("%d requests while backing off", n)
	}
	h.fake.ClearFaults()
	h.clock.Advance(r.Poll.NotBefore.Sub(now) + time.Second)
	h.fireOn(poll, githubkit.OrgConsumer)
	if r := h.orgRec(a); r.Poll.TransientFailures != 0 || r.Poll.NotBefore != nil {
		t.Fatalf("after a success: %+v", r.Poll)
	}
	h.fake.Inject(fakegithub.Fault{Path: "/orgs/acme/events", Status: 429, Times: 1, Header: http.Header{"Retry-After": {"600"}}})
	h.clock.Advance(time.Hour)
	h.fireOn(poll, githubkit.OrgConsumer)
	h.fake.ResetRequests()
	h.fire(a, hw) // same token: the rate-limit memory holds it
	if n := len(h.fake.Requests()); n != 0 {
		t.Fatalf("%d requests under the org's rate limit", n)
	}
}

// TestOrgPollBroken: repeated 401 or 404 answers mark the organisation
// broken, tell each chat once, cancel the schedule and cost nothing more;
// "gh sub <org>" again resumes it.
func TestOrgPollBroken(t *testing.T) {
	for _, status := range []int{404, 401} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			h, a, poll := orgInst(t)
			sched := h.featSubject(a, githubkit.KindOrgSched, githubkit.OrgKey("acme"))
			h.fake.Inject(fakegithub.Fault{Path: "/orgs/acme/events", Status: status})
			for range 5 {
				h.fireOn(poll, githubkit.OrgConsumer)
			}
			r := h.orgRec(a)
			if r.Poll.Broken == nil || r.Poll.Broken.Status != status {
				t.Fatalf("not broken: %+v", r.Poll)
			}
			sends := h.sends()
			if len(sends) != 1 || !strings.Contains(sendText(sends[0]), "Stopped following acme") ||
				!strings.Contains(sends[0].IdempotencyKey, ":broken:") {
				t.Fatalf("broken notices: %d", len(sends))
			}
			if got := h.schedule2(sched); got != "" {
				t.Fatalf("schedule kept: %q", got)
			}
			h.fake.ResetRequests()
			h.fireOn(poll, githubkit.OrgConsumer)
			if n := len(h.fake.Requests()); n != 0 || len(h.sends()) != 1 {
				t.Fatalf("after broken: %d requests, %d sends", n, len(h.sends()))
			}
			if got := h.cmd(a, "subs"); !strings.Contains(got, "Organisations: acme") ||
				!strings.Contains(got, "acme (all events) ⚠ stopped after repeated errors (HTTP "+strconv.Itoa(status)+")") {
				t.Fatalf("subs: %q", got)
			}
			h.fake.ClearFaults()
			if got := h.cmd(a, "sub acme"); !strings.Contains(got, "organisation acme") {
				t.Fatalf("resume: %q", got)
			}
			if r := h.orgRec(a); r.Poll.Broken != nil || r.Poll.PermanentFailures != 0 || h.schedule2(sched) == "" {
				t.Fatalf("not resumed: %+v", r.Poll)
			}
		})
	}
}

// TestOrgPushHeldInQuietHours: an organisation's push to a chat in its
// quiet hours is held for the summary like a repository's.
func TestOrgPushHeldInQuietHours(t *testing.T) {
	h, a, poll := orgInst(t)
	h.clock.Set(time.Date(2099, 3, 2, 23, 30, 0, 0, time.UTC)) // far ahead: the summary schedule the hold arms never fires
	if got := h.cmd(a, "quiet 22:00-07:00", withPrivilege(2)); !strings.Contains(got, "22:00-07:00") {
		t.Fatalf("quiet: %q", got)
	}
	h.fake.AddOrgEvents("acme", "acme/web", fakegithub.Event("issue_opened", 101))
	h.fireOn(poll, githubkit.OrgConsumer)
	if n := len(h.sends()); n != 0 {
		t.Fatalf("%d sends in quiet hours", n)
	}
	rec, _ := noiseRec(t, h, a)
	if held, _ := rec["held"].([]any); len(held) != 1 {
		t.Fatalf("held %v", rec["held"])
	}
	if c := h.orgRec(a).Subscribers[0].Cursor; c == nil || *c != "101" {
		t.Fatalf("a held push leaves the cursor at %v", c)
	}
}

// TestReviewRemindersIncludeOrgRepos: a chat following an organisation
// is reminded of the pull requests waiting in the organisation's
// repositories its feed showed activity in (not in a repository the feed
// never showed); a repository one chat follows directly and another
// through the organisation is read once per reminder time.
func TestReviewRemindersIncludeOrgRepos(t *testing.T) {
	h, a, poll := orgInst(t)
	h.clock.Set(time.Date(2094, 6, 1, 8, 0, 0, 0, time.UTC)) // far ahead: only the test fires the reminder
	created := time.Date(2094, 5, 30, 0, 0, 0, 0, time.UTC)
	for _, r := range []string{"acme/web", "acme/quiet"} {
		h.fake.AddRepo(r, 0)
		h.fake.SetPulls(r, fakegithub.Pull{Number: 4, Title: "Waiting in " + r, Author: "alice", CreatedAt: created, Reviewers: []string{"bob"}})
	}
	h.fake.AddOrgEvents("acme", "acme/web", fakegithub.Event("issue_opened", 101))
	h.fireOn(poll, githubkit.OrgConsumer)
	direct := a.session
	direct.LauncherID = "group-direct"
	h.cmd(a, "sub acme/web", withSession(direct))
	for _, s := range []wire.Session{a.session, direct} {
		if got := h.cmd(a, "reviews 9:30", withSession(s)); !strings.Contains(got, "09:30") {
			t.Fatalf("reviews: %q", got)
		}
	}
	at, ok := h.scheduledAt(h.featSubject(a, githubkit.KindReviewSched, "0930"))
	if !ok {
		t.Fatal("no reminder schedule")
	}
	h.clock.Set(at)
	before := len(h.sends())
	h.fake.ResetRequests()
	h.fireOn(h.featSubject(a, githubkit.KindReviewFire, "0930"), githubkit.ReviewConsumer)
	byChat := map[string]string{}
	for _, c := range h.sends()[before:] {
		byChat[c.SendMessage().TargetID] = sendText(c)
	}
	for _, chat := range []wire.ID{a.session.LauncherID, direct.LauncherID} {
		text := byChat[string(chat)]
		if !strings.Contains(text, "acme/web#4") || strings.Contains(text, "acme/quiet") {
			t.Fatalf("reminder to %s: %q", chat, text)
		}
	}
	if n := len(h.requestsTo("/repos/acme/web/pulls")); n != 1 {
		t.Fatalf("%d pulls requests for acme/web, want 1", n)
	}
	if n := len(h.requestsTo("/repos/acme/quiet/pulls")); n != 0 {
		t.Fatalf("%d pulls requests for a repository the feed never showed", n)
	}
}

// TestOrgScheduleReArmedOnActivation: an organisation's poll schedule that
// lapsed while the installation was inactive (a fire found it paused and
// did not re-arm) is armed again when the installation becomes active, as
// a repository's is; before, only a changed interval re-armed it, so the
// organisation's pushes stopped for good after a disable and enable.
func TestOrgScheduleReArmedOnActivation(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "token-a", 120))
	h.attach(a, true)
	h.fake.AddOrgEvents("acme", "acme/api", fakegithub.Event("watch", 100))
	if got := h.cmd(a, "sub acme"); !strings.Contains(got, "organisation acme") {
		t.Fatalf("sub org: %q", got)
	}
	sched := h.featSubject(a, githubkit.KindOrgSched, githubkit.OrgKey("acme"))
	st, err := h.js.Stream(context.Background(), githubkit.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(context.Background(), jetstream.WithPurgeSubject(sched)); err != nil {
		t.Fatal(err)
	}
	if got := h.schedule2(sched); got != "" {
		t.Fatalf("schedule after the purge %q", got)
	}
	a.b.RuntimeRevision++ // a disable and enable: a new revision, active
	h.attach(a, true)
	bustest.Eventually(t, "org schedule re-armed", func() bool { return h.schedule2(sched) == "@every 2m0s" })
}
