package githubkit

import (
	"slices"
	"strings"

	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// ciOutcomesKept bounds CIState.Last: the workflow and branch pairs whose
// last conclusion is remembered for the "fixed again" line, the least
// recently updated forgotten first.
const ciOutcomesKept = 32

// RunOutcome is the last completed run of one workflow on one branch, what
// tells that a passing run fixed a failure.
type RunOutcome struct {
	Workflow   string `json:"w"`
	Branch     string `json:"b"`
	Conclusion string `json:"c"`
	Number     int    `json:"n"`
	Attempt    int    `json:"a"`
}

// failedConclusion reports whether a run that ended so failed.
func failedConclusion(c string) bool {
	return ghclient.WorkflowRun{Conclusion: c}.Failed()
}

// noteRun records run as the last outcome of its workflow and branch in
// st, unless st knows a later run (runs arrive out of order: a poll's page,
// a late delivery), and reports whether run fixed a failure: it passed and
// the run before it on that workflow and branch failed.
func (st *CIState) noteRun(run ghclient.WorkflowRun) (fixed bool) {
	w, b := strings.ToLower(run.WorkflowName()), run.HeadBranch
	if w == "" || b == "" || run.Conclusion == "" {
		return false
	}
	n, a := run.RunNumber, max(run.RunAttempt, 1)
	i := slices.IndexFunc(st.Last, func(o RunOutcome) bool { return o.Workflow == w && o.Branch == b })
	if i >= 0 {
		o := st.Last[i]
		if o.Number > n || (o.Number == n && o.Attempt >= a) {
			return false // the same run again, or an older one
		}
		fixed = run.Conclusion == "success" && failedConclusion(o.Conclusion)
		st.Last = slices.Delete(st.Last, i, i+1)
	}
	st.Last = append(st.Last, RunOutcome{Workflow: w, Branch: b, Conclusion: run.Conclusion, Number: n, Attempt: a})
	if k := len(st.Last); k > ciOutcomesKept {
		st.Last = slices.Clone(st.Last[k-ciOutcomesKept:])
	}
	return fixed
}

// ciLine is the line subscriber sub gets for run, if any: the "fixed
// again" line when run fixed a failure the subscriber would have been told
// about (its refinements pass the run; with conclusion:, it named a
// failure), else the run's alert when ciAllows.
func ciLine(x texts, sub *Subscriber, run ghclient.WorkflowRun, fixed bool) (string, bool) {
	on, all := events.WantsCI(sub.Kinds)
	if !on {
		return "", false
	}
	if fixed {
		pass, byConclusion := sub.Refine.AllowsRun(run)
		if pass && (!byConclusion || slices.ContainsFunc(sub.Refine.Conclusions, failedConclusion) ||
			slices.Contains(sub.Refine.Conclusions, "success")) {
			return x.CIFixedLine(run), true
		}
	}
	if ciAllows(all, sub, run) {
		return x.CILine(run), true
	}
	return "", false
}
