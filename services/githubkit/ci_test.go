package githubkit_test

import (
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

func runsReqs(h *harness) []fakegithub.Request {
	return h.requestsTo("/repos/" + hw + "/actions/runs")
}

func failedRun(id int64, branch, concl string) fakegithub.WorkflowRun {
	return fakegithub.WorkflowRun{ID: id, Workflow: "CI", Branch: branch, SHA: "aa218f56b14c9653891f9e74264a383fa43fefbd",
		Conclusion: concl, Actor: "hubot", Title: "Speed up the build", Number: int(id - 9000), Updated: time.Now().Add(time.Hour)}
}

// TestCIAlerts: failed workflow runs of a subscribed repository are pushed
// once, with workflow, branch, commit, actor and link; a poll where nothing
// changed costs one conditional request to each feed (events, runs) and
// writes nothing; a subscription without a CI word never reads the runs.
func TestCIAlerts(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	b := newInst(t, "b", h.baseConfig("en_US", "token-b", 120))
	h.attach(b, true)
	h.addEvents(hw, 100, "watch")
	h.fake.SetRuns(hw, failedRun(9001, "main", "failure"))

	// a plain subscription: no Actions request at all
	h.cmd(b, "sub "+hw)
	h.fake.ResetRequests()
	h.fire(b, hw)
	h.fire(b, hw)
	if n := len(runsReqs(h)); n != 0 {
		t.Fatalf("%d runs requests without a ci word", n)
	}
	if n := len(h.fake.Requests()); n != 2 {
		t.Fatalf("two polls without a ci word made %d requests, want one each", n)
	}

	// ci only, on main: the first poll primes (the old failure is not alerted)
	if got := h.cmd(a, "sub "+hw+" ci branch:main"); !strings.Contains(got, "ci; branches main") {
		t.Fatalf("sub reply %q", got)
	}
	h.fake.ResetRequests()
	h.fire(a, hw)
	if r := runsReqs(h); len(r) != 1 || r[0].IfNoneMatch != "" || r[0].Query.Get("status") != "completed" {
		t.Fatalf("priming poll %+v", r)
	}
	if len(h.sends()) != 0 {
		t.Fatalf("priming sent %d", len(h.sends()))
	}
	rec := h.record(a, hw)
	if rec.CI == nil || rec.CI.ETag == "" || len(rec.CI.Seen) != 1 {
		t.Fatalf("ci state %+v", rec.CI)
	}

	// nothing changed: one conditional request per feed, no write, no send
	rev := h.recordRev(a, hw)
	h.fake.ResetRequests()
	h.fire(a, hw)
	if r := runsReqs(h); len(r) != 1 || r[0].IfNoneMatch != rec.CI.ETag {
		t.Fatalf("unchanged poll runs requests %+v", r)
	}
	if n := len(eventsReqs(h)); n != 1 {
		t.Fatalf("unchanged poll: %d events requests", n)
	}
	if n := len(h.fake.Requests()); n != 2 {
		t.Fatalf("unchanged poll: %d requests in all, want 2", n)
	}
	if h.recordRev(a, hw) != rev || len(h.sends()) != 0 {
		t.Fatal("an unchanged poll wrote or sent")
	}

	// a new failure on main, a success of another workflow on main (a
	// success of CI would be the "fixed again" line, TestCIFixedAgain) and
	// a failure on another branch
	runs := []fakegithub.WorkflowRun{failedRun(9001, "main", "failure"), failedRun(9002, "main", "failure"),
		otherWorkflow(failedRun(9003, "main", "success")), failedRun(9004, "feature/x", "timed_out")}
	h.fake.SetRuns(hw, runs...)
	h.fire(a, hw)
	sends := h.sends()
	if len(sends) != 1 {
		t.Fatalf("%d sends", len(sends))
	}
	text := sends[0].SendMessage().MessageChain[0].Text
	want := "❌ CI #2 failed on main (aa218f5) by hubot: Speed up the build\n   " + h.fake.URL + "/" + hw + "/actions/runs/9002"
	if !strings.Contains(text, want) || strings.Contains(text, "9003") || strings.Contains(text, "9004") {
		t.Fatalf("alert %q, want %q", text, want)
	}
	// the same runs again: a 304, no second alert
	h.fire(a, hw)
	if len(h.sends()) != 1 {
		t.Fatalf("%d sends after a repeat poll", len(h.sends()))
	}

	// ci_all for every branch gets every finished run, a re-run attempt included
	h.cmd(a, "sub "+hw+" ci_all")
	rerun := failedRun(9002, "main", "success")
	rerun.Attempt = 2
	h.fake.SetRuns(hw, append(runs, rerun, failedRun(9005, "feature/x", "cancelled"))...)
	h.fire(a, hw)
	sends = h.sends()
	if len(sends) != 2 {
		t.Fatalf("%d sends", len(sends))
	}
	text = sends[1].SendMessage().MessageChain[0].Text
	// the re-run passed after the failure of #2: "fixed again"
	if !strings.Contains(text, "CI is fixed again on main: #2 passed") || !strings.Contains(text, "CI #5 was cancelled on feature/x") || strings.Contains(text, "#3") {
		t.Fatalf("ci_all alert %q", text)
	}
	if got := h.cmd(a, "subs"); !strings.Contains(got, "(ci_all)") {
		t.Fatalf("subs %q", got)
	}
}

// TestCIAlertTexts: both languages, every conclusion word present.
func TestCIAlertTexts(t *testing.T) {
	h, a := oneInstall(t, "zh_Hans")
	h.addEvents(hw, 100, "watch")
	h.cmd(a, "sub "+hw+" actions")
	h.fire(a, hw)
	h.fake.SetRuns(hw, failedRun(9001, "main", "startup_failure"))
	h.fire(a, hw)
	if s := h.sends(); len(s) != 1 || !strings.Contains(s[0].SendMessage().MessageChain[0].Text, "CI #1 在 main（aa218f5）上启动失败，触发者 hubot：Speed up the build") {
		t.Fatalf("sends %+v", s)
	}
}

// TestCIAlertsFromWebhook: a completed workflow_run delivery is alerted
// at once, as a poll would alert the run (the same line, the chats' CI
// words and branch refinements, the same idempotency key), and the run is
// alerted once whichever of the delivery and the poll sees it first.
func TestCIAlertsFromWebhook(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	other := wire.Session{LauncherType: "group", LauncherID: wire.ID("session-a2"), SenderID: "u1", BotUUID: e.a.session.BotUUID}
	e.addEvents(hw, 100, "watch")
	e.fake.SetRuns(hw, failedRun(9001, "main", "failure"))
	e.cmd(e.a, "sub "+hw+" ci branch:main")
	e.cmd(e.a, "sub "+hw+" push", withSession(other)) // no CI word: never alerted
	e.fire(e.a, hw)                                   // primes: 9001 is old
	id, secret := e.hook(hw)
	post := func(guid string, run fakegithub.WorkflowRun) (int, string) {
		return e.post(delivery{id: id, event: "workflow_run", guid: guid, body: e.fake.WorkflowRunDelivery(hw, run), secret: secret})
	}
	// a new failure on main: alerted by the delivery, to the ci chat only
	if code, why := post("ci-1", failedRun(9002, "main", "failure")); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	sends := e.host.WaitSends(t, 1, bustest.WaitTimeout)
	e.idle()
	want := "❌ CI #2 failed on main (aa218f5) by hubot: Speed up the build\n   " + e.fake.URL + "/" + hw + "/actions/runs/9002"
	if text := sends[0].SendMessage().MessageChain[0].Text; !strings.Contains(text, want) || sends[0].SendMessage().TargetID != string(e.a.session.LauncherID) {
		t.Fatalf("alert %q to %s, want %q", text, sends[0].SendMessage().TargetID, want)
	}
	if k := sends[0].IdempotencyKey; !strings.HasSuffix(k, ":ci:9002.1-9002.1:1") {
		t.Fatalf("idempotency key %q, want the poll's key of the run", k)
	}
	// filtered as a poll filters: a success (ci, not ci_all), another
	// branch; a run still in progress is not recorded at all
	for i, run := range []fakegithub.WorkflowRun{otherWorkflow(failedRun(9003, "main", "success")), failedRun(9004, "feature/x", "failure")} {
		if code, why := post(fmt.Sprintf("ci-f%d", i), run); code != http.StatusAccepted {
			t.Fatalf("delivery %d: %d %s", run.ID, code, why)
		}
	}
	running := failedRun(9006, "main", "")
	running.Status = "in_progress"
	if code, why := post("ci-r", running); code != http.StatusAccepted || why != "ignored" {
		t.Fatalf("in-progress run: %d %s", code, why)
	}
	e.idle()
	if n := len(e.sends()); n != 1 {
		t.Fatalf("%d sends after filtered deliveries, want 1", n)
	}
	// the poll then lists the runs: nothing alerted twice
	e.fake.SetRuns(hw, failedRun(9001, "main", "failure"), failedRun(9002, "main", "failure"),
		otherWorkflow(failedRun(9003, "main", "success")), failedRun(9004, "feature/x", "failure"))
	e.fire(e.a, hw)
	if n := len(e.sends()); n != 1 {
		t.Fatalf("the poll alerted the delivered run again: %d sends", n)
	}
	// the poll first, then the delivery of the same run: alerted once
	e.fake.SetRuns(hw, failedRun(9001, "main", "failure"), failedRun(9002, "main", "failure"),
		otherWorkflow(failedRun(9003, "main", "success")), failedRun(9004, "feature/x", "failure"), failedRun(9005, "main", "timed_out"))
	e.fire(e.a, hw)
	if n := len(e.sends()); n != 2 {
		t.Fatalf("the poll did not alert the new run: %d sends", n)
	}
	if code, why := post("ci-5", failedRun(9005, "main", "timed_out")); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	e.idle()
	if n := len(e.sends()); n != 2 {
		t.Fatalf("the delivery alerted the polled run again: %d sends", n)
	}
}
