package githubkit

// Whole-organisation subscriptions: "gh sub <org>" follows
// every public repository of an organisation by polling its events feed
// (GET /orgs/{org}/events, one conditional request per interval, the same
// cost rule as a repository: an unchanged feed costs one 304).
//
// The record is <scope>.org.<org-token>; its "@every" schedule is on
// <prefix>.githubkit.osched.<scope>.<org-token> firing onto
// <prefix>.githubkit.opoll.<scope>.<org-token>. A new subscriber starts
// at the head: it gets what happens after it subscribed.
//
// The poll is the repository poll's pollRun over orgFeed (poll.go): the
// same backoff, rate-limit memory, broken-marking, claim, noise hold and
// per-subscriber cursors, so the head and a chat's cursor move only after
// its send succeeded (or was held), and a retry repeats the same
// idempotency key.

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Organisation kinds.
const (
	// KindOrgSched is the schedule of one organisation's poll.
	KindOrgSched = "osched"
	// KindOrgPoll is the subject it fires onto.
	KindOrgPoll = "opoll"
	// OrgConsumer is the durable consumer of fired organisation polls.
	OrgConsumer = "githubkit-org"
	// kindOrg is the key kind of an organisation record.
	kindOrg = "org"
	// maxOrgsPerInst caps the followed organisations of an installation.
	maxOrgsPerInst = 20
)

// orgRecord is <scope>.org.<org-token>.
type orgRecord struct {
	V         int     `json:"v"`
	Org       string  `json:"org"`
	Head      *string `json:"head"`
	ETag      string  `json:"etag,omitempty"`
	IntervalS int     `json:"interval_s"`
	// Poll is the poll bookkeeping (backoff, claim, failures, broken);
	// its IntervalS mirrors IntervalS. Absent in records written before it.
	Poll        PollState     `json:"poll"`
	Subscribers []*Subscriber `json:"subscribers"`
	// HookID names the organisation's webhook (orgs_hook.go); "" for none.
	HookID string `json:"hook_id,omitempty"`
	// Repos are the organisation's repositories its feed showed activity
	// in, most recent first, at most maxOrgRepos: the ones its chats' review
	// reminders read (reviews.go).
	Repos []string `json:"repos,omitempty"`
}

// maxOrgRepos caps orgRecord.Repos.
const maxOrgRepos = 20

// noteRepos puts the repositories of evs (newest first) at the front of
// repos, keeping at most maxOrgRepos.
func noteRepos(repos []string, evs []ghclient.Event) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range append(eventRepos(evs), repos...) {
		k := strings.ToLower(n)
		if n == "" || seen[k] || len(out) >= maxOrgRepos {
			continue
		}
		seen[k] = true
		out = append(out, n)
	}
	return out
}

func eventRepos(evs []ghclient.Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Repo.Name)
	}
	return out
}

func orgStore(kv *bus.KV) *bus.Records[orgRecord] {
	return bus.NewRecords[orgRecord](kv, kindOrg, bus.RecordsConfig[orgRecord]{})
}

// OrgKey is the key of an organisation record.
func OrgKey(org string) string { return binding.Token(strings.ToLower(org)) }

// isOrgArg reports whether a sub/unsub argument names an organisation: a
// login, no slash.
func isOrgArg(a string) bool { return loginRE.MatchString(a) }

// orgs is "gh sub <org>", "gh unsub <org>" and the organisation polls.
type orgs struct {
	*shared
	gh   *ghclient.GitHub
	me   *personal
	wh   *webhooks
	poll *poller // runs the fired polls over orgFeed
}

// orgFeed is an organisation's events feed and its <scope>.org record, as
// the RepoRecord a pollRun works on (FullName is the organisation).
type orgFeed struct{ o *orgs }

// asRepo is r as a poll's record; the subscribers are shared.
func (r *orgRecord) asRepo() *RepoRecord {
	ps := r.Poll
	ps.IntervalS = r.IntervalS
	return &RepoRecord{V: r.V, FullName: r.Org, Head: r.Head, ETag: r.ETag, Poll: ps, Subscribers: r.Subscribers, HookID: r.HookID, orgRepos: r.Repos}
}

// takePoll copies what a poll changes from p into r.
func (r *orgRecord) takePoll(p *RepoRecord) {
	r.Head, r.ETag, r.Poll, r.Subscribers, r.Repos = p.Head, p.ETag, p.Poll, p.Subscribers, p.orgRepos
	r.IntervalS = p.Poll.IntervalS
}

func (f orgFeed) get(ctx context.Context, sc binding.Scope, key string) (*RepoRecord, uint64, error) {
	r, rev, err := orgStore(f.o.runner.KV()).Get(ctx, sc, key)
	if err != nil || r == nil {
		return nil, rev, err
	}
	return r.asRepo(), rev, nil
}

func (f orgFeed) updateAt(ctx context.Context, sc binding.Scope, key string, p *RepoRecord, rev uint64) (uint64, error) {
	r := &orgRecord{V: max(p.V, 1), Org: p.FullName, HookID: p.HookID}
	r.takePoll(p)
	return orgStore(f.o.runner.KV()).UpdateAt(ctx, sc, r, rev, key)
}

func (f orgFeed) update(ctx context.Context, sc binding.Scope, key string, fn func(*RepoRecord) (*RepoRecord, error)) error {
	_, _, err := orgStore(f.o.runner.KV()).Update(ctx, sc, func(r *orgRecord) (*orgRecord, error) {
		var in *RepoRecord
		if r != nil {
			in = r.asRepo()
		}
		out, err := fn(in)
		if err != nil || out == nil {
			return nil, err
		}
		if r == nil {
			r = &orgRecord{V: 1, Org: out.FullName, HookID: out.HookID}
		}
		r.takePoll(out)
		return r, nil
	}, key)
	return err
}

func (f orgFeed) remove(ctx context.Context, sc binding.Scope, key string, rev uint64) error {
	return orgStore(f.o.runner.KV()).Delete(ctx, sc, rev, key)
}

func (f orgFeed) events(ctx context.Context, t ghclient.Target, name string, page int, etag string) (ghclient.EventsPage, error) {
	return f.o.gh.OrgEvents(ctx, t, name, page, eventsPerPage, etag)
}

func (f orgFeed) arm(ctx context.Context, sc binding.Scope, key string, intervalS int) error {
	return f.o.arm(ctx, sc, key, intervalS)
}

func (f orgFeed) disarm(ctx context.Context, sc binding.Scope, key string) error {
	return f.o.disarm(ctx, sc, key)
}

func (orgFeed) org() bool { return true }

// arm (re)publishes the organisation's "@every" schedule.
func (s *orgs) arm(ctx context.Context, sc binding.Scope, key string, intervalS int) error {
	return s.armEvery(ctx, orgPolls, sc, key, intervalS)
}

func (s *orgs) subscribe(ctx context.Context, inv *bus.Invocation, st Settings, x texts, p events.Parsed, prefix string) (string, error) {
	if st.SubscribeRequiresAdmin && inv.Command.Privilege < adminPrivilege {
		return x.T("err.admin_only"), nil
	}
	id, ok := identity(inv.Command)
	if !ok {
		return x.T("err.no_bot"), nil
	}
	org := p.Args[0]
	kinds, ref, unknown := events.ParseSubscription(p.Args[1:])
	if len(unknown) > 0 {
		return x.T("sub.bad_events", "tokens", x.Join(events.ShownBad(unknown)), "valid", x.Join(events.FilterWords())), nil
	}
	if st.APIErr != nil {
		return x.T("err.config", "field", "github_api_url"), nil
	}
	t := ghclient.Target{BaseURL: st.APIURL, Token: st.Token}
	o, err := s.gh.Org(ctx, t, org)
	if err != nil {
		return x.failText(err), nil
	}
	if o.GetLogin() != "" {
		org = o.GetLogin()
	}
	kv := s.runner.KV()
	sc := inv.Scope
	key := OrgKey(org)
	cur, _, err := orgStore(kv).Get(ctx, sc, key)
	if err != nil {
		return "", errStore(err)
	}
	if cur == nil {
		ids, err := orgStore(kv).IDs(ctx, sc)
		if err != nil {
			return "", errStore(err)
		}
		if len(ids) >= maxOrgsPerInst {
			return x.T("sub.cap_repos", "max", strconv.Itoa(maxOrgsPerInst)), nil
		}
	}
	interval := st.PollInterval
	now := s.now().UTC()
	rec, _, err := orgStore(kv).Update(ctx, sc, func(r *orgRecord) (*orgRecord, error) {
		if r == nil {
			r = &orgRecord{V: 1}
		}
		r.Org = org
		subs, err := upsertSubscriber(r.Subscribers, r.Head, Subscriber{Identity: id, Kinds: kinds, Refine: ref, Prefix: prefix, AddedAt: now}, func() error {
			return &errAbort{x.T("sub.cap_subscribers", "repo", org, "max", strconv.Itoa(events.MaxSubscribersRepo))}
		})
		if err != nil {
			return nil, err
		}
		r.Subscribers = subs
		r.Poll.resume()
		interval = effectiveInterval(st.PollInterval, r.Poll.XPollIntervalS)
		r.IntervalS = interval
		return r, nil
	}, key)
	if a, ok := asAbort(err); ok {
		return a, nil
	}
	if err != nil {
		return "", errStore(err)
	}
	if err := s.arm(ctx, sc, key, interval); err != nil {
		return "", errStore(err)
	}
	return x.T("org.sub_ok", "org", rec.Org, "events", x.FilterText(kinds, ref, "sub.all_events"), "interval", strconv.Itoa(interval), "prefix", prefix), nil
}

// Find returns the subscriber with identity id, or nil.
func (r *orgRecord) Find(id Identity) *Subscriber { return findSubscriber(r.Subscribers, id) }

func (s *orgs) unsubscribe(ctx context.Context, inv *bus.Invocation, st Settings, x texts, org string) (string, error) {
	if st.SubscribeRequiresAdmin && inv.Command.Privilege < adminPrivilege {
		return x.T("err.admin_only"), nil
	}
	id, ok := identity(inv.Command)
	if !ok {
		return x.T("err.no_bot"), nil
	}
	kv := s.runner.KV()
	sc := inv.Scope
	key := OrgKey(org)
	rec, _, err := orgStore(kv).Update(ctx, sc, func(r *orgRecord) (*orgRecord, error) {
		if r == nil || r.Find(id) == nil {
			return nil, &errAbort{x.T("unsub.not_subbed", "repo", org)}
		}
		r.Subscribers = slices.DeleteFunc(r.Subscribers, func(s *Subscriber) bool { return s.Identity == id })
		return r, nil
	}, key)
	if a, ok := asAbort(err); ok {
		return a, nil
	}
	if err != nil {
		return "", errStore(err)
	}
	if len(rec.Subscribers) == 0 {
		if err := orgStore(kv).Purge(ctx, sc, key); err != nil {
			return "", errStore(err)
		}
		if err := s.disarm(ctx, sc, key); err != nil {
			return "", errStore(err)
		}
	}
	return x.T("unsub.ok", "repo", rec.Org), nil
}

func (s *orgs) disarm(ctx context.Context, sc binding.Scope, key string) error {
	return s.disarmOf(ctx, orgPolls, sc, key)
}

// listLines are the chat's organisation subscriptions for "gh subs"; a
// broken one gets its own line saying so and how to resume it.
func (s *orgs) listLines(ctx context.Context, sc binding.Scope, id Identity, x texts, prefix string) string {
	all, err := orgStore(s.runner.KV()).List(ctx, sc)
	if err != nil {
		return ""
	}
	var names []string
	var broken []*orgRecord
	for _, l := range all {
		if l.Value != nil && l.Value.Find(id) != nil {
			names = append(names, l.Value.Org)
			if l.Value.Poll.Broken != nil {
				broken = append(broken, l.Value)
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	byName := func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) }
	slices.SortFunc(names, byName)
	slices.SortFunc(broken, func(a, b *orgRecord) int { return byName(a.Org, b.Org) })
	out := x.T("org.subs", "orgs", strings.Join(names, ", "))
	for _, r := range broken {
		sub := r.Find(id)
		out += "\n" + x.T("subs.item_broken", "repo", r.Org, "events", x.FilterText(sub.Kinds, sub.Refine, "sub.all_events"),
			"status", strconv.Itoa(r.Poll.Broken.Status), "prefix", prefix)
	}
	return out
}

// handlePoll runs a fired organisation poll: the repository poll's steps
// over orgFeed.
func (s *orgs) handlePoll(ctx context.Context, f *bus.Fired) {
	s.poll.handle(ctx, f, KindOrgPoll, orgFeed{s}, "githubkit.org.poll")
}

func (s *orgs) consumer() bus.Consumer {
	return bus.Consumer{FiredConfig: bus.FiredConfig{
		Stream: StreamName, Durable: OrgConsumer, Filter: s.subj.InternalAll(Plugin, KindOrgPoll),
		Workers: 4, AckWait: s.cfg.AckWait, MaxDeliver: 3, Timeout: s.cfg.PollDeadline,
	}, Handler: s.handlePoll}
}

// purgeFeatSchedules cancels an uninstalled scope's reminder times and
// organisation polls (their records go with the scope's keys).
func purgeFeatSchedules(ctx context.Context, sh *shared, sc binding.Scope) error {
	st := sh.streamHandle()
	if st == nil {
		return errors.New("githubkit: stream not ready")
	}
	return bus.PurgeSubjects(ctx, st, sh.subj.InternalScope(Plugin, KindReviewSched, sc), sh.subj.InternalScope(Plugin, KindReviewFire, sc),
		sh.subj.InternalScope(Plugin, KindOrgSched, sc), sh.subj.InternalScope(Plugin, KindOrgPoll, sc))
}

// featTransition re-arms, for an active authority, every reminder time
// (its zone may have changed) and every organisation poll whose interval
// changed. A reminder re-armed from the same zone is the same "@at".
func featTransition(ctx context.Context, revs *reviewReminders, o *orgs, sc binding.Scope, next bus.Authority) error {
	if next.State != bus.StateActive {
		return nil
	}
	raw, err := revs.runner.OpenConfig(sc, &next)
	if err != nil {
		return nil
	}
	st, _ := revs.settings(raw)
	kv := revs.runner.KV()
	var errs []error
	sl, err := slots(kv).List(ctx, sc)
	if err != nil {
		return err
	}
	for _, l := range sl {
		if l.Value != nil && len(l.Value.Chats) > 0 {
			errs = append(errs, revs.armSlot(ctx, sc, st, l.Value, revs.now()))
		}
	}
	ol, err := orgStore(kv).List(ctx, sc)
	if err != nil {
		return err
	}
	stream := revs.streamHandle()
	for _, l := range ol {
		if l.Value == nil || len(l.Value.Subscribers) == 0 || l.Value.Poll.Broken != nil {
			continue
		}
		if l.Value.IntervalS == effectiveInterval(st.PollInterval, l.Value.Poll.XPollIntervalS) {
			// the interval stands: re-arm only a schedule a fire while
			// the installation was inactive let lapse, as resync does
			missing := false
			sched, _, err := o.schedSubjectsOf(orgPolls, sc, l.ID)
			if err == nil && stream != nil {
				missing, err = scheduleMissing(ctx, stream, sched)
			}
			if err != nil {
				errs = append(errs, err)
			} else if missing {
				errs = append(errs, o.arm(ctx, sc, l.ID, l.Value.IntervalS))
			}
			continue
		}
		if _, _, err := orgStore(kv).Update(ctx, sc, func(r *orgRecord) (*orgRecord, error) {
			if r == nil {
				return nil, bus.ErrNoChange
			}
			r.IntervalS = effectiveInterval(st.PollInterval, r.Poll.XPollIntervalS)
			return r, nil
		}, l.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, o.arm(ctx, sc, l.ID, effectiveInterval(st.PollInterval, l.Value.Poll.XPollIntervalS)))
	}
	return errors.Join(errs...)
}
