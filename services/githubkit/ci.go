package githubkit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// CI alert limits.
const (
	// RunsPerPage is how many completed runs one Actions poll reads.
	RunsPerPage = 30
	// ciSeenKept bounds CIState.Seen: the newest run attempts alerted or
	// known, enough to cover one page and the runs that finish late.
	ciSeenKept = 2 * RunsPerPage
)

// CIState is the workflow-run bookkeeping of a record, present once a
// subscriber asked for CI alerts.
type CIState struct {
	// ETag of the last runs page, sent as If-None-Match.
	ETag string `json:"etag,omitempty"`
	// Since is when alerts were turned on: runs that finished before are
	// never alerted.
	Since time.Time `json:"since"`
	// Seen are the run attempts ("id.attempt") already handled, oldest
	// first, the newest ciSeenKept kept.
	Seen []string `json:"seen"`
}

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
	Actor        *struct {
		Login string `json:"login"`
	} `json:"actor"`
	TriggeringActor *struct {
		Login string `json:"login"`
	} `json:"triggering_actor"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (r WorkflowRun) key() string {
	return strconv.FormatInt(r.ID, 10) + "." + strconv.Itoa(max(r.RunAttempt, 1))
}

// failed reports whether the run's conclusion is a failure worth an alert.
func (r WorkflowRun) failed() bool {
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

// ciLine renders one run alert and its link.
func (x texts) ciLine(r WorkflowRun) string {
	actor := ""
	if r.TriggeringActor != nil {
		actor = r.TriggeringActor.Login
	}
	if actor == "" && r.Actor != nil {
		actor = r.Actor.Login
	}
	or := func(s string) string {
		if s = clean(s); s == "" {
			return x.dash()
		}
		return s
	}
	key := "ev.ci_other"
	switch r.Conclusion {
	case "failure", "timed_out", "startup_failure", "success", "cancelled", "action_required", "skipped", "neutral", "stale":
		key = "ev.ci_" + r.Conclusion
	}
	title := ""
	if t := clean(firstLine(r.DisplayTitle)); t != "" {
		title = x.t("ev.title", "title", truncate(t, pushTitleRunes))
	}
	sha := r.HeadSHA[:min(7, len(r.HeadSHA))]
	line := x.t(key, "workflow", or(r.Name), "number", strconv.Itoa(r.RunNumber), "branch", or(r.HeadBranch),
		"sha", or(sha), "actor", or(actor), "title", title)
	return line + "\n" + x.t("ev.link", "url", clean(r.HTMLURL))
}

// ciWanted reports whether any subscriber of r asked for CI alerts.
func ciWanted(r *RepoRecord) bool {
	for _, s := range r.Subscribers {
		if on, _ := WantsCI(s.Kinds); on {
			return true
		}
	}
	return false
}

// pollCI runs the Actions step of one poll after the events step: one
// conditional GET of the completed runs; on a change, an alert per new run
// to each subscriber that asked for it, then the record's CI state.
// It never changes the events bookkeeping; its failures are only counted.
func (p *pollRun) pollCI(ctx context.Context) {
	cur, err := getRecord(ctx, p.s.runner.KV(), p.sc, p.key)
	if err != nil || cur == nil || !ciWanted(cur.Rec) || cur.Rec.Poll.Broken != nil {
		return
	}
	r := cur.Rec
	etag := ""
	if r.CI != nil {
		etag = r.CI.ETag
	}
	page, err := p.s.gh.Runs(ctx, p.target, r.FullName, etag)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == CodeRateLimited {
			p.s.rates.set(p.fp, p.now.Add(ae.Wait+RateJitter(p.s.rand)))
		}
		p.s.metrics.enrichment.WithLabelValues("runs", "error").Inc()
		return
	}
	p.s.metrics.enrichment.WithLabelValues("runs", "ok").Inc()
	if page.NotModified {
		return
	}
	primed := r.CI != nil
	seen := map[string]bool{}
	if primed {
		for _, k := range r.CI.Seen {
			seen[k] = true
		}
	}
	var fresh []WorkflowRun // oldest first
	for i := len(page.Runs) - 1; i >= 0; i-- {
		run := page.Runs[i]
		if run.Status != "completed" || seen[run.key()] {
			continue
		}
		if primed && !run.UpdatedAt.IsZero() && run.UpdatedAt.Before(r.CI.Since) {
			continue
		}
		fresh = append(fresh, run)
	}
	if primed && len(fresh) > 0 {
		p.sendCI(ctx, r, fresh)
	}
	since := p.now.UTC().Truncate(time.Second)
	_, _, err = updateRecord(ctx, p.s.runner.KV(), p.sc, p.key, func(c *RepoRecord) (*RepoRecord, error) {
		if c == nil {
			return nil, bus.ErrNoChange
		}
		if c.CI == nil {
			c.CI = &CIState{Since: since}
		}
		c.CI.ETag = page.ETag
		// oldest first, so trimming the front forgets the oldest
		for i := len(page.Runs) - 1; i >= 0; i-- {
			if k := page.Runs[i].key(); !slices.Contains(c.CI.Seen, k) {
				c.CI.Seen = append(c.CI.Seen, k)
			}
		}
		if n := len(c.CI.Seen); n > ciSeenKept {
			c.CI.Seen = slices.Clone(c.CI.Seen[n-ciSeenKept:])
		}
		return c, nil
	})
	if err != nil {
		p.s.log.ErrorContext(ctx, "poll: ci state write failed", "scope", p.sc.String(), "err", err)
	}
}

// sendCI sends each subscriber that asked for CI the runs it wants; the
// idempotency key names the run attempt, so a retried poll is not pushed
// twice.
func (p *pollRun) sendCI(ctx context.Context, r *RepoRecord, runs []WorkflowRun) {
	x := p.s.texts(p.st.Language)
	for _, sub := range r.Subscribers {
		on, all := WantsCI(sub.Kinds)
		if !on {
			continue
		}
		var lines, keys []string
		for _, run := range runs {
			if ciAllows(all, sub, run) {
				lines = append(lines, x.ciLine(run))
				keys = append(keys, run.key())
			}
		}
		if len(lines) == 0 {
			continue
		}
		if n := p.st.MaxEventsPerPush; n > 0 && len(lines) > n {
			lines, keys = lines[len(lines)-n:], keys[len(keys)-n:]
		}
		idem := ciIdem(p.sc, p.key, sub, keys)
		sctx, cancel := context.WithTimeout(ctx, p.s.cfg.HostTimeout)
		err := p.s.runner.Host().SendMessage(sctx, p.auth.Binding, wire.SendMessage{
			BotUUID: sub.BotUUID, TargetType: sub.TargetType, TargetID: sub.TargetID,
			MessageChain: wire.Plain(x.pushMessage(r.FullName, lines, 0)),
		}, idem)
		cancel()
		if err != nil {
			p.s.metrics.push.WithLabelValues("failed").Inc()
			if errors.Is(err, wire.ErrBindingRefused) {
				return
			}
			continue
		}
		p.s.metrics.push.WithLabelValues("sent").Inc()
	}
}

// ciAllows reports whether a subscriber with CI alerts on (all: ci_all)
// wants an alert for run: a failure, or any run with ci_all, on a branch
// its refinements allow. The poller and the webhook consumer share it.
func ciAllows(all bool, sub *Subscriber, run WorkflowRun) bool {
	return (all || run.failed()) && sub.Refine.AllowsBranch(run.HeadBranch)
}

// ciIdem is the idempotency key of one CI alert message carrying the run
// attempts keys (oldest first); a webhook's alert of one run has the key
// a poll's alert of that run alone has.
func ciIdem(sc binding.Scope, repoKey string, sub *Subscriber, keys []string) string {
	return pushIdem(sc, repoKey, sub, "ci", keys[0]+"-"+keys[len(keys)-1], strconv.Itoa(len(keys)))
}

// pushIdem is the idempotency key of one message pushed to subscriber sub
// of repository record repoKey: the scope, the record, the chat and what
// the message carries (a cursor range, a delivery, CI runs, a breakage),
// so that it is stable over retries and replicas and never reused.
func pushIdem(sc binding.Scope, repoKey string, sub *Subscriber, what ...string) string {
	return "githubkit:" + sc.String() + ":" + repoKey + ":" + sub.SID() + ":" + strings.Join(what, ":")
}

// claimRun claims a delivered run attempt in the record's CI state, the
// bookkeeping the poller reads, so that the poll does not alert it again.
// It reports false when the poller or another delivery has it (own: this
// recording claimed it on an earlier attempt, which is ours to retry), or
// when it finished before CI alerts were turned on. A record without CI
// state gets it, since when at.
func (s *Service) claimRun(ctx context.Context, sc binding.Scope, key string, run WorkflowRun, at time.Time, own bool) (bool, error) {
	k := run.key()
	mine := false
	_, _, err := updateRecord(ctx, s.runner.KV(), sc, key, func(c *RepoRecord) (*RepoRecord, error) {
		mine = false
		switch {
		case c == nil:
			return nil, bus.ErrNoChange
		case c.CI != nil && slices.Contains(c.CI.Seen, k):
			mine = own
			return nil, bus.ErrNoChange
		case c.CI != nil && !run.UpdatedAt.IsZero() && run.UpdatedAt.Before(c.CI.Since):
			return nil, bus.ErrNoChange
		}
		if c.CI == nil {
			c.CI = &CIState{Since: at.UTC().Truncate(time.Second)}
		}
		c.CI.Seen = append(c.CI.Seen, k)
		if n := len(c.CI.Seen); n > ciSeenKept {
			c.CI.Seen = slices.Clone(c.CI.Seen[n-ciSeenKept:])
		}
		mine = true
		return c, nil
	})
	return mine, err
}
