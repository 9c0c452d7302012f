package githubkit_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// The tests of issue 30's review reminders, personal notifications and
// organisation subscriptions.

// featSubject is one of the feature subjects of a scope.
func (h *harness) featSubject(in *inst, kind, id string) string {
	h.t.Helper()
	s, err := h.subj.Internal(githubkit.Plugin, kind, in.sc, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// scheduledAt returns the instant of an "@at" schedule ("" when none).
func (h *harness) scheduledAt(subject string) (time.Time, bool) {
	h.t.Helper()
	st, err := h.js.Stream(context.Background(), githubkit.StreamName)
	if err != nil {
		h.t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(context.Background(), subject)
	if err != nil {
		return time.Time{}, false
	}
	v, ok := strings.CutPrefix(m.Header.Get("Nats-Schedule"), "@at ")
	if !ok {
		h.t.Fatalf("schedule %q", m.Header.Get("Nats-Schedule"))
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		h.t.Fatal(err)
	}
	return at, true
}

// fireOn publishes a fired message on subject and waits until the durable
// consumer has acknowledged it.
func (h *harness) fireOn(subject, consumer string) {
	h.t.Helper()
	ack, err := h.js.Publish(context.Background(), subject, []byte(`{"v":1}`))
	if err != nil {
		h.t.Fatal(err)
	}
	bustest.Eventually(h.t, "fire handled", func() bool {
		c, err := h.js.Consumer(context.Background(), githubkit.StreamName, consumer)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.AckFloor.Stream >= ack.Sequence && info.NumAckPending == 0
	})
}

func sendText(c bustest.HostCall) string {
	m := c.SendMessage()
	if len(m.MessageChain) == 0 {
		return ""
	}
	return m.MessageChain[0].Text
}

// TestReviewRemindersWeekAcrossDST drives a week of fake time over the
// 2094 US DST change: "09:30 weekdays" in America/New_York fires at 09:30
// local on each weekday (14:30 UTC before the change, 13:30 after), never
// at the weekend, lists the pull requests waiting for review oldest first
// with age and reviewers, and sends nothing when none waits.
func TestReviewRemindersWeekAcrossDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no tzdata")
	}
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "token-a", 120))
	a.cfg["timezone"] = "America/New_York"
	h.attach(a, true)
	// the fake week is far in the future (2094 has 2027's calendar) so
	// that the server's own timers stay out of the way: the test fires each
	// reminder itself. The server fires a schedule by the real clock, at
	// once when it is past: a week that has become past (2027 once) fires
	// each reminder at once, and the next one it arms, in a loop.
	start := time.Date(2094, 3, 10, 8, 0, 0, 0, ny) // a Wednesday; DST starts Sunday 14 March
	h.clock.Set(start)
	h.cmd(a, "sub "+hw)
	old := start.Add(-72 * time.Hour)
	h.fake.SetPulls(hw,
		fakegithub.Pull{Number: 7, Title: "Newer", Author: "alice", CreatedAt: start.Add(-5 * time.Hour), Reviewers: []string{"bob"}},
		fakegithub.Pull{Number: 5, Title: "Older", Author: "carol", CreatedAt: old, Teams: []string{"core"}},
		fakegithub.Pull{Number: 9, Title: "Nobody asked", Author: "dave", CreatedAt: old},
		fakegithub.Pull{Number: 10, Title: "Draft", Author: "erin", CreatedAt: old, Draft: true, Reviewers: []string{"bob"}},
	)
	if got := h.cmd(a, "help"); !strings.Contains(got, "!gh reviews <HH:MM>") || !strings.Contains(got, "!gh me <github-login>") ||
		!strings.Contains(got, "!gh summary <owner/repo>#<number>") || !strings.Contains(got, "!gh sub <org>") {
		t.Fatalf("help: %q", got)
	}
	if got := h.cmd(a, "reviews 9:30 weekdays"); !strings.Contains(got, "09:30") || !strings.Contains(got, "Monday to Friday") || !strings.Contains(got, "America/New_York") {
		t.Fatalf("reviews: %q", got)
	}
	if got := h.cmd(a, "reviews"); !strings.Contains(got, "09:30") {
		t.Fatalf("reviews show: %q", got)
	}
	sched := h.featSubject(a, githubkit.KindReviewSched, "0930")
	fire := h.featSubject(a, githubkit.KindReviewFire, "0930")
	wantDays := []string{"2094-03-10", "2094-03-11", "2094-03-12", "2094-03-15", "2094-03-16", "2094-03-17"}
	for i, day := range wantDays {
		at, ok := h.scheduledAt(sched)
		if !ok {
			t.Fatalf("fire %d: no schedule", i)
		}
		local := at.In(ny)
		if local.Format("2006-01-02 15:04") != day+" 09:30" {
			t.Fatalf("fire %d at %s local (%s UTC), want %s 09:30", i, local, at, day)
		}
		if wantUTC := map[bool]int{true: 14, false: 13}[day < "2094-03-14"]; at.Hour() != wantUTC {
			t.Fatalf("fire %d at %s UTC, want hour %d", i, at, wantUTC)
		}
		if day == "2094-03-16" {
			h.fake.SetPulls(hw, fakegithub.Pull{Number: 9, Title: "Nobody asked", Author: "dave", CreatedAt: old})
		}
		before := len(h.sends())
		h.clock.Set(at)
		h.fireOn(fire, githubkit.ReviewConsumer)
		sends := h.sends()
		if day == "2094-03-16" {
			if len(sends) != before {
				t.Fatalf("%s: nothing waiting, but sent %q", day, sendText(sends[len(sends)-1]))
			}
			h.fake.SetPulls(hw, fakegithub.Pull{Number: 7, Title: "Newer", Author: "alice", CreatedAt: start.Add(-5 * time.Hour), Reviewers: []string{"bob"}})
			continue
		}
		if len(sends) != before+1 {
			t.Fatalf("%s: %d sends, want 1", day, len(sends)-before)
		}
		text := sendText(sends[len(sends)-1])
		if day == wantDays[0] {
			i5, i7 := strings.Index(text, hw+"#5"), strings.Index(text, hw+"#7")
			if i5 < 0 || i7 < 0 || i5 > i7 || strings.Contains(text, "#9") || strings.Contains(text, "#10") ||
				!strings.Contains(text, "waiting on @core") || !strings.Contains(text, "waiting on bob") ||
				!strings.Contains(text, "3 d") || !strings.Contains(text, "6 h") || !strings.Contains(text, "(2)") {
				t.Fatalf("reminder text:\n%s", text)
			}
		}
		if m := sends[len(sends)-1].SendMessage(); m.TargetID != "session-a" || m.TargetType != "group" {
			t.Fatalf("sent to %+v", m)
		}
	}
	if at, _ := h.scheduledAt(sched); at.In(ny).Format("2006-01-02 15:04") != "2094-03-18 09:30" {
		t.Fatalf("after the week: next %s", at.In(ny))
	}
	if got := h.cmd(a, "reviews off"); !strings.Contains(got, "off") {
		t.Fatalf("off: %q", got)
	}
	if _, ok := h.scheduledAt(sched); ok {
		t.Fatal("reviews off left the schedule")
	}
}

// TestReviewReminderNotReArmedInServersPast: a reminder the server fires
// while the service's clock is behind it (here by years: the slot's first
// time is in the server's past and fires at once) sends once and arms the
// next time after the server's clock too; armed from the service's clock
// alone it was this same time, which the server fired again at once, in a
// loop, with a reminder each time.
func TestReviewReminderNotReArmedInServersPast(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "token-a", 120))
	a.cfg["timezone"] = "UTC"
	h.attach(a, true)
	h.clock.Set(time.Date(2020, 6, 1, 8, 0, 0, 0, time.UTC))
	h.cmd(a, "sub "+hw)
	h.fake.SetPulls(hw, fakegithub.Pull{Number: 7, Title: "Waiting", Author: "alice", CreatedAt: time.Date(2020, 5, 30, 0, 0, 0, 0, time.UTC), Reviewers: []string{"bob"}})
	before := time.Now()
	if got := h.cmd(a, "reviews 9:30"); !strings.Contains(got, "09:30") {
		t.Fatalf("reviews: %q", got)
	}
	sched := h.featSubject(a, githubkit.KindReviewSched, "0930")
	var at time.Time
	bustest.Eventually(t, "the fired reminder re-armed", func() bool {
		var ok bool
		at, ok = h.scheduledAt(sched)
		return ok && at.After(before)
	})
	if at.Hour() != 9 || at.Minute() != 30 || at.After(before.Add(25*time.Hour)) {
		t.Fatalf("next reminder at %v, want the next 09:30 UTC after %v", at, before)
	}
	sends := h.sends()
	if len(sends) != 1 || !strings.Contains(sendText(sends[0]), hw+"#7") {
		t.Fatalf("%d reminders sent, want 1", len(sends))
	}
}

// TestReviewRemindersCost: twenty chats of one installation, each following
// the same three repositories with a reminder at the same minute: one fire
// reads each repository's pull requests once (the next day, once again,
// conditionally), and polling stays one conditional events request per
// repository per interval.
func TestReviewRemindersCost(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("zh_Hans", "token-a", 120))
	a.cfg["timezone"] = "Asia/Shanghai"
	h.attach(a, true)
	h.clock.Set(time.Date(2094, 6, 1, 8, 0, 0, 0, time.UTC)) // far ahead: only the test fires the reminders
	repos := []string{"team/one", "team/two", "team/three"}
	for _, r := range repos {
		h.fake.AddRepo(r, 0)
		h.addEvents(r, 100, "watch")
		h.fake.SetPulls(r, fakegithub.Pull{Number: 1, Title: "改进", Author: "alice", CreatedAt: time.Date(2094, 5, 30, 0, 0, 0, 0, time.UTC), Reviewers: []string{"bob"}})
	}
	const chats = 20 // events.MaxSubscribersRepo: every chat follows every repository
	for i := range chats {
		s := a.session
		s.LauncherID = wire.ID(fmt.Sprintf("group-%d", i))
		for _, r := range repos {
			h.cmd(a, "sub "+r, withSession(s))
		}
		if got := h.cmd(a, "评审提醒 9:30 每天", withSession(s)); !strings.Contains(got, "09:30") || !strings.Contains(got, "每天") {
			t.Fatalf("reviews: %q", got)
		}
	}
	for _, r := range repos {
		h.fire(a, r) // primes the ETag
	}
	h.fake.ResetRequests()
	sched := h.featSubject(a, githubkit.KindReviewSched, "0930")
	fire := h.featSubject(a, githubkit.KindReviewFire, "0930")
	for day := range 2 {
		at, _ := h.scheduledAt(sched)
		h.clock.Set(at)
		before := len(h.sends())
		h.fireOn(fire, githubkit.ReviewConsumer)
		if n := len(h.sends()) - before; n != chats {
			t.Fatalf("day %d: %d reminders, want %d", day, n, chats)
		}
		pulls := h.fake.Count(func(r fakegithub.Request) bool { return strings.HasSuffix(r.Path, "/pulls") })
		if pulls != len(repos)*(day+1) {
			t.Fatalf("day %d: %d pulls requests for %d chats x %d repos, want %d", day, pulls, chats, len(repos), len(repos)*(day+1))
		}
		if day == 1 {
			cond := h.fake.Count(func(r fakegithub.Request) bool { return strings.HasSuffix(r.Path, "/pulls") && r.IfNoneMatch != "" })
			if cond != len(repos) {
				t.Fatalf("second day: %d conditional pulls requests, want %d", cond, len(repos))
			}
		}
	}
	text := sendText(h.sends()[len(h.sends())-1])
	if !strings.Contains(text, "等待评审") || !strings.Contains(text, "team/one#1") {
		t.Fatalf("zh reminder:\n%s", text)
	}
	// polling: one conditional events request per repository per interval
	h.fake.ResetRequests()
	const intervals = 3
	for range intervals {
		for _, r := range repos {
			h.fire(a, r)
		}
	}
	ev := h.fake.Count(func(r fakegithub.Request) bool { return strings.HasSuffix(r.Path, "/events") })
	all := len(h.fake.Requests())
	if per := float64(all) / float64(len(repos)*intervals); per != 1.0 || ev != all {
		t.Fatalf("polling cost %.3f requests per repository per interval (%d events of %d)", per, ev, all)
	}
}

// TestPersonalNotifications: a user links a login in a private chat and
// gets a private message for a review request, an assignment and a
// mention in a followed repository; nothing for an unfollowed one, nothing
// in the group; another user cannot take the login without an admin's
// consent; "me off" stops it.
func TestPersonalNotifications(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "token-a", 120))
	h.attach(a, true)
	h.fake.AddRepo("team/app", 0)
	h.fake.AddRepo("team/other", 0)
	h.addEvents("team/app", 100, "watch")
	h.addEvents("team/other", 100, "watch")
	h.cmd(a, "sub team/app")   // the group follows team/app only
	h.cmd(a, "sub team/other") // ... and team/other, unsubscribed below
	h.cmd(a, "unsub team/other")
	alice := wire.Session{LauncherType: "person", LauncherID: "alice-qq", SenderID: "alice-qq", BotUUID: a.session.BotUUID}
	mallory := wire.Session{LauncherType: "person", LauncherID: "mallory-qq", SenderID: "mallory-qq", BotUUID: a.session.BotUUID}
	if got := h.cmd(a, "me alice-gh"); !strings.Contains(got, "private chat") {
		t.Fatalf("me in a group: %q", got)
	}
	if got := h.cmd(a, "me alice-gh", withSession(alice)); !strings.Contains(got, "Linked GitHub login alice-gh") {
		t.Fatalf("link: %q", got)
	}
	if got := h.cmd(a, "me Alice-GH", withSession(mallory)); !strings.Contains(got, "already linked") {
		t.Fatalf("taken: %q", got)
	}
	if got := h.cmd(a, "me allow alice-gh", withSession(mallory)); !strings.Contains(got, "Only bot admins") {
		t.Fatalf("allow by a user: %q", got)
	}
	if got := h.cmd(a, "me", withSession(alice)); !strings.Contains(got, "alice-gh") {
		t.Fatalf("show: %q", got)
	}
	// another installation following the same repository has no links:
	// alice's link is installation a's alone
	b := newInst(t, "b", h.baseConfig("en_US", "token-b", 120))
	h.attach(b, true)
	h.cmd(b, "sub team/app")
	pr := func(action string, extra map[string]any) map[string]any {
		p := map[string]any{"action": action, "number": 42, "pull_request": map[string]any{"number": 42, "title": "Faster start",
			"html_url": "https://github.com/team/app/pull/42", "body": "", "state": "open"}}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	h.fake.AddEvents("team/app",
		fakegithub.RawEvent("PullRequestEvent", 101, "bob", pr("review_requested", map[string]any{"requested_reviewer": map[string]any{"login": "alice-gh"}})),
		fakegithub.RawEvent("IssuesEvent", 102, "bob", map[string]any{"action": "assigned", "assignee": map[string]any{"login": "ALICE-gh"},
			"issue": map[string]any{"number": 7, "title": "Crash", "html_url": "https://github.com/team/app/issues/7"}}),
		fakegithub.RawEvent("IssueCommentEvent", 103, "bob", map[string]any{"action": "created",
			"issue":   map[string]any{"number": 7, "title": "Crash", "html_url": "https://github.com/team/app/issues/7"},
			"comment": map[string]any{"body": "cc @alice-gh and mail alice-gh@example.com", "html_url": "https://github.com/team/app/issues/7#issuecomment-1"}}),
		// her own action tells her nothing
		fakegithub.RawEvent("IssueCommentEvent", 104, "alice-gh", map[string]any{"action": "created",
			"issue":   map[string]any{"number": 7, "title": "Crash"},
			"comment": map[string]any{"body": "thanks @alice-gh"}}),
	)
	h.fake.AddEvents("team/other", fakegithub.RawEvent("PullRequestEvent", 105, "bob", pr("review_requested", map[string]any{"requested_reviewer": map[string]any{"login": "alice-gh"}})))
	h.fire(a, "team/app")
	h.fire(b, "team/app")
	h.fire(a, "team/other") // followed by no chat of a: the poll finds no record
	var private []string
	for _, c := range h.sends() {
		m := c.SendMessage()
		if m.TargetType == "person" {
			if m.TargetID != "alice-qq" || c.Scope != a.sc {
				t.Fatalf("personal message to %+v", m)
			}
			private = append(private, sendText(c))
		}
	}
	if len(private) != 3 || !strings.Contains(private[0], "bob requested your review on team/app#42") ||
		!strings.Contains(private[1], "bob assigned you team/app#7") || !strings.Contains(private[2], "bob mentioned you in team/app#7") ||
		!strings.Contains(private[2], "#issuecomment-1") {
		t.Fatalf("private messages %q", private)
	}
	// each group got its ordinary push, and nothing else went out
	if n := len(h.sends()); n != 5 {
		t.Fatalf("%d sends, want 3 private + 2 group pushes", n)
	}
	// team/other is followed by no chat: no poll runs for it, nothing sent
	if r := h.record(a, "team/other"); r != nil {
		t.Fatalf("team/other still followed: %+v", r)
	}
	// consent: an admin allows, mallory takes the login over
	if got := h.cmd(a, "me allow alice-gh", withSession(alice), withPrivilege(2)); !strings.Contains(got, "within a day") {
		t.Fatalf("allow: %q", got)
	}
	if got := h.cmd(a, "me alice-gh", withSession(mallory)); !strings.Contains(got, "Linked") {
		t.Fatalf("take over: %q", got)
	}
	if got := h.cmd(a, "me", withSession(alice)); !strings.Contains(got, "No GitHub login") {
		t.Fatalf("alice after take-over: %q", got)
	}
	if got := h.cmd(a, "me off", withSession(mallory)); !strings.Contains(got, "Unlinked GitHub login alice-gh") {
		t.Fatalf("off: %q", got)
	}
	h.fake.AddEvents("team/app", fakegithub.RawEvent("PullRequestEvent", 106, "bob", pr("review_requested", map[string]any{"requested_reviewer": map[string]any{"login": "alice-gh"}})))
	before := len(h.sends())
	h.fire(a, "team/app")
	for _, c := range h.sends()[before:] {
		if c.SendMessage().TargetType == "person" {
			t.Fatalf("personal message after me off: %q", sendText(c))
		}
	}
}

// TestOrgSubscriptionPolling: "gh sub <org>" polls the organisation's
// feed with one conditional request per interval and pushes new events of
// any of its repositories; "gh unsub <org>" stops it.
func TestOrgSubscriptionPolling(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "token-a", 120))
	h.attach(a, true)
	h.fake.AddOrgEvents("acme", "acme/api", fakegithub.Event("watch", 100))
	if got := h.cmd(a, "sub acme"); !strings.Contains(got, "organisation acme") {
		t.Fatalf("sub org: %q", got)
	}
	if got := h.cmd(a, "sub nosuchorg"); strings.Contains(got, "Subscribed") {
		t.Fatalf("sub of a missing org: %q", got)
	}
	key := githubkit.OrgKey("acme")
	poll := h.featSubject(a, githubkit.KindOrgPoll, key)
	if got := h.schedule2(h.featSubject(a, githubkit.KindOrgSched, key)); got != "@every 2m0s" {
		t.Fatalf("org schedule %q", got)
	}
	h.fake.ResetRequests()
	h.fireOn(poll, githubkit.OrgConsumer) // primes: nothing old is pushed
	if n := len(h.sends()); n != 0 {
		t.Fatalf("priming sent %d", n)
	}
	const intervals = 4
	for range intervals - 1 {
		h.fireOn(poll, githubkit.OrgConsumer)
	}
	reqs := h.requestsTo("/orgs/acme/events")
	if len(reqs) != intervals || len(h.fake.Requests()) != intervals {
		t.Fatalf("%d org events requests (%d in all) for %d intervals", len(reqs), len(h.fake.Requests()), intervals)
	}
	for _, r := range reqs[1:] {
		if r.IfNoneMatch == "" {
			t.Fatal("an org poll was not conditional")
		}
	}
	h.fake.AddOrgEvents("acme", "acme/web", fakegithub.Event("issue_opened", 101), fakegithub.Event("push_full", 102))
	h.fireOn(poll, githubkit.OrgConsumer)
	sends := h.sends()
	if len(sends) != 1 {
		t.Fatalf("%d sends, want 1", len(sends))
	}
	text := sendText(sends[0])
	if !strings.Contains(text, "acme") || !strings.Contains(text, "acme/web: ") || strings.Count(text, "acme/web: ") != 2 {
		t.Fatalf("org push:\n%s", text)
	}
	if got := h.cmd(a, "subs"); !strings.Contains(got, "Organisations: acme") {
		t.Fatalf("subs: %q", got)
	}
	if got := h.cmd(a, "unsub acme"); !strings.Contains(got, "Unsubscribed") {
		t.Fatalf("unsub: %q", got)
	}
	if got := h.schedule2(h.featSubject(a, githubkit.KindOrgSched, key)); got != "" {
		t.Fatalf("schedule after unsub %q", got)
	}
}

// schedule2 returns the Nats-Schedule header on a subject ("" when none).
func (h *harness) schedule2(subject string) string {
	h.t.Helper()
	st, err := h.js.Stream(context.Background(), githubkit.StreamName)
	if err != nil {
		h.t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(context.Background(), subject)
	if err != nil {
		return ""
	}
	return m.Header.Get("Nats-Schedule")
}

// TestOrgSubscriptionWebhook: an organisation's webhook delivery (it
// carries "organization" and the repository) is pushed once to the
// organisation's subscribers, with a personal message to a linked login
// it mentions; the same event read later by the org poll is not pushed
// again, the poll still costs one request, and a delivery about a
// repository outside the organisation pushes nothing.
func TestOrgSubscriptionWebhook(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	e.fake.AddOrgEvents("acme", "acme/api", fakegithub.Event("watch", 100))
	if got := e.cmd(e.a, "sub acme"); !strings.Contains(got, "organisation acme") {
		t.Fatalf("sub: %q", got)
	}
	alice := wire.Session{LauncherType: "person", LauncherID: "alice-qq", SenderID: "alice-qq", BotUUID: e.a.session.BotUUID}
	e.cmd(e.a, "me alice-gh", withSession(alice))
	key := githubkit.OrgKey("acme")
	poll := e.featSubject(e.a, githubkit.KindOrgPoll, key)
	e.fireOn(poll, githubkit.OrgConsumer) // primes
	if got := e.cmd(e.a, "hook acme"); !strings.Contains(got, "admins") {
		t.Fatalf("hook by a user: %q", got)
	}
	id, secret := e.hook("acme")
	body := []byte(`{"action":"opened","issue":{"number":3,"title":"Broken build","state":"open","html_url":"https://github.com/acme/web/issues/3",` +
		`"body":"cc @alice-gh","user":{"login":"bob"}},"repository":{"id":5,"full_name":"acme/web"},"organization":{"login":"acme"},"sender":{"login":"bob"}}`)
	if code, why := e.post(delivery{id: id, event: "issues", guid: "d-1", body: body, secret: secret}); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	sends := e.host.WaitSends(t, 2, bustest.WaitTimeout)
	e.idle()
	var group, private []string
	for _, c := range e.sends() {
		if c.SendMessage().TargetType == "person" {
			private = append(private, sendText(c))
		} else {
			group = append(group, sendText(c))
		}
	}
	if len(sends) != 2 || len(group) != 1 || len(private) != 1 || !strings.Contains(group[0], "acme/web: ") ||
		!strings.Contains(private[0], "bob mentioned you in acme/web#3") {
		t.Fatalf("group %q private %q", group, private)
	}
	// the same event in the organisation's feed: the poll reads it (one
	// request) and sends nothing more
	polled := fakegithub.RawEvent("IssuesEvent", 101, "bob", map[string]any{"action": "opened",
		"issue": map[string]any{"number": 3, "title": "Broken build", "state": "open", "body": "cc @alice-gh"}})
	// GitHub's created_at of the event: a minute before the delivery arrived
	polled = bytes.Replace(polled, []byte(`"2026-01-01T00:00:00Z"`), []byte(`"`+e.clock.Now().Add(-time.Minute).UTC().Format(time.RFC3339)+`"`), 1)
	e.fake.AddOrgEvents("acme", "acme/web", polled)
	e.fake.ResetRequests()
	e.fireOn(poll, githubkit.OrgConsumer)
	if n := len(e.fake.Requests()); n != 1 {
		t.Fatalf("org poll with a hook: %d requests", n)
	}
	if n := len(e.sends()); n != 2 {
		t.Fatalf("the polled copy was sent again: %d sends", n)
	}
	// a delivery about a repository outside the organisation
	other := bytes.ReplaceAll(body, []byte(`"acme/web"`), []byte(`"evil/web"`))
	other = bytes.ReplaceAll(other, []byte(`"number":3`), []byte(`"number":4`))
	if code, why := e.post(delivery{id: id, event: "issues", guid: "d-2", body: other, secret: secret}); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	e.idle()
	if n := len(e.sends()); n != 2 {
		t.Fatalf("an outside repository's delivery pushed: %d sends", n)
	}
	if got := e.cmd(e.a, "hook acme off", withPrivilege(2)); !strings.Contains(got, "removed") {
		t.Fatalf("hook off: %q", got)
	}
	if code, _ := e.post(delivery{id: id, event: "issues", guid: "d-3", body: body, secret: secret}); code != http.StatusNotFound {
		t.Fatalf("delivery after hook off: %d", code)
	}
}

// TestFeatSchedulesFollowConfig: a new timezone re-arms every reminder
// time in it, a new poll_interval every organisation poll, and an
// uninstall cancels both.
func TestFeatSchedulesFollowConfig(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "token-a", 120))
	a.cfg["timezone"] = "Asia/Shanghai"
	h.attach(a, true)
	h.clock.Set(time.Date(2094, 6, 1, 0, 0, 0, 0, time.UTC)) // far ahead: the reminder is armed, never fired
	h.fake.AddOrgEvents("acme", "acme/api", fakegithub.Event("watch", 100))
	h.cmd(a, "sub acme")
	h.cmd(a, "reviews 09:30")
	sched := h.featSubject(a, githubkit.KindReviewSched, "0930")
	osched := h.featSubject(a, githubkit.KindOrgSched, githubkit.OrgKey("acme"))
	if at, _ := h.scheduledAt(sched); at.Format(time.RFC3339) != "2094-06-01T01:30:00Z" {
		t.Fatalf("Shanghai 09:30 is %s", at)
	}
	a.cfg["timezone"] = "Europe/London"
	a.cfg["poll_interval"] = 300
	h.attach(a, true)
	bustest.Eventually(t, "re-armed", func() bool {
		at, _ := h.scheduledAt(sched)
		return at.Format(time.RFC3339) == "2094-06-01T08:30:00Z" && h.schedule2(osched) == "@every 5m0s"
	})
	h.revoke(a, a.b, wire.ReasonUninstall)
	bustest.Eventually(t, "cancelled", func() bool {
		_, ok := h.scheduledAt(sched)
		return !ok && h.schedule2(osched) == ""
	})
}

// TestAISummary: "gh summary" gives the host's LLM the issue and its
// newest comments and answers its summary; the budget counts a day's
// summaries (a retried invocation once); no model, a failing LLM and a
// turned-off setting each answer clearly; the discussion never reaches the
// logs.
func TestAISummary(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "token-a", 120))
	a.cfg["ai_summaries_per_day"] = 2
	a.cfg["timezone"] = "UTC"
	h.attach(a, true)
	h.clock.Set(time.Date(2027, 6, 1, 12, 0, 0, 0, time.UTC))
	const secretWords = "the-private-discussion-words"
	h.fake.SetComments(hw, 1347, fakegithub.Comment{Author: "bob", Body: "I can reproduce it. " + secretWords},
		fakegithub.Comment{Author: "carol", Body: "Fixed in #1350?"})
	h.host.AnswerLLM(func(req wire.InvokeLLM) bustest.HostReply {
		return bustest.HostReply{Data: wire.LLMAnswer{Text: "A crash on the second run; a fix is proposed.", Model: "m"}}
	})
	got := h.cmd(a, "summary "+hw+"#1347")
	if !strings.Contains(got, "AI summary of "+hw+"#1347 Found a bug") || !strings.Contains(got, "a fix is proposed") ||
		!strings.Contains(got, "https://github.com/"+hw+"/issues/1347") {
		t.Fatalf("summary: %q", got)
	}
	var calls []bustest.HostCall
	for _, c := range h.host.Calls() {
		if c.Action == wire.ActionInvokeLLM {
			calls = append(calls, c)
		}
	}
	if len(calls) != 1 || calls[0].Scope != a.sc {
		t.Fatalf("%d LLM calls", len(calls))
	}
	req := calls[0].InvokeLLM()
	if len(req.Messages) != 2 || req.Messages[0].Role != wire.RoleSystem || !strings.Contains(req.Messages[0].Content, "English") {
		t.Fatalf("LLM request %+v", req)
	}
	in := req.Messages[1].Content
	if !strings.Contains(in, "Found a bug") || !strings.Contains(in, "run it twice") || !strings.Contains(in, "bob: I can reproduce it") ||
		strings.Index(in, "bob:") > strings.Index(in, "carol:") {
		t.Fatalf("LLM input:\n%s", in)
	}
	// the same invocation retried is charged once: one more summary today
	id := h.newID()
	for range 2 {
		if got, err := h.cmdID(a, id, "summary "+hw+" 1347"); err != nil || !strings.Contains(got, "a fix is proposed") {
			t.Fatalf("retried summary: %q %v", got, err)
		}
	}
	if got := h.cmd(a, "summary "+hw+"#1347"); !strings.Contains(got, "used up (2 a day") {
		t.Fatalf("over budget: %q", got)
	}
	// the next day starts again; a failing LLM and no model answer clearly
	h.clock.Set(time.Date(2027, 6, 2, 12, 0, 0, 0, time.UTC))
	h.host.AnswerLLM(func(wire.InvokeLLM) bustest.HostReply {
		return bustest.HostReply{Err: wire.Errorf(wire.ErrInternal, "model down")}
	})
	if got := h.cmd(a, "summary "+hw+"#1347"); !strings.Contains(got, "could not be written") {
		t.Fatalf("failing LLM: %q", got)
	}
	h.host.AnswerLLM(bustest.NoLLMModel)
	if got := h.cmd(a, "summary "+hw+"#1347"); !strings.Contains(got, "no LLM model") {
		t.Fatalf("no model: %q", got)
	}
	if got := h.cmd(a, "summary "+hw+"#1347"); !strings.Contains(got, "used up") {
		t.Fatalf("budget after failures: %q", got)
	}
	if got := h.cmd(a, "summary "+hw); !strings.Contains(got, "Usage") {
		t.Fatalf("usage: %q", got)
	}
	if got := h.cmd(a, "summary "+hw+"#999999"); !strings.Contains(strings.ToLower(got), "not found") {
		t.Fatalf("missing issue: %q", got)
	}
	a.cfg["ai_summaries_per_day"] = 0
	h.attach(a, true)
	before := len(h.host.Calls())
	if got := h.cmd(a, "summary "+hw+"#1347"); !strings.Contains(got, "turned off") {
		t.Fatalf("off: %q", got)
	}
	for _, c := range h.host.Calls()[before:] {
		if c.Action == wire.ActionInvokeLLM {
			t.Fatal("the LLM was asked with summaries off")
		}
	}
	if logs := h.logs.String(); strings.Contains(logs, secretWords) || strings.Contains(logs, "run it twice") || strings.Contains(logs, "a fix is proposed") {
		t.Fatal("discussion or answer text in the logs")
	}
}
