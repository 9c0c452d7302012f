package githubkit

// Whole-organisation subscriptions (issue 30): "gh sub <org>" follows
// every public repository of an organisation by polling its events feed
// (GET /orgs/{org}/events, one conditional request per interval, the same
// cost rule as a repository: an unchanged feed costs one 304).
//
// The record is <scope>.org.<org-token>; its "@every" schedule is on
// <prefix>.githubkit.osched.<scope>.<org-token> firing onto
// <prefix>.githubkit.opoll.<scope>.<org-token>. A new subscriber starts
// at the head: it gets what happens after it subscribed.

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
	V           int           `json:"v"`
	Org         string        `json:"org"`
	Head        *string       `json:"head"`
	ETag        string        `json:"etag,omitempty"`
	IntervalS   int           `json:"interval_s"`
	Subscribers []*Subscriber `json:"subscribers"`
	// HookID names the organisation's webhook (orgs_hook.go); "" for none.
	HookID string `json:"hook_id,omitempty"`
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
	gh *ghclient.GitHub
	me *personal
	wh *webhooks
}

func (s *orgs) subjects(sc binding.Scope, key string) (sched, poll string, err error) {
	if sched, err = s.subj.Internal(Plugin, KindOrgSched, sc, key); err != nil {
		return "", "", err
	}
	poll, err = s.subj.Internal(Plugin, KindOrgPoll, sc, key)
	return sched, poll, err
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
		r.Org, r.IntervalS = org, interval
		if sub := r.Find(id); sub != nil {
			sub.Kinds, sub.Refine, sub.Prefix = kinds, ref, prefix
		} else {
			if len(r.Subscribers) >= events.MaxSubscribersRepo {
				return nil, &errAbort{x.T("sub.cap_subscribers", "repo", org, "max", strconv.Itoa(events.MaxSubscribersRepo))}
			}
			r.Subscribers = append(r.Subscribers, &Subscriber{Identity: id, Kinds: kinds, Refine: ref, Prefix: prefix, AddedAt: now})
		}
		return r, nil
	}, key)
	if a, ok := asAbort(err); ok {
		return a, nil
	}
	if err != nil {
		return "", errStore(err)
	}
	sched, poll, err := s.subjects(sc, key)
	if err != nil {
		return "", errStore(err)
	}
	if err := bus.ScheduleEvery(ctx, s.runner.JetStream(), sched, poll, time.Duration(interval)*time.Second, []byte(`{"v":1}`)); err != nil {
		return "", errStore(err)
	}
	return x.T("org.sub_ok", "org", rec.Org, "events", x.FilterText(kinds, ref, "sub.all_events"), "interval", strconv.Itoa(interval), "prefix", prefix), nil
}

// Find returns the subscriber with identity id, or nil.
func (r *orgRecord) Find(id Identity) *Subscriber {
	for _, s := range r.Subscribers {
		if s.Identity == id {
			return s
		}
	}
	return nil
}

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
	sched, poll, err := s.subjects(sc, key)
	if err != nil {
		return err
	}
	st := s.streamHandle()
	if st == nil {
		return errors.New("githubkit: stream not ready")
	}
	return bus.PurgeSubjects(ctx, st, sched, poll)
}

// listLines are the chat's organisation subscriptions for "gh subs".
func (s *orgs) listLines(ctx context.Context, sc binding.Scope, id Identity, x texts) string {
	all, err := orgStore(s.runner.KV()).List(ctx, sc)
	if err != nil {
		return ""
	}
	var names []string
	for _, l := range all {
		if l.Value != nil && l.Value.Find(id) != nil {
			names = append(names, l.Value.Org)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	return x.T("org.subs", "orgs", strings.Join(names, ", "))
}

func (s *orgs) handlePoll(ctx context.Context, f *bus.Fired) {
	ctx = ghclient.WithInstallation(ctx, f.Scope.String())
	ctx, span := s.tracer.Start(ctx, "githubkit.org.poll")
	defer span.End()
	if f.Kind != KindOrgPoll || len(f.IDs) != 1 {
		_ = f.Term()
		return
	}
	if s.poll(ctx, f.Scope, f.IDs[0]) {
		_ = f.Nak(5 * time.Second)
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = f.Ack(actx)
}

// poll reads the organisation's feed once (conditionally) and pushes what
// is new to each subscriber; retry asks for redelivery.
func (s *orgs) poll(ctx context.Context, sc binding.Scope, key string) (retry bool) {
	kv := s.runner.KV()
	a, err := s.runner.Authority(ctx, sc)
	if err != nil {
		return true
	}
	rec, rev, err := orgStore(kv).Get(ctx, sc, key)
	if err != nil {
		return true
	}
	if a == nil || a.State == bus.StateRemoved || rec == nil || len(rec.Subscribers) == 0 {
		_ = s.disarm(ctx, sc, key)
		return false
	}
	if !a.Active() {
		return false
	}
	raw, err := s.runner.OpenConfig(sc, a)
	if err != nil {
		return false
	}
	st, _ := s.settings(raw)
	if st.APIErr != nil {
		return false
	}
	page, err := s.gh.OrgEvents(ctx, ghclient.Target{BaseURL: st.APIURL, Token: st.Token}, rec.Org, rec.ETag)
	if err != nil || page.NotModified {
		return false
	}
	head := ""
	if rec.Head != nil {
		head = *rec.Head
	}
	maxSeen := head
	var asc []ghclient.Event
	for i := len(page.Events) - 1; i >= 0; i-- {
		e := page.Events[i]
		if !isDecimal(e.ID) {
			continue
		}
		if maxSeen == "" || CompareIDs(e.ID, maxSeen) > 0 {
			maxSeen = e.ID
		}
		asc = append(asc, e)
	}
	if maxSeen == "" {
		maxSeen = "0"
	}
	// the record moves first (compare-and-set on the revision read): a
	// replica that lost the race sends nothing, so nothing goes twice
	next := *rec
	next.Head, next.ETag = &maxSeen, page.ETag
	if _, err := orgStore(kv).UpdateAt(ctx, sc, &next, rev, key); err != nil {
		if bus.IsCASConflict(err) {
			return false
		}
		return true
	}
	if rec.Head == nil {
		return false // primed: nothing older is pushed
	}
	asc = newerThan(asc, head)
	if rec.HookID != "" {
		// what the webhook delivered is left out, and what is pushed here
		// is claimed against the webhook (seen.go)
		asc = s.claimPolled(ctx, sc, key, asc, s.now())
	}
	x := s.texts(st.Language)
	base := events.WebBase(st.APIURL)
	for _, sub := range rec.Subscribers {
		sel := SelectRefined(asc, head, sub.Kinds, sub.Refine, st.MaxEventsPerPush)
		if len(sel.Events) == 0 {
			continue
		}
		var lines []string
		for _, e := range sel.Events {
			if line, ok := x.EventLine(e, nil, events.NewLinks(base, e.Repo.Name)); ok {
				lines = append(lines, e.Repo.Name+": "+line)
			}
		}
		if len(lines) == 0 {
			continue
		}
		text := x.PushMessage(rec.Org, lines, sel.More)
		sctx, cancel := context.WithTimeout(ctx, s.cfg.HostTimeout)
		err := s.runner.Host().SendMessage(sctx, a.Binding, wire.SendMessage{
			BotUUID: sub.BotUUID, TargetType: sub.TargetType, TargetID: sub.TargetID, MessageChain: wire.Plain(text),
		}, "githubkit:"+sc.String()+":org:"+key+":"+sub.SID()+":"+head+"-"+maxSeen)
		cancel()
		if err != nil {
			s.log.WarnContext(ctx, "org: send failed", "scope", sc.String(), "err", err)
		}
	}
	// personal notifications: the organisation's repositories are followed
	byRepo := map[string][]ghclient.Event{}
	for _, e := range asc {
		byRepo[e.Repo.Name] = append(byRepo[e.Repo.Name], e)
	}
	for repo, evs := range byRepo {
		s.me.notify(ctx, sc, a, st, repo, evs)
	}
	return false
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
	for _, l := range ol {
		if l.Value == nil || len(l.Value.Subscribers) == 0 || l.Value.IntervalS == st.PollInterval {
			continue
		}
		if _, _, err := orgStore(kv).Update(ctx, sc, func(r *orgRecord) (*orgRecord, error) {
			if r == nil {
				return nil, bus.ErrNoChange
			}
			r.IntervalS = st.PollInterval
			return r, nil
		}, l.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		sched, poll, err := o.subjects(sc, l.ID)
		if err == nil {
			err = bus.ScheduleEvery(ctx, o.runner.JetStream(), sched, poll, time.Duration(st.PollInterval)*time.Second, []byte(`{"v":1}`))
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
