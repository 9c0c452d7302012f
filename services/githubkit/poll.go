package githubkit

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Poll outcomes (spec §7.7, githubkit_polls_total).
const (
	outNotModified = "not_modified"
	outNoNew       = "no_new"
	outDelivered   = "delivered"
	outRateLimited = "rate_limited"
	outTransient   = "transient"
	outPermanent   = "permanent"
	outBroken      = "broken"
	outPaused      = "paused"
	outBackoff     = "backoff"
	outConflict    = "conflict"
	outConfigError = "config_error"
	outBusy        = "busy" // the installation's or host's cap was taken (ghclient/limits.go)
)

// feed is what one poll reads and where it keeps its record: a
// repository's events (repoFeed) or an organisation's (orgFeed, orgs.go).
// Every step of pollRun (backoff, rate-limit memory, claim, send, cursor
// moves, broken-marking) is the same for both; only these differ. The
// record is a RepoRecord in memory either way.
type feed interface {
	get(ctx context.Context, sc binding.Scope, key string) (*RepoRecord, uint64, error)
	// updateAt writes r by compare-and-set on rev.
	updateAt(ctx context.Context, sc binding.Scope, key string, r *RepoRecord, rev uint64) (uint64, error)
	update(ctx context.Context, sc binding.Scope, key string, fn func(*RepoRecord) (*RepoRecord, error)) error
	remove(ctx context.Context, sc binding.Scope, key string, rev uint64) error
	events(ctx context.Context, t ghclient.Target, name string, page int, etag string) (ghclient.EventsPage, error)
	arm(ctx context.Context, sc binding.Scope, key string, intervalS int) error
	disarm(ctx context.Context, sc binding.Scope, key string) error
	// org reports an organisation's feed: its events name their
	// repositories, so lines say which, and there is no rename or CI step.
	org() bool
}

// repoFeed is a repository's events feed and its <scope>.repo record.
type repoFeed struct{ s *poller }

func (f repoFeed) get(ctx context.Context, sc binding.Scope, key string) (*RepoRecord, uint64, error) {
	return repos(f.s.runner.KV()).Get(ctx, sc, key)
}

func (f repoFeed) updateAt(ctx context.Context, sc binding.Scope, key string, r *RepoRecord, rev uint64) (uint64, error) {
	return repos(f.s.runner.KV()).UpdateAt(ctx, sc, r, rev, key)
}

func (f repoFeed) update(ctx context.Context, sc binding.Scope, key string, fn func(*RepoRecord) (*RepoRecord, error)) error {
	_, _, err := updateRecord(ctx, f.s.runner.KV(), sc, key, fn)
	return err
}

func (f repoFeed) remove(ctx context.Context, sc binding.Scope, key string, rev uint64) error {
	return repos(f.s.runner.KV()).Delete(ctx, sc, rev, key)
}

func (f repoFeed) events(ctx context.Context, t ghclient.Target, name string, page int, etag string) (ghclient.EventsPage, error) {
	return f.s.gh.Events(ctx, t, name, page, eventsPerPage, etag)
}

func (f repoFeed) arm(ctx context.Context, sc binding.Scope, key string, intervalS int) error {
	return f.s.arm(ctx, sc, key, intervalS)
}

func (f repoFeed) disarm(ctx context.Context, sc binding.Scope, key string) error {
	return f.s.disarm(ctx, sc, key)
}

func (repoFeed) org() bool { return false }

// handlePoll handles one fired repository poll message (spec §7.2).
func (s *poller) handlePoll(ctx context.Context, f *bus.Fired) {
	s.handle(ctx, f, KindPoll, repoFeed{s}, "githubkit.poll")
}

// handle handles one fired poll message of kind on fd.
func (s *poller) handle(ctx context.Context, f *bus.Fired, kind string, fd feed, spanName string) {
	ctx = ghclient.WithInstallation(ctx, f.Scope.String())
	opts := []trace.SpanStartOption{trace.WithAttributes(bus.AttrScope.String(f.Scope.String()))}
	if f.Origin.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: f.Origin}))
	}
	ctx, span := s.tracer.Start(ctx, spanName, opts...)
	defer span.End()
	if f.Kind != kind || len(f.IDs) != 1 {
		s.log.ErrorContext(ctx, "poll message with a malformed subject")
		_ = f.Term()
		return
	}
	outcome, retry := s.poll(ctx, f, f.Scope, f.IDs[0], fd)
	span.SetAttributes(attribute.String("githubkit.poll.outcome", outcome))
	s.metrics.polls.WithLabelValues(outcome).Inc()
	if retry {
		span.SetStatus(codes.Error, "state store")
		_ = f.Nak(5 * time.Second)
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = f.Ack(actx)
}

// pollRun carries one poll's state.
type pollRun struct {
	s        *poller
	feed     feed
	sc       binding.Scope
	key      string
	auth     *bus.Authority
	st       Settings
	fp       string
	target   ghclient.Target
	now      time.Time
	rev      uint64
	rec      *RepoRecord
	progress func()
	// hooked: the repository has a webhook, so new events are checked
	// against the recent set (seen.go); hookLive: it delivers, so polling
	// is only the health check.
	hooked, hookLive bool
	// fresh are the events above the head, for personal pushes (personal.go)
	fresh []ghclient.Event
	// en makes this poll's extra GitHub calls (one budget for the plan's
	// path: checks and the lines); made on first use.
	en *enricher
}

// enricher returns the poll's enricher.
func (p *pollRun) enricher() *enricher {
	if p.en == nil {
		p.en = newEnricher(p)
	}
	return p.en
}

// poll runs the steps of spec §7.2; retry asks for redelivery (the state
// store failed before anything was decided).
func (s *poller) poll(ctx context.Context, f *bus.Fired, sc binding.Scope, key string, fd feed) (outcome string, retry bool) {
	// 2. Authority.
	a, err := s.runner.Authority(ctx, sc)
	if err != nil {
		return outTransient, true
	}
	if a == nil || a.State == bus.StateRemoved {
		if err := fd.disarm(ctx, sc, key); err != nil {
			return outTransient, true
		}
		if a != nil {
			if r, rev, err := fd.get(ctx, sc, key); err == nil && r != nil {
				_ = fd.remove(ctx, sc, key, rev)
			}
		}
		return outPaused, false
	}
	if !a.Active() {
		return outPaused, false
	}
	raw, err := s.runner.OpenConfig(sc, a)
	if err != nil {
		s.log.WarnContext(ctx, "poll: sealed config cannot be opened", "scope", sc.String())
		return outConfigError, false
	}
	st, _ := s.settings(raw)
	if st.APIErr != nil {
		return outConfigError, false
	}
	// 3. Record.
	rec, rev, err := fd.get(ctx, sc, key)
	if err != nil {
		return outTransient, true
	}
	if rec == nil || len(rec.Subscribers) == 0 || rec.Poll.Broken != nil {
		if err := fd.disarm(ctx, sc, key); err != nil {
			return outTransient, true
		}
		if rec != nil && len(rec.Subscribers) == 0 {
			_ = fd.remove(ctx, sc, key, rev)
		}
		return outPaused, false
	}
	run := &pollRun{s: s, feed: fd, sc: sc, key: key, auth: a, st: st, fp: s.rateKey(st),
		target: ghclient.Target{BaseURL: st.APIURL, Token: st.Token}, now: s.now(), rev: rev, rec: rec,
		progress: func() { _ = f.InProgress() }}
	if h := s.wh.hookStatus(ctx, sc, rec); h != nil {
		run.hooked, run.hookLive = true, h.Live(run.now, s.wh.hookLiveFor())
	}
	outcome = run.run(ctx)
	switch outcome {
	case outNotModified, outNoNew, outDelivered:
		// ciWanted reads the record of the start: polls of repositories
		// without CI subscribers pay nothing for it
		if !fd.org() && ciWanted(run.rec) {
			run.pollCI(ctx)
		}
	}
	return outcome, false
}

// run is steps 4-14 of spec §7.2 on the record read in step 3, one method
// per step.
func (p *pollRun) run(ctx context.Context) string {
	if out, skip := p.skip(); skip {
		return out
	}
	head, target, lagging := p.lowestCursor()
	page, out, done := p.firstPage(ctx, lagging)
	if done {
		return out
	}
	evs, out, ok := p.morePages(ctx, page, target)
	if !ok {
		return out
	}
	maxSeen := p.noteRead(page, evs)
	if p.rec.Head == nil {
		return p.prime(ctx, maxSeen)
	}
	newHead := head
	if maxSeen != "" {
		newHead = maxID(head, maxSeen)
	}
	plans := p.plan(ctx, evs, head, target)
	p.notifyPersonal(ctx)
	if len(plans) == 0 {
		return p.nothingToSend(ctx, newHead)
	}
	if !p.claim(ctx) {
		return outConflict
	}
	results, stale := p.send(ctx, plans, newHead)
	return p.finish(ctx, plans, results, stale, newHead)
}

// skip is step 4: a backoff, another replica's claim or the rate-limit
// memory holds the poll.
func (p *pollRun) skip() (string, bool) {
	r := p.rec
	if r.Poll.NotBefore != nil && p.now.Before(*r.Poll.NotBefore) {
		return outBackoff, true
	}
	if r.Poll.ClaimUntil != nil && p.now.Before(*r.Poll.ClaimUntil) {
		return outConflict, true
	}
	if p.s.rates.blocked(p.fp, p.now) {
		return outRateLimited, true
	}
	return "", false
}

// lowestCursor is step 5: the head, the lowest subscriber cursor (the
// target the pages are read down to) and whether a subscriber lags the
// head.
func (p *pollRun) lowestCursor() (head, target string, lagging bool) {
	r := p.rec
	if r.Head != nil {
		head = *r.Head
	}
	for _, sub := range r.Subscribers {
		c := head
		if sub.Cursor != nil {
			c = *sub.Cursor
		}
		if target == "" || CompareIDs(c, target) < 0 {
			target = c
		}
	}
	lagging = r.Head != nil && CompareIDs(target, head) < 0
	return head, target, lagging
}

// firstPage is step 6: page 1, conditional on the ETag unless a subscriber
// lags. done reports that the poll ends here with out (a failure, or a 304).
func (p *pollRun) firstPage(ctx context.Context, lagging bool) (page ghclient.EventsPage, out string, done bool) {
	r := p.rec
	etag := ""
	if r.ETag != "" && !lagging {
		etag = r.ETag
	}
	page, err := p.feed.events(ctx, p.target, r.FullName, 1, etag)
	if err != nil {
		return page, p.failure(ctx, err), true
	}
	if page.NotModified {
		changed := p.success(page.PollInterval)
		if changed {
			if !p.writeAt(ctx) {
				return page, outConflict, true
			}
			p.rearmIfNeeded(ctx)
		}
		return page, outNotModified, true
	}
	return page, "", false
}

// morePages is step 7: further pages while the last one was full and
// still above target, at most maxEventPages in all.
func (p *pollRun) morePages(ctx context.Context, page ghclient.EventsPage, target string) (evs []ghclient.Event, out string, ok bool) {
	r := p.rec
	evs = page.Events
	last := page.Events
	for n := 2; n <= maxEventPages && r.Head != nil && len(last) == eventsPerPage &&
		CompareIDs(last[len(last)-1].ID, target) > 0; n++ {
		p.progress()
		more, err := p.feed.events(ctx, p.target, r.FullName, n, "")
		if err != nil {
			return nil, p.failure(ctx, err), false
		}
		evs = append(evs, more.Events...)
		last = more.Events
	}
	if r.Head != nil && len(last) == eventsPerPage && len(evs) > 0 && CompareIDs(evs[len(evs)-1].ID, target) > 0 {
		p.s.log.WarnContext(ctx, "poll_gap: older events were not read", "scope", p.sc.String(), "events", len(evs))
	}
	return evs, "", true
}

// noteRead is step 8: the record takes the success, the repository's
// current name and id and the ETag; it returns the highest event id read.
func (p *pollRun) noteRead(page ghclient.EventsPage, evs []ghclient.Event) (maxSeen string) {
	r := p.rec
	p.success(page.PollInterval)
	if p.feed.org() {
		// the organisation's repositories with activity, for its chats'
		// review reminders (reviews.go)
		r.orgRepos = noteRepos(r.orgRepos, evs)
	}
	if len(evs) > 0 && !p.feed.org() {
		ev := evs[0]
		if ev.Repo.Name != "" && ev.Repo.Name != r.FullName {
			r.FullName = ev.Repo.Name
		}
		if ev.Repo.ID != 0 && (r.RepoID == nil || *r.RepoID != ev.Repo.ID) {
			id := ev.Repo.ID
			r.RepoID = &id
		}
	}
	r.ETag = page.ETag
	for _, e := range evs {
		if isDecimal(e.ID) && (maxSeen == "" || CompareIDs(e.ID, maxSeen) > 0) {
			maxSeen = e.ID
		}
	}
	return maxSeen
}

// prime is step 9: an unprimed record takes the newest id as its head and
// every cursor, and sends nothing.
func (p *pollRun) prime(ctx context.Context, maxSeen string) string {
	r := p.rec
	h := maxSeen
	if h == "" {
		h = "0"
	}
	r.Head = &h
	for _, sub := range r.Subscribers {
		c := h
		sub.Cursor = &c
	}
	p.writeAt(ctx)
	p.rearmIfNeeded(ctx)
	return outNoNew
}

// pushPlan is one subscriber's share of a poll: its selection and the
// cursor it was selected from.
type pushPlan struct {
	sub *Subscriber
	sel Selection
	cur string
}

// plan is step 10: the events oldest first (the ones a webhook already
// delivered left out), then each subscriber's selection.
func (p *pollRun) plan(ctx context.Context, evs []ghclient.Event, head, target string) []pushPlan {
	r := p.rec
	asc := make([]ghclient.Event, 0, len(evs))
	for i := len(evs) - 1; i >= 0; i-- {
		if isDecimal(evs[i].ID) {
			asc = append(asc, evs[i])
		}
	}
	if p.hooked {
		asc = p.s.claimPolled(ctx, p.sc, p.key, newerThan(asc, target), p.now)
	}
	p.fresh = newerThan(asc, head)
	var plans []pushPlan
	for _, sub := range r.Subscribers {
		c := head
		if sub.Cursor != nil {
			c = *sub.Cursor
		}
		var sel Selection
		if sub.Refine.WantsFiles() {
			// path: needs a push's files, which the Events API does not
			// list: compare gives them, one call per push range (shared
			// with the lines' enrichment, within its budget)
			sel = selectRefinedWith(asc, c, sub.Kinds, sub.Refine, p.st.MaxEventsPerPush, func(e ghclient.Event) *events.Enrichment {
				return p.enricher().files(ctx, e)
			})
		} else {
			sel = SelectRefined(asc, c, sub.Kinds, sub.Refine, p.st.MaxEventsPerPush)
		}
		if len(sel.Events) > 0 {
			plans = append(plans, pushPlan{sub: sub, sel: sel, cur: c})
		}
	}
	return plans
}

// nothingToSend is step 11: head and every cursor move to newHead.
func (p *pollRun) nothingToSend(ctx context.Context, newHead string) string {
	r := p.rec
	nh := newHead
	r.Head = &nh
	for _, sub := range r.Subscribers {
		c := newHead
		sub.Cursor = &c
	}
	p.writeAt(ctx)
	p.rearmIfNeeded(ctx)
	return outNoNew
}

// claim is step 12: the record is claimed for claimFor before anything is
// sent; false means another replica wrote it first.
func (p *pollRun) claim(ctx context.Context) bool {
	until := p.now.Add(claimFor)
	p.rec.Poll.ClaimUntil = &until
	if !p.writeAt(ctx) {
		return false
	}
	if h := p.s.hooks.afterClaim; h != nil {
		h(ctx, p.sc, p.key)
	}
	return true
}

// sendResult is how one subscriber's push went.
type sendResult struct {
	sent, failed bool
}

// send is step 13: one message per plan, until the context ends or the
// binding is refused (stale: the authority was superseded).
func (p *pollRun) send(ctx context.Context, plans []pushPlan, newHead string) (results map[Identity]sendResult, stale bool) {
	r := p.rec
	x := p.s.texts(p.st.Language)
	en := p.enricher()
	base := events.WebBase(p.st.APIURL)
	results = map[Identity]sendResult{}
	for _, pl := range plans {
		if ctx.Err() != nil || stale {
			break
		}
		p.progress()
		var lines []string
		for _, e := range pl.sel.Events {
			repo := p.repoOf(e)
			line, ok := x.EventLine(e, en.enrich(ctx, e), events.NewLinks(base, repo))
			if !ok {
				continue
			}
			if p.feed.org() {
				line = repo + ": " + line // an organisation's push names each line's repository
			}
			lines = append(lines, line)
		}
		text := x.PushMessage(r.FullName, lines, pl.sel.More)
		idem := pushIdem(p.sc, p.key, pl.sub, pl.cur+"-"+newHead)
		// a quiet or digest chat holds the lines for its summary
		// (noise.go); a failed hold is a failed send, retried
		if held, err := p.s.noise.hold(ctx, p.sc, pl.sub.Identity, func() *time.Location { return p.st.Zone }, r.FullName, pushBody(text), idem, len(lines)+pl.sel.More); err != nil || held {
			results[pl.sub.Identity] = sendResult{sent: held, failed: err != nil}
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, p.s.cfg.HostTimeout)
		err := p.s.runner.Host().SendMessage(sctx, p.auth.Binding, wire.SendMessage{
			BotUUID: pl.sub.BotUUID, TargetType: pl.sub.TargetType, TargetID: pl.sub.TargetID, MessageChain: wire.Plain(text),
		}, idem)
		cancel()
		switch {
		case err == nil:
			results[pl.sub.Identity] = sendResult{sent: true}
			p.s.metrics.push.WithLabelValues("sent").Inc()
		case errors.Is(err, wire.ErrBindingRefused):
			// the runner's host client marked the authority superseded
			stale = true
			p.s.metrics.push.WithLabelValues("failed").Inc()
		default:
			results[pl.sub.Identity] = sendResult{failed: true}
			p.s.metrics.push.WithLabelValues("failed").Inc()
		}
	}
	return results, stale
}

// finish is step 14: the final write releases the claim and moves the
// cursors of the subscribers served (or dropped after SendFailuresToDrop
// failures, or with nothing to send) to newHead.
func (p *pollRun) finish(ctx context.Context, plans []pushPlan, results map[Identity]sendResult, stale bool, newHead string) string {
	r := p.rec
	withLines := map[Identity]bool{}
	for _, pl := range plans {
		withLines[pl.sub.Identity] = true
	}
	polled := map[Identity]bool{}
	for _, sub := range r.Subscribers {
		polled[sub.Identity] = true
	}
	etagNow, ifl := r.ETag, r.Poll
	fullName, repoID := r.FullName, r.RepoID
	dropped := 0
	// the final write must happen even when the poll deadline cut the sends
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer fcancel()
	err := p.feed.update(fctx, p.sc, p.key, func(cur *RepoRecord) (*RepoRecord, error) {
		dropped = 0
		if cur == nil {
			return nil, bus.ErrNoChange
		}
		if cur.Head == nil || CompareIDs(newHead, *cur.Head) > 0 {
			nh := newHead
			cur.Head = &nh
		}
		cur.ETag = etagNow
		cur.FullName, cur.RepoID = fullName, repoID
		cur.Poll.ClaimUntil = nil
		cur.Poll.NotBefore = ifl.NotBefore
		cur.Poll.TransientFailures, cur.Poll.PermanentFailures = ifl.TransientFailures, ifl.PermanentFailures
		cur.Poll.LastStatus, cur.Poll.XPollIntervalS = ifl.LastStatus, ifl.XPollIntervalS
		for _, sub := range cur.Subscribers {
			res, served := results[sub.Identity]
			advance := false
			switch {
			case res.sent:
				advance = true
				sub.SendFailures = 0
			case res.failed:
				sub.SendFailures++
				if sub.SendFailures >= SendFailuresToDrop {
					advance = true
					sub.SendFailures = 0
					dropped++
				}
			case !served && polled[sub.Identity] && !withLines[sub.Identity]:
				advance = true // nothing for it; subscribers added meanwhile keep their cursor
			}
			if advance && (sub.Cursor == nil || CompareIDs(newHead, *sub.Cursor) > 0) {
				c := newHead
				sub.Cursor = &c
			}
		}
		return cur, nil
	})
	if dropped > 0 {
		p.s.metrics.push.WithLabelValues("dropped").Add(float64(dropped))
		p.s.log.WarnContext(ctx, "push: events dropped after repeated send failures", "scope", p.sc.String(), "subscribers", dropped)
	}
	if err != nil {
		p.s.log.ErrorContext(ctx, "poll: final write failed", "scope", p.sc.String(), "err", err)
	}
	p.rearmIfNeeded(fctx)
	if len(results) == 0 && stale {
		return outPaused
	}
	return outDelivered
}

// success applies a 200/304 to the in-memory record: failure counters and
// not_before cleared, X-Poll-Interval floor taken. It reports whether
// anything changed.
func (p *pollRun) success(xpoll int) bool {
	r := p.rec
	changed := r.Poll.TransientFailures != 0 || r.Poll.PermanentFailures != 0 || r.Poll.NotBefore != nil
	r.Poll.TransientFailures, r.Poll.PermanentFailures, r.Poll.NotBefore = 0, 0, nil
	if r.Poll.LastStatus != 200 {
		r.Poll.LastStatus = 200
		changed = true
	}
	if xpoll > 0 && xpoll != r.Poll.XPollIntervalS {
		r.Poll.XPollIntervalS = xpoll
		changed = true
	}
	if p.interval() != r.Poll.IntervalS {
		changed = true
	}
	return changed
}

// interval is the poll interval the record should be armed with: the
// configured one (or GitHub's X-Poll-Interval), and while the webhook
// delivers at least the health interval.
func (p *pollRun) interval() int {
	eff := effectiveInterval(p.st.PollInterval, p.rec.Poll.XPollIntervalS)
	if p.hookLive {
		eff = max(eff, p.s.wh.healthIntervalS())
	}
	return eff
}

// repoOf is the repository an event of this poll belongs to: the
// record's (its current name) for a repository, the event's own for an
// organisation.
func (p *pollRun) repoOf(e ghclient.Event) string {
	if p.feed.org() && e.Repo.Name != "" {
		return e.Repo.Name
	}
	return p.rec.FullName
}

// notifyPersonal hands the new events to personal notifications
// (personal.go), per repository.
func (p *pollRun) notifyPersonal(ctx context.Context) {
	if !p.feed.org() {
		p.s.me.notify(ctx, p.sc, p.auth, p.st, p.rec.FullName, p.fresh)
		return
	}
	var order []string
	byRepo := map[string][]ghclient.Event{}
	for _, e := range p.fresh {
		if _, ok := byRepo[e.Repo.Name]; !ok {
			order = append(order, e.Repo.Name)
		}
		byRepo[e.Repo.Name] = append(byRepo[e.Repo.Name], e)
	}
	for _, repo := range order {
		p.s.me.notify(ctx, p.sc, p.auth, p.st, repo, byRepo[repo])
	}
}

// newerThan returns the events (oldest first) with ids above cursor.
func newerThan(asc []ghclient.Event, cursor string) []ghclient.Event {
	for i, e := range asc {
		if CompareIDs(e.ID, cursor) > 0 {
			return asc[i:]
		}
	}
	return nil
}

// writeAt writes the in-memory record by a single CAS on the revision read
// at the start; it reports success and moves the revision on.
func (p *pollRun) writeAt(ctx context.Context) bool {
	rev, err := p.feed.updateAt(ctx, p.sc, p.key, p.rec, p.rev)
	if err != nil {
		if !bus.IsCASConflict(err) {
			p.s.log.ErrorContext(ctx, "poll: write failed", "scope", p.sc.String(), "err", err)
		}
		return false
	}
	p.rev = rev
	return true
}

// rearmIfNeeded republishes the schedule when the effective interval
// differs from the one it was published with, and records the new one.
func (p *pollRun) rearmIfNeeded(ctx context.Context) {
	eff := p.interval()
	if eff == p.rec.Poll.IntervalS {
		return
	}
	err := p.feed.update(ctx, p.sc, p.key, func(cur *RepoRecord) (*RepoRecord, error) {
		if cur == nil || cur.Poll.Broken != nil || cur.Poll.IntervalS == eff {
			return nil, bus.ErrNoChange
		}
		cur.Poll.IntervalS = eff
		return cur, nil
	})
	if err != nil {
		return
	}
	p.rec.Poll.IntervalS = eff
	if err := p.feed.arm(ctx, p.sc, p.key, eff); err != nil {
		p.s.log.ErrorContext(ctx, "poll: re-arm failed", "scope", p.sc.String(), "err", err)
	}
}

// failure applies a failed GitHub call to the record (spec §7.3).
func (p *pollRun) failure(ctx context.Context, err error) string {
	var ae *ghclient.APIError
	if !errors.As(err, &ae) {
		ae = &ghclient.APIError{Code: ghclient.CodeNetwork}
	}
	r := p.rec
	switch {
	case ae.Code == ghclient.CodeConfig:
		return outConfigError
	case ae.Code == ghclient.CodeBusy:
		// not the repository's fault: this fire is skipped, the next one
		// polls again with nothing counted against the record
		return outBusy
	case ae.Code == ghclient.CodeRateLimited:
		until := p.now.Add(ae.Wait + RateJitter(p.s.rand))
		r.Poll.NotBefore = &until
		r.Poll.LastStatus = ae.Status
		p.s.rates.set(p.fp, until)
		p.writeAt(ctx)
		return outRateLimited
	case ae.Permanent():
		r.Poll.PermanentFailures++
		r.Poll.LastStatus = ae.Status
		if r.Poll.PermanentFailures < brokenAfter {
			p.writeAt(ctx)
			return outPermanent
		}
		at := p.now.UTC().Truncate(time.Second)
		r.Poll.Broken = &Broken{At: at, Status: ae.Status}
		if !p.writeAt(ctx) {
			return outConflict
		}
		p.notifyBroken(ctx, at, ae.Status)
		if err := p.feed.disarm(ctx, p.sc, p.key); err != nil {
			p.s.log.ErrorContext(ctx, "poll: disarm of a broken record failed", "scope", p.sc.String(), "err", err)
		}
		return outBroken
	default:
		r.Poll.TransientFailures++
		r.Poll.LastStatus = ae.Status
		iv := time.Duration(max(r.Poll.IntervalS, 1)) * time.Second
		nb := p.now.Add(Backoff(iv, r.Poll.TransientFailures, p.s.rand))
		r.Poll.NotBefore = &nb
		p.writeAt(ctx)
		return outTransient
	}
}

// notifyBroken sends push.broken once to each subscriber, without retry.
func (p *pollRun) notifyBroken(ctx context.Context, at time.Time, status int) {
	x := p.s.texts(p.st.Language)
	for _, sub := range p.rec.Subscribers {
		// the prefix the subscriber typed at sub time; the installation's
		// for a record without one
		text := x.T("push.broken", "repo", p.rec.FullName, "status", strconv.Itoa(status), "prefix", plugin.CommandPrefix(sub.Prefix, p.st.CommandPrefix))
		idem := pushIdem(p.sc, p.key, sub, "broken", at.Format(time.RFC3339))
		sctx, cancel := context.WithTimeout(ctx, p.s.cfg.HostTimeout)
		err := p.s.runner.Host().SendMessage(sctx, p.auth.Binding, wire.SendMessage{
			BotUUID: sub.BotUUID, TargetType: sub.TargetType, TargetID: sub.TargetID, MessageChain: wire.Plain(text),
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

// enricher makes the extra GitHub calls of spec §7.6 for one poll.
type enricher struct {
	p       *pollRun
	budget  int
	stopped bool
	compare map[string]*events.Enrichment
	pulls   map[string]*events.Enrichment // by repository#number
}

func newEnricher(p *pollRun) *enricher {
	return &enricher{p: p, budget: enrichmentBudget, compare: map[string]*events.Enrichment{}, pulls: map[string]*events.Enrichment{}}
}

// enrich returns what extra calls found out about e, or nil.
func (en *enricher) enrich(ctx context.Context, e ghclient.Event) *events.Enrichment {
	repo := en.p.repoOf(e)
	if base, head, ok := events.NeedsCompare(e); ok {
		return en.compareOf(ctx, repo, base, head)
	}
	if n, ok := events.NeedsPull(e); ok {
		pk := repo + "#" + strconv.Itoa(n)
		if r, ok := en.pulls[pk]; ok {
			return r
		}
		if !en.take("pull") {
			return nil
		}
		pr, err := en.p.s.gh.Pull(ctx, en.p.target, repo, n)
		if en.failed("pull", err) {
			return nil
		}
		r := &events.Enrichment{HasPR: true, Title: pr.GetTitle(), Merged: pr.GetMerged() || (pr.MergedAt != nil && !pr.MergedAt.IsZero()),
			Labels: []string{}}
		for _, l := range pr.Labels {
			if n := strings.TrimSpace(l.GetName()); n != "" {
				r.Labels = append(r.Labels, n)
			}
		}
		en.pulls[pk] = r
		return r
	}
	return nil
}

// compareOf is one compare call per push range and poll: the count, the
// head's message, a rewrite, and the files (whole when GitHub listed
// fewer than its cap of 300); nil when the budget is spent or it failed.
func (en *enricher) compareOf(ctx context.Context, repo, base, head string) *events.Enrichment {
	k := repo + ":" + base + "..." + head
	if r, ok := en.compare[k]; ok {
		return r
	}
	if !en.take("compare") {
		return nil
	}
	cmp, err := en.p.s.gh.Compare(ctx, en.p.target, repo, base, head)
	if en.failed("compare", err) {
		en.compare[k] = nil
		return nil
	}
	r := &events.Enrichment{}
	switch cmp.GetStatus() {
	case "ahead":
		r.Commits = cmp.GetTotalCommits()
	case "diverged", "behind":
		r.Forced = true
	}
	if n := len(cmp.Commits); n > 0 && cmp.Commits[n-1].GetSHA() == head && cmp.Commits[n-1].Commit != nil {
		r.HeadMessage = cmp.Commits[n-1].Commit.GetMessage()
	}
	if len(cmp.Files) < compareFilesCap {
		r.FilesKnown = true
		for _, f := range cmp.Files {
			r.Files = append(r.Files, f.GetFilename())
			if prev := f.GetPreviousFilename(); prev != "" {
				r.Files = append(r.Files, prev) // a rename touches both paths
			}
		}
	}
	en.compare[k] = r
	return r
}

// compareFilesCap is how many files GitHub's compare lists at most; a
// list that long may be cut, so a path: check does not trust it.
const compareFilesCap = 300

// files returns what compare says about a polled push's files, for the
// path: refinement; nil (the push passes) for a push without a range
// (a new branch, a deletion) or when the call cannot be made.
func (en *enricher) files(ctx context.Context, e ghclient.Event) *events.Enrichment {
	if e.Type != "PushEvent" {
		return nil
	}
	base, head, ok := events.PushRange(e)
	if !ok {
		return nil
	}
	return en.compareOf(ctx, en.p.repoOf(e), base, head)
}

func (en *enricher) take(kind string) bool {
	if en.stopped || en.budget <= 0 {
		en.p.s.metrics.enrichment.WithLabelValues(kind, "skipped").Inc()
		return false
	}
	en.budget--
	return true
}

func (en *enricher) failed(kind string, err error) bool {
	if err == nil {
		en.p.s.metrics.enrichment.WithLabelValues(kind, "ok").Inc()
		return false
	}
	var ae *ghclient.APIError
	if errors.As(err, &ae) && ae.Code == ghclient.CodeRateLimited {
		en.stopped = true
		en.p.s.rates.set(en.p.fp, en.p.now.Add(ae.Wait+RateJitter(en.p.s.rand)))
		en.p.s.metrics.enrichment.WithLabelValues(kind, "rate_limited").Inc()
		return true
	}
	en.p.s.metrics.enrichment.WithLabelValues(kind, "error").Inc()
	return true
}

// rateMemory is the process-local rate-limit memory: rate key (rateKey)
// -> the time polls under that key may resume (spec §7.3). It is the only
// state shared across scopes.
type rateMemory struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// rateKey is whose GitHub rate limit a poll spends: the credential and
// the GitHub address together. GitHub counts a token's limit
// per token on each server, and the anonymous limit per client address
// on each server: installations without a token share one key only when
// they poll the same GitHub address (this process is one egress), and a
// token never shares the anonymous key, so one installation's block
// stops only the requests that would have been refused too.
func (s *poller) rateKey(st Settings) string {
	cred := "anonymous"
	if st.Token != "" {
		cred = "token:" + s.keyring.Fingerprint([]byte(st.Token))
	}
	return s.keyring.Fingerprint([]byte(cred + "\n" + st.APIURL))
}

func (r *rateMemory) blocked(fp string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.m[fp]
	if !ok {
		return false
	}
	if !now.Before(until) {
		delete(r.m, fp)
		return false
	}
	return true
}

func (r *rateMemory) set(fp string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if until.After(r.m[fp]) {
		r.m[fp] = until
	}
}
