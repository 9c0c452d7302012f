package githubkit

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// CI alert limits.
const (
	// ciSeenKept bounds CIState.Seen: the newest run attempts alerted or
	// known, enough to cover one page and the runs that finish late.
	ciSeenKept = 2 * ghclient.RunsPerPage
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
	// Last is each workflow and branch's last conclusion, the newest
	// ciOutcomesKept (ci_fixed.go).
	Last []RunOutcome `json:"last,omitempty"`
}

// ciWanted reports whether any subscriber of r asked for CI alerts.
func ciWanted(r *RepoRecord) bool {
	for _, s := range r.Subscribers {
		if on, _ := events.WantsCI(s.Kinds); on {
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
		var ae *ghclient.APIError
		if errors.As(err, &ae) && ae.Code == ghclient.CodeRateLimited {
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
	var fresh []ghclient.WorkflowRun // oldest first
	for i := len(page.Runs) - 1; i >= 0; i-- {
		run := page.Runs[i]
		if run.Status != "completed" || seen[run.Key()] {
			continue
		}
		if primed && !run.UpdatedAt.IsZero() && run.UpdatedAt.Before(r.CI.Since) {
			continue
		}
		fresh = append(fresh, run)
	}
	if primed && len(fresh) > 0 {
		// which fresh runs fixed a failure, oldest first, on a copy of the
		// outcomes; the write below records them
		st := CIState{Last: slices.Clone(r.CI.Last)}
		fixed := map[string]bool{}
		for _, run := range fresh {
			fixed[run.Key()] = st.noteRun(run)
		}
		p.sendCI(ctx, r, fresh, fixed)
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
			if k := page.Runs[i].Key(); !slices.Contains(c.CI.Seen, k) {
				c.CI.Seen = append(c.CI.Seen, k)
			}
		}
		if n := len(c.CI.Seen); n > ciSeenKept {
			c.CI.Seen = slices.Clone(c.CI.Seen[n-ciSeenKept:])
		}
		for i := len(page.Runs) - 1; i >= 0; i-- {
			c.CI.noteRun(page.Runs[i])
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
func (p *pollRun) sendCI(ctx context.Context, r *RepoRecord, runs []ghclient.WorkflowRun, fixed map[string]bool) {
	x := p.s.texts(p.st.Language)
	for _, sub := range r.Subscribers {
		var lines, keys []string
		for _, run := range runs {
			if line, ok := ciLine(x, sub, run, fixed[run.Key()]); ok {
				lines = append(lines, line)
				keys = append(keys, run.Key())
			}
		}
		if len(lines) == 0 {
			continue
		}
		if n := p.st.MaxEventsPerPush; n > 0 && len(lines) > n {
			lines, keys = lines[len(lines)-n:], keys[len(keys)-n:]
		}
		idem := ciIdem(p.sc, p.key, sub, keys)
		if held, err := p.s.noise.hold(ctx, p.sc, sub.Identity, func() *time.Location { return p.st.Zone }, r.FullName, strings.Join(lines, "\n"), idem, len(lines)); err != nil || held {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, p.s.cfg.HostTimeout)
		err := p.s.runner.Host().SendMessage(sctx, p.auth.Binding, wire.SendMessage{
			BotUUID: sub.BotUUID, TargetType: sub.TargetType, TargetID: sub.TargetID,
			MessageChain: wire.Plain(x.PushMessage(r.FullName, lines, 0)),
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
// wants an alert for run: one its refinements allow (branch:, workflow:,
// actor:, -actor:), of a conclusion it named (conclusion:), else a
// failure, or any run with ci_all. The poller and the webhook consumer
// share it.
func ciAllows(all bool, sub *Subscriber, run ghclient.WorkflowRun) bool {
	pass, byConclusion := sub.Refine.AllowsRun(run)
	return pass && (byConclusion || all || run.Failed())
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
// state gets it, since when at. fixed reports that the run fixed a
// failure of its workflow and branch (noteRun, in the same write).
func (s *shared) claimRun(ctx context.Context, sc binding.Scope, key string, run ghclient.WorkflowRun, at time.Time, own bool) (mine, fixed bool, err error) {
	k := run.Key()
	_, _, err = updateRecord(ctx, s.runner.KV(), sc, key, func(c *RepoRecord) (*RepoRecord, error) {
		mine, fixed = false, false
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
		fixed = c.CI.noteRun(run)
		mine = true
		return c, nil
	})
	return mine, fixed, err
}
