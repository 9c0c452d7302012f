package githubkit

// An organisation's webhook: "gh hook <org>" (admins, private chat) gives
// the URL and secret of an organisation webhook, whose deliveries carry
// "organization" and the repository they are about. The receiver is the
// repositories' own (webhook_http.go); the consumer hands a delivery of an
// organisation's hook here. Polling goes on at the same cost, and the
// recent-event set (seen.go) keeps the two paths from sending an event
// twice.

import (
	"context"
	"strings"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// hookCommand is "gh hook <org> [off]" once webhooks.readHook let it
// through.
func (s *orgs) hookCommand(ctx context.Context, inv *bus.Invocation, x texts, req hookRequest, prefix string) (string, error) {
	kv := s.runner.KV()
	sc := inv.Scope
	key := OrgKey(req.name)
	rec, _, err := orgStore(kv).Get(ctx, sc, key)
	if err != nil {
		return "", errStore(err)
	}
	if rec == nil || len(rec.Subscribers) == 0 {
		return x.T("hook.not_subbed", "repo", req.name, "prefix", prefix), nil
	}
	if req.off {
		if rec.HookID == "" {
			return x.T("hook.none", "repo", rec.Org), nil
		}
		if err := hookStore(kv).Delete(ctx, sc, 0, rec.HookID); err != nil {
			return "", errStore(err)
		}
		if _, _, err := orgStore(kv).Update(ctx, sc, func(r *orgRecord) (*orgRecord, error) {
			if r == nil || r.HookID == "" {
				return nil, bus.ErrNoChange
			}
			r.HookID = ""
			return r, nil
		}, key); err != nil {
			return "", errStore(err)
		}
		return x.T("hook.removed", "repo", rec.Org), nil
	}
	id := rec.HookID
	if id == "" {
		if id, err = randomToken(hookIDBytes); err != nil {
			return "", errStore(err)
		}
		if _, err := hookStore(kv).Create(ctx, sc, &HookRecord{RepoKey: key, FullName: rec.Org, Org: rec.Org, CreatedAt: s.now().UTC()}, id); err != nil {
			return "", errStore(err)
		}
		mine := id
		got, _, err := orgStore(kv).Update(ctx, sc, func(r *orgRecord) (*orgRecord, error) {
			if r == nil || r.HookID != "" {
				return nil, bus.ErrNoChange
			}
			r.HookID = mine
			return r, nil
		}, key)
		if err != nil || got == nil || got.HookID != mine {
			_ = hookStore(kv).Delete(context.WithoutCancel(ctx), sc, 0, mine)
			if err != nil || got == nil {
				return "", errStore(err)
			}
			id = got.HookID
		}
	}
	// the secret is set as for a repository's hook (a retry of the same
	// invocation shows the same secret)
	secret, err := s.wh.setSecret(ctx, sc, id, &HookRecord{RepoKey: key, FullName: rec.Org, Org: rec.Org, CreatedAt: s.now().UTC()}, inv.ID)
	if err != nil {
		return "", errStore(err)
	}
	return x.T("org.hook_ok", "org", rec.Org, "url", s.wh.hookURL(id), "secret", secret, "prefix", prefix), nil
}

// pushDelivery pushes one recorded delivery of an organisation's webhook.
func (s *orgs) pushDelivery(ctx context.Context, f *bus.Fired, a *bus.Authority, id string, hook *HookRecord, m hookMessage) (string, bool) {
	sc := f.Scope
	kv := s.runner.KV()
	rec, _, err := orgStore(kv).Get(ctx, sc, hook.RepoKey)
	if err != nil {
		return "store", true
	}
	if rec == nil || rec.HookID != id || len(rec.Subscribers) == 0 {
		return "no_subscription", false
	}
	if f.Delivered == 1 {
		if _, err := s.wh.touchHook(ctx, sc, id, false); err != nil {
			s.log.WarnContext(ctx, "webhook: liveness not recorded", "scope", sc.String(), "err", err)
		}
	}
	raw, err := s.runner.OpenConfig(sc, a)
	if err != nil {
		return "config_error", false
	}
	st, _ := s.settings(raw)
	ev, ok := webhookEvent(m.Event, m.Body)
	// an organisation's delivery is about one of its repositories
	if !ok || !strings.HasPrefix(strings.ToLower(ev.Repo.Name), strings.ToLower(rec.Org)+"/") {
		return "ignored", false
	}
	ev.ID = "1"
	x := s.texts(st.Language)
	ln := events.NewLinks(events.WebBase(st.APIURL), ev.Repo.Name)
	var sends []hookSend
	for _, sub := range rec.Subscribers {
		if len(SelectRefined([]ghclient.Event{ev}, "0", sub.Kinds, sub.Refine, 0).Events) == 0 {
			continue
		}
		if line, ok := x.EventLine(ev, nil, ln); ok {
			sends = append(sends, hookSend{sub: sub, text: x.PushMessage(rec.Org, []string{ev.Repo.Name + ": " + line}, 0),
				idem: pushIdem(sc, hook.RepoKey, sub, "hook", m.Delivery)})
		}
	}
	mine, _, err := s.claimDelivery(ctx, sc, hook.RepoKey, eventIdentity(ev), m)
	if err != nil {
		return "store", true
	}
	if !mine {
		return "seen", false
	}
	s.me.notify(ctx, sc, a, st, ev.Repo.Name, []ghclient.Event{ev})
	if len(sends) == 0 {
		return "filtered", false
	}
	return s.wh.sendBudgeted(ctx, f, a, id, hook.RepoKey, rec.Org, st.Language, sends)
}
