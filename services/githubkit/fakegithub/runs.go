package fakegithub

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// WorkflowRun is what a test says about one Actions workflow run; the
// server serves it in the shape of GET /repos/{o}/{r}/actions/runs.
type WorkflowRun struct {
	ID         int64
	Attempt    int    // run_attempt, 1 when 0
	Workflow   string // the workflow's name
	Branch     string // head_branch
	SHA        string // head_sha
	Event      string // push when empty
	Status     string // completed when empty
	Conclusion string // failure, success, cancelled, timed_out, ...; "" while running
	Actor      string
	Title      string // display_title: the head commit's subject or the PR title
	Number     int    // run_number
	Updated    time.Time
}

// SetRuns replaces a repository's workflow runs (any order; served newest
// id first), creating the repository when needed.
func (s *Server) SetRuns(fullName string, runs ...WorkflowRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.addRepoLocked(fullName, 0)
	r.runs = append([]WorkflowRun(nil), runs...)
}

func (s *Server) runJSON(rp *repo, w WorkflowRun) map[string]any {
	attempt := max(w.Attempt, 1)
	event, status := w.Event, w.Status
	if event == "" {
		event = "push"
	}
	if status == "" {
		status = "completed"
	}
	var concl any
	if w.Conclusion != "" {
		concl = w.Conclusion
	}
	actor := map[string]any{"login": w.Actor, "id": 583231, "type": "User"}
	updated := w.Updated
	if updated.IsZero() {
		updated = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	web := s.URL + "/" + rp.fullName
	return map[string]any{
		"id": w.ID, "name": w.Workflow, "node_id": "WFR_" + strconv.FormatInt(w.ID, 10),
		"head_branch": w.Branch, "head_sha": w.SHA, "path": ".github/workflows/ci.yml",
		"display_title": w.Title, "run_number": w.Number, "event": event, "status": status,
		"conclusion": concl, "workflow_id": 161335, "check_suite_id": 42 + w.ID,
		"url":           fmt.Sprintf("%s/repos/%s/actions/runs/%d", s.URL, rp.fullName, w.ID),
		"html_url":      fmt.Sprintf("%s/actions/runs/%d", web, w.ID),
		"pull_requests": []any{}, "created_at": updated.Add(-3 * time.Minute).Format(time.RFC3339),
		"updated_at": updated.Format(time.RFC3339), "run_attempt": attempt,
		"run_started_at": updated.Add(-3 * time.Minute).Format(time.RFC3339),
		"actor":          actor, "triggering_actor": actor,
		"head_commit": map[string]any{"id": w.SHA, "message": w.Title},
		"repository":  map[string]any{"id": rp.id, "full_name": rp.fullName},
	}
}

// runs serves GET actions/runs: newest first, the status query (a status or
// a conclusion) filtering, per_page (default 30, at most 100), and a weak
// ETag over the body answered with 304 on a matching If-None-Match.
func (s *Server) runs(w http.ResponseWriter, r *http.Request, rel string, rp *repo) {
	q := r.URL.Query()
	per := 30
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		per = min(v, 100)
	}
	want := q.Get("status")
	s.mu.Lock()
	list := append([]WorkflowRun(nil), rp.runs...)
	var out []any
	total := 0
	for i := range list {
		for j := i + 1; j < len(list); j++ {
			if list[j].ID > list[i].ID {
				list[i], list[j] = list[j], list[i]
			}
		}
	}
	for _, run := range list {
		status := run.Status
		if status == "" {
			status = "completed"
		}
		if want != "" && want != status && want != run.Conclusion {
			continue
		}
		total++
		if len(out) < per {
			out = append(out, s.runJSON(rp, run))
		}
	}
	s.mu.Unlock()
	if out == nil {
		out = []any{}
	}
	body, _ := json.Marshal(map[string]any{"total_count": total, "workflow_runs": out})
	sum := sha1.Sum(body)
	etag := `W/"` + hex.EncodeToString(sum[:]) + `"`
	s.rateHeaders(w, rel)
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "private, max-age=60, s-maxage=60")
	if inm := r.Header.Get("If-None-Match"); inm != "" && inm == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// WorkflowRunDelivery returns the body of the workflow_run webhook
// delivery GitHub posts when run completes (action "completed"), its
// workflow_run the object GET actions/runs serves for it.
func (s *Server) WorkflowRunDelivery(fullName string, run WorkflowRun) []byte {
	s.mu.Lock()
	rp := s.addRepoLocked(fullName, 0)
	w := s.runJSON(rp, run)
	repo := map[string]any{"id": rp.id, "full_name": rp.fullName}
	s.mu.Unlock()
	action := "completed"
	if st, _ := w["status"].(string); st != "completed" {
		action = "in_progress"
	}
	b, _ := json.Marshal(map[string]any{"action": action, "workflow_run": w,
		"workflow":   map[string]any{"id": 161335, "name": run.Workflow, "path": ".github/workflows/ci.yml"},
		"repository": repo, "sender": map[string]any{"login": run.Actor, "id": 583231, "type": "User"}})
	return b
}
