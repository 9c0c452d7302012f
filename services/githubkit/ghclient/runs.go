package ghclient

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

// RunsPerPage is how many completed runs one Actions poll reads.
const RunsPerPage = 30

// WorkflowRun is one Actions workflow run, the fields the alerts read.
type WorkflowRun struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	HeadBranch   string `json:"head_branch"`
	HeadSHA      string `json:"head_sha"`
	Event        string `json:"event"`
	Status       string `json:"status"`
	Conclusion   string `json:"conclusion"`
	RunNumber    int    `json:"run_number"`
	RunAttempt   int    `json:"run_attempt"`
	HTMLURL      string `json:"html_url"`
	DisplayTitle string `json:"display_title"`
	// Path is the workflow file (.github/workflows/ci.yml), what names a
	// run whose name is empty.
	Path  string `json:"path"`
	Actor *struct {
		Login string `json:"login"`
	} `json:"actor"`
	TriggeringActor *struct {
		Login string `json:"login"`
	} `json:"triggering_actor"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ActorLogin is who the run is by: the triggering actor (a re-run's), else
// the actor, else empty.
func (r WorkflowRun) ActorLogin() string {
	if r.TriggeringActor != nil && r.TriggeringActor.Login != "" {
		return r.TriggeringActor.Login
	}
	if r.Actor != nil {
		return r.Actor.Login
	}
	return ""
}

// WorkflowName is the run's workflow name, else its workflow file's base
// name without extension (a workflow without name: is named by its file).
func (r WorkflowRun) WorkflowName() string {
	if n := strings.TrimSpace(r.Name); n != "" {
		return r.Name
	}
	base := r.Path[strings.LastIndexByte(r.Path, '/')+1:]
	if i := strings.IndexByte(base, '@'); i >= 0 {
		base = base[:i]
	}
	return strings.TrimSuffix(strings.TrimSuffix(base, ".yml"), ".yaml")
}

// Key is the run attempt's identity, "id.attempt".
func (r WorkflowRun) Key() string {
	return strconv.FormatInt(r.ID, 10) + "." + strconv.Itoa(max(r.RunAttempt, 1))
}

// Failed reports whether the run's conclusion is a failure worth an alert.
func (r WorkflowRun) Failed() bool {
	switch r.Conclusion {
	case "failure", "timed_out", "startup_failure":
		return true
	}
	return false
}

// RunsPage is one page of completed workflow runs.
type RunsPage struct {
	NotModified bool
	Runs        []WorkflowRun // newest first
	ETag        string
}

// Runs reads the newest completed workflow runs of a repository, sending
// If-None-Match when etag is set; a 304 costs no rate limit.
func (g *GitHub) Runs(ctx context.Context, t Target, fullName, etag string) (RunsPage, error) {
	var out RunsPage
	err := g.do(ctx, t, "/repos/{owner}/{repo}/actions/runs", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		o, r, _ := strings.Cut(fullName, "/")
		req, err := c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/actions/runs?status=completed&per_page=%d", o, r, RunsPerPage), nil)
		if err != nil {
			return nil, err
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		var body struct {
			Runs []WorkflowRun `json:"workflow_runs"`
		}
		resp, err := c.Do(ctx, req, &body)
		out.Runs = body.Runs
		if resp != nil && resp.Response != nil {
			out.ETag = resp.Header.Get("ETag")
			if resp.StatusCode == http.StatusNotModified {
				out.NotModified, out.ETag = true, etag
				return resp, nil
			}
		}
		return resp, err
	})
	return out, err
}
