package githubkit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// CommandWord is the command the service serves (case-insensitive).
const CommandWord = "gh"

// adminPrivilege is the privilege needed for sub and unsub in admin mode.
const adminPrivilege = 2

// dedupes reports whether an invocation changes state (sub, unsub) and so
// is deduplicated by invocation id (spec §3.6, DESIGN 3.1).
func dedupes(inv *bus.Invocation) bool {
	if inv.Command == nil || !strings.EqualFold(inv.Command.Name, CommandWord) {
		return false
	}
	sub := events.ParseCommand(inv.Command.Params).Sub
	return sub == events.SubSub || sub == events.SubUnsub
}

// errStore is the protocol error of a state-store or schedule failure
// during a command (spec §3.4): 503, with the cause kept for the runner's
// log (the wire carries only the *wire.Error's message).
func errStore(err error) error {
	return fmt.Errorf("%w: %w", wire.Errorf(wire.ErrUnavailable, "githubkit state store unavailable"), err)
}

// identity is the subscriber identity of the invoking chat (spec §3.6).
func identity(c *wire.Command) (Identity, bool) {
	id := Identity{BotUUID: strings.TrimSpace(c.Session.BotUUID), TargetType: c.Session.LauncherType, TargetID: c.Session.LauncherID.String()}
	ok := id.BotUUID != "" && id.TargetID != "" && (id.TargetType == wire.LauncherPerson || id.TargetType == wire.LauncherGroup)
	return id, ok
}

// findRecord finds the record of a repository: by key first, then (when
// the key's record is for another repository id or absent) by repo id or
// by full name, case-insensitively. all is the scope's records when they
// had to be listed.
func findRecord(ctx context.Context, kv *bus.KV, sc binding.Scope, key string, repoID *int64, name string) (found *storedRecord, all []*storedRecord, listed bool, err error) {
	cur, err := getRecord(ctx, kv, sc, key)
	if err != nil {
		return nil, nil, false, err
	}
	if cur != nil && (repoID == nil || cur.Rec.RepoID == nil || *cur.Rec.RepoID == *repoID) {
		return cur, nil, false, nil
	}
	all, err = listRecords(ctx, kv, sc)
	if err != nil {
		return nil, nil, false, err
	}
	for _, r := range all {
		if repoID != nil && r.Rec.RepoID != nil && *r.Rec.RepoID == *repoID {
			return r, all, true, nil
		}
	}
	if repoID == nil {
		for _, r := range all {
			if strings.EqualFold(r.Rec.FullName, name) {
				return r, all, true, nil
			}
		}
	}
	return cur, all, true, nil
}

func (s *subscriptions) subscribe(ctx context.Context, inv *bus.Invocation, st Settings, x texts, p events.Parsed, prefix string) (string, error) {
	if st.SubscribeRequiresAdmin && inv.Command.Privilege < adminPrivilege {
		return x.T("err.admin_only"), nil
	}
	id, ok := identity(inv.Command)
	if !ok {
		return x.T("err.no_bot"), nil
	}
	repo, msg, ok := x.repoArg(p, prefix, st)
	if !ok {
		return msg, nil
	}
	var words []string
	if len(p.Args) > 1 {
		words = p.Args[1:]
	}
	if events.FilterTooLong(words) {
		return x.T("sub.filter_too_long", "max", strconv.Itoa(events.MaxFilterWordBytes)), nil
	}
	kinds, ref, unknown := events.ParseSubscription(words)
	if len(unknown) > 0 {
		return x.T("sub.bad_events", "tokens", x.Join(events.ShownBad(unknown)), "valid", x.Join(events.FilterWords())), nil
	}
	if st.APIErr != nil {
		return x.T("err.config", "field", "github_api_url"), nil
	}
	t := ghclient.Target{BaseURL: st.APIURL, Token: st.Token}
	rp, err := s.gh.Repo(ctx, t, repo)
	if err != nil {
		return x.failText(err), nil
	}
	fullName := rp.GetFullName()
	if fullName == "" {
		fullName = repo.String()
	}
	repoID := rp.GetID()
	kv := s.runner.KV()
	sc := inv.Scope
	found, all, listed, err := findRecord(ctx, kv, sc, RepoKey(fullName), &repoID, fullName)
	if err != nil {
		return "", errStore(err)
	}
	key := RepoKey(fullName)
	var head *string
	xpoll := 0
	if found != nil {
		key = found.Key
	} else {
		if !listed {
			if all, err = listRecords(ctx, kv, sc); err != nil {
				return "", errStore(err)
			}
		}
		if len(all) >= events.MaxReposPerInst {
			return x.T("sub.cap_repos", "max", strconv.Itoa(events.MaxReposPerInst)), nil
		}
		page, err := s.gh.Events(ctx, t, fullName, 1, 1, "")
		if err == nil {
			h := "0"
			if len(page.Events) > 0 && isDecimal(page.Events[0].ID) {
				h = page.Events[0].ID
			}
			head = &h
			xpoll = page.PollInterval
		}
	}
	now := s.now().UTC()
	interval := 0
	rec, _, err := updateRecord(ctx, kv, sc, key, func(r *RepoRecord) (*RepoRecord, error) {
		if r == nil {
			r = &RepoRecord{Poll: PollState{XPollIntervalS: xpoll}}
			if head != nil {
				h := *head
				r.Head = &h
			}
		}
		r.FullName = fullName
		rid := repoID
		r.RepoID = &rid
		subs, err := upsertSubscriber(r.Subscribers, r.Head, Subscriber{Identity: id, Kinds: kinds, Refine: ref, Prefix: prefix, AddedAt: now}, func() error {
			return &errAbort{x.T("sub.cap_subscribers", "repo", fullName, "max", strconv.Itoa(events.MaxSubscribersRepo))}
		})
		if err != nil {
			return nil, err
		}
		r.Subscribers = subs
		r.Poll.resume()
		interval = effectiveInterval(st.PollInterval, r.Poll.XPollIntervalS)
		r.Poll.IntervalS = interval
		return r, nil
	})
	var abort *errAbort
	if errors.As(err, &abort) {
		return abort.text, nil
	}
	if err != nil {
		return "", errStore(err)
	}
	// Arming is idempotent (it replaces the schedule), so a retry after a
	// failed publish always publishes again (spec §3.6 step 6).
	if err := s.arm(ctx, sc, key, interval); err != nil {
		return "", errStore(err)
	}
	return x.T("sub.ok", "repo", rec.FullName, "events", x.FilterText(kinds, ref, "sub.all_events"),
		"interval", strconv.Itoa(interval), "prefix", prefix), nil
}

func (s *subscriptions) unsubscribe(ctx context.Context, inv *bus.Invocation, st Settings, x texts, p events.Parsed, prefix string) (string, error) {
	if st.SubscribeRequiresAdmin && inv.Command.Privilege < adminPrivilege {
		return x.T("err.admin_only"), nil
	}
	id, ok := identity(inv.Command)
	if !ok {
		return x.T("err.no_bot"), nil
	}
	repo, msg, ok := x.repoArg(p, prefix, st)
	if !ok {
		return msg, nil
	}
	kv := s.runner.KV()
	sc := inv.Scope
	notSubbed := x.T("unsub.not_subbed", "repo", repo.String())
	key, name := RepoKey(repo.String()), repo.String()
	var repoID *int64
	resolved := false
	for range 10 {
		found, _, _, err := findRecord(ctx, kv, sc, key, repoID, name)
		if err != nil {
			return "", errStore(err)
		}
		if found == nil || found.Rec.Find(id) == nil {
			// GitHub redirects a renamed (or transferred) repository's old
			// name to its id: a subscription stored under the new name is
			// found by that id. One lookup, only when the name found nothing.
			if resolved || st.APIErr != nil {
				return notSubbed, nil
			}
			resolved = true
			rp, err := s.gh.Repo(ctx, ghclient.Target{BaseURL: st.APIURL, Token: st.Token}, repo)
			if err != nil || rp.GetID() == 0 || rp.GetFullName() == "" {
				return notSubbed, nil
			}
			rid := rp.GetID()
			key, name, repoID = RepoKey(rp.GetFullName()), rp.GetFullName(), &rid
			continue
		}
		r := found.Rec
		r.Remove(id)
		if len(r.Subscribers) == 0 {
			err = repos(kv).Delete(ctx, sc, found.Rev, found.Key)
			if err == nil {
				s.wh.dropHook(ctx, sc, r.HookID)
				if err := s.disarm(ctx, sc, found.Key); err != nil {
					return "", errStore(err)
				}
				return x.T("unsub.ok", "repo", r.FullName), nil
			}
		} else {
			_, err = repos(kv).UpdateAt(ctx, sc, r, found.Rev, found.Key)
			if err == nil {
				return x.T("unsub.ok", "repo", r.FullName), nil
			}
		}
		if !bus.IsCASConflict(err) {
			return "", errStore(err)
		}
	}
	return "", errStore(bus.ErrCASExhausted)
}

func (s *subscriptions) listSubs(ctx context.Context, inv *bus.Invocation, x texts, prefix string) (string, error) {
	id, ok := identity(inv.Command)
	if !ok {
		return x.T("err.no_bot"), nil
	}
	all, err := listRecords(ctx, s.runner.KV(), inv.Scope)
	if err != nil {
		return "", errStore(err)
	}
	var items []events.SubItem
	for _, r := range all {
		sub := r.Rec.Find(id)
		if sub == nil {
			continue
		}
		it := events.SubItem{FullName: r.Rec.FullName, Kinds: sub.Kinds, Refine: sub.Refine}
		if r.Rec.Poll.Broken != nil {
			it.BrokenStatus = r.Rec.Poll.Broken.Status
		}
		if h := s.wh.hookStatus(ctx, inv.Scope, r.Rec); h != nil {
			it.Hook = &events.HookItem{Last: h.LastDelivery(), Live: h.Live(s.now(), s.wh.hookLiveFor())}
		}
		items = append(items, it)
	}
	slices.SortFunc(items, func(a, b events.SubItem) int {
		return strings.Compare(strings.ToLower(a.FullName), strings.ToLower(b.FullName))
	})
	return x.SubsList(items, prefix), nil
}

// upsertSubscriber updates the choice of the chat sub names in subs, or
// adds it reading from head on (a new chat sees nothing older); a new chat
// past the subscribers' cap is refused with capErr. Repositories and
// organisations subscribe alike.
func upsertSubscriber(subs []*Subscriber, head *string, sub Subscriber, capErr func() error) ([]*Subscriber, error) {
	if cur := findSubscriber(subs, sub.Identity); cur != nil {
		cur.Kinds, cur.Refine, cur.Prefix = sub.Kinds, sub.Refine, sub.Prefix
		return subs, nil
	}
	if len(subs) >= events.MaxSubscribersRepo {
		return nil, capErr()
	}
	if head != nil {
		c := *head
		sub.Cursor = &c
	}
	return append(subs, &sub), nil
}

// resume clears a broken poll's state: subscribing again resumes a broken
// repository or organisation.
func (p *PollState) resume() {
	if p.Broken != nil {
		p.Broken = nil
		p.PermanentFailures, p.TransientFailures = 0, 0
		p.NotBefore = nil
	}
}

// findSubscriber is the subscriber of chat id in subs (nil when none).
func findSubscriber(subs []*Subscriber, id Identity) *Subscriber {
	for _, s := range subs {
		if s.Identity == id {
			return s
		}
	}
	return nil
}
