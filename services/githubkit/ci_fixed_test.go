package githubkit_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// otherWorkflow moves a run to another workflow ("Lint"), whose outcomes
// are kept apart from CI's.
func otherWorkflow(r fakegithub.WorkflowRun) fakegithub.WorkflowRun {
	r.Workflow = "Lint"
	return r
}

// nthSendText is the text of the i-th send_message call.
func nthSendText(t *testing.T, h *harness, i int) string {
	t.Helper()
	s := h.sends()
	if len(s) <= i {
		t.Fatalf("%d sends, want more than %d", len(s), i)
	}
	return sendText(s[i])
}

// TestCIFixedAgain: with ci (failures only), a passing run of a workflow
// after its failure on the same branch sends "fixed again", once; a pass
// after a pass, a pass on another branch, a pass of another workflow send
// nothing; the outcomes are kept in the record, bounded.
func TestCIFixedAgain(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.addEvents(hw, 100, "watch")
	h.fake.SetRuns(hw, failedRun(9001, "main", "success"))
	h.cmd(a, "sub "+hw+" ci")
	h.fire(a, hw) // primes
	runs := []fakegithub.WorkflowRun{failedRun(9001, "main", "success"), failedRun(9002, "main", "failure")}
	h.fake.SetRuns(hw, runs...)
	h.fire(a, hw)
	if text := nthSendText(t, h, 0); !strings.Contains(text, "❌ CI #2 failed on main") {
		t.Fatalf("failure alert %q", text)
	}
	runs = append(runs, failedRun(9003, "feature/x", "success"), otherWorkflow(failedRun(9004, "main", "success")),
		failedRun(9005, "main", "success"), failedRun(9006, "main", "success"))
	h.fake.SetRuns(hw, runs...)
	h.fire(a, hw)
	if n := len(h.sends()); n != 2 {
		t.Fatalf("%d sends, want the failure and one fixed line", n)
	}
	text := nthSendText(t, h, 1)
	want := "✅ CI is fixed again on main: #5 passed (aa218f5) by hubot: Speed up the build\n   " + h.fake.URL + "/" + hw + "/actions/runs/9005"
	if !strings.Contains(text, want) || strings.Contains(text, "#6") || strings.Contains(text, "#3") || strings.Contains(text, "#4") {
		t.Fatalf("fixed line %q, want %q", text, want)
	}
	rec := h.record(a, hw)
	if rec.CI == nil || len(rec.CI.Last) != 3 {
		t.Fatalf("outcomes %+v, want CI on main and feature/x, Lint on main", rec.CI)
	}
	for _, o := range rec.CI.Last {
		if o.Workflow == "ci" && o.Branch == "main" && (o.Conclusion != "success" || o.Number != 6) {
			t.Fatalf("CI on main remembered as %+v", o)
		}
	}
}

// TestCIFixedAgainFromWebhook: the delivery of the passing run after a
// delivered failure sends the fixed line at once, and the poll that lists
// both later sends nothing more.
func TestCIFixedAgainFromWebhook(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	e.addEvents(hw, 100, "watch")
	e.fake.SetRuns(hw, failedRun(9001, "main", "success"))
	e.cmd(e.a, "sub "+hw+" ci")
	e.fire(e.a, hw)
	id, secret := e.hook(hw)
	post := func(guid string, run fakegithub.WorkflowRun) {
		t.Helper()
		if code, why := e.post(delivery{id: id, event: "workflow_run", guid: guid, body: e.fake.WorkflowRunDelivery(hw, run), secret: secret}); code != http.StatusAccepted {
			t.Fatalf("delivery %s: %d %s", guid, code, why)
		}
	}
	post("f-2", failedRun(9002, "main", "failure"))
	e.host.WaitSends(t, 1, bustest.WaitTimeout)
	post("f-3", failedRun(9003, "main", "success"))
	sends := e.host.WaitSends(t, 2, bustest.WaitTimeout)
	if text := sends[1].SendMessage().MessageChain[0].Text; !strings.Contains(text, "CI is fixed again on main: #3 passed") {
		t.Fatalf("fixed line %q", text)
	}
	post("f-4", failedRun(9004, "main", "success")) // a pass after a pass
	e.idle()
	e.fake.SetRuns(hw, failedRun(9001, "main", "success"), failedRun(9002, "main", "failure"),
		failedRun(9003, "main", "success"), failedRun(9004, "main", "success"))
	e.fire(e.a, hw)
	if n := len(e.sends()); n != 2 {
		t.Fatalf("%d sends, want the failure and the fixed line only", n)
	}
}

// TestCIRefinements: workflow:, conclusion: and -actor: narrow CI alerts
// on the poll path; naming workflow: turns CI alerts on.
func TestCIRefinements(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.addEvents(hw, 100, "watch")
	h.fake.SetRuns(hw, failedRun(9001, "main", "failure"))
	if got := h.cmd(a, "sub "+hw+" push workflow:deploy* conclusion:failure,cancelled -actor:dependabot[bot]"); !strings.Contains(got, "push, ci") ||
		!strings.Contains(got, "workflows deploy*") || !strings.Contains(got, "not done by dependabot[bot]") {
		t.Fatalf("sub reply %q", got)
	}
	h.fire(a, hw)
	deploy := func(r fakegithub.WorkflowRun) fakegithub.WorkflowRun { r.Workflow = "Deploy prod"; return r }
	bot := deploy(failedRun(9004, "main", "failure"))
	bot.Actor = "dependabot[bot]"
	h.fake.SetRuns(hw, failedRun(9001, "main", "failure"), failedRun(9002, "main", "failure"), deploy(failedRun(9003, "main", "cancelled")),
		bot, deploy(failedRun(9005, "main", "timed_out")), deploy(failedRun(9006, "main", "failure")))
	h.fire(a, hw)
	text := nthSendText(t, h, 0)
	for _, want := range []string{"Deploy prod #3 was cancelled", "Deploy prod #6 failed"} {
		if !strings.Contains(text, want) {
			t.Errorf("alert %q lacks %q", text, want)
		}
	}
	for _, never := range []string{"CI #2", "#4", "#5"} {
		if strings.Contains(text, never) {
			t.Errorf("alert %q has %q", text, never)
		}
	}
}
