package githubkit

// Webhooks, the command side: "!gh hook <repo>" gives an admin
// the URL and a fresh secret of the repository's webhook, "!gh hook <repo>
// off" removes it. A webhook belongs to a repo record (every chat
// subscribed to the repository in the installation gets its deliveries,
// each through its own filters). Its record, <scope>.hook.<hook-id>, holds
// the secret sealed with the service keyring and when it last delivered;
// the repo record names its hook id, so the poller finds it.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
)

// Webhook defaults.
const (
	// WebhookPath is where the receiver serves: POST <base>/github/webhook/<hook-id>.
	WebhookPath = "/github/webhook/"
	// defaultHookHealthInterval is the poll interval of a repository whose
	// webhook delivers: polling is then only the safety net.
	defaultHookHealthInterval = 15 * time.Minute
	// hookTouchEvery throttles the liveness writes of event deliveries
	// (a ping is always written): liveness is judged over minutes.
	hookTouchEvery = 30 * time.Second
	// hookIDBytes and hookSecretBytes are the random bytes of a hook id
	// (in the URL) and of a secret.
	hookIDBytes     = 16
	hookSecretBytes = 24
)

// HookRecord is one repository's webhook, <scope>.hook.<hook-id>.
type HookRecord struct {
	V        int    `json:"v"`
	RepoKey  string `json:"repo_key"`
	FullName string `json:"full_name"`
	// Secret is sealed (bus.Keyring, AAD = the scope); it is never
	// written, logged or traced in the clear.
	Secret string `json:"secret"`
	// SetBy is a hash of the invocation id that set Secret: a retry of
	// that invocation shows the same secret instead of rotating again.
	SetBy     string     `json:"set_by"`
	CreatedAt time.Time  `json:"created_at"`
	RotatedAt time.Time  `json:"rotated_at"`
	LastPing  *time.Time `json:"last_ping,omitempty"`
	LastEvent *time.Time `json:"last_event,omitempty"`
	// Org is set for an organisation's webhook (orgs_hook.go): RepoKey is
	// then the organisation record's key.
	Org string `json:"org,omitempty"`
}

// LastDelivery returns the later of the last ping and the last event, or
// nil when the webhook never delivered.
func (h *HookRecord) LastDelivery() *time.Time {
	switch {
	case h.LastPing == nil:
		return h.LastEvent
	case h.LastEvent == nil || h.LastPing.After(*h.LastEvent):
		return h.LastPing
	}
	return h.LastEvent
}

// Live reports whether the webhook delivered within window before now.
func (h *HookRecord) Live(now time.Time, window time.Duration) bool {
	last := h.LastDelivery()
	return last != nil && now.Sub(*last) < window
}

func hookStore(kv *bus.KV) *bus.Records[HookRecord] {
	return bus.NewRecords(kv, KindHook, bus.RecordsConfig[HookRecord]{Encode: func(h *HookRecord) ([]byte, error) {
		h.V = 1
		return json.Marshal(h)
	}})
}

// randomToken returns n random bytes as unpadded base64url (key-safe).
func randomToken(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("githubkit: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// checkWebhookURL validates the public base URL of the receiver.
func checkWebhookURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", errors.New("want an absolute http(s) URL without query, fragment or user")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// hookURL is the URL GitHub posts one webhook's deliveries to.
func (s *webhooks) hookURL(id string) string { return s.cfg.WebhookURL + WebhookPath + id }

// healthIntervalS is the poll interval, in seconds, of a repository whose
// webhook delivers.
func (s *webhooks) healthIntervalS() int { return int(s.cfg.HookHealthInterval / time.Second) }

// hookLiveFor is how long after its last delivery a webhook counts as
// delivering: two health intervals, so one health poll always falls inside.
func (s *webhooks) hookLiveFor() time.Duration { return 2 * s.cfg.HookHealthInterval }

// hookRequest is "gh hook <target> [off]" as readHook read it: name is
// the organisation (org) or the repository ("owner/name") the webhook is
// for, as replies name it.
type hookRequest struct {
	org  bool
	name string
	off  bool
}

// readHook is the one reader of "gh hook <repo|org> [off]" for both kinds
// of webhook, with the checks they share: admins only, webhooks
// configured, a target, at most the word off after it, and a private chat
// to be shown a secret. It returns the request, or the reply that ends the
// command.
func (s *webhooks) readHook(inv *bus.Invocation, st Settings, x texts, p events.Parsed, prefix string) (hookRequest, string, bool) {
	if inv.Command.Privilege < adminPrivilege {
		return hookRequest{}, x.T("hook.admin_only"), false
	}
	if s.cfg.WebhookURL == "" {
		return hookRequest{}, x.T("hook.disabled"), false
	}
	var req hookRequest
	if isOrgArg(p.Arg(0)) {
		req.org, req.name = true, p.Arg(0)
	} else {
		repo, msg, ok := x.repoArg(p, prefix, st)
		if !ok {
			return hookRequest{}, msg, false
		}
		req.name = repo.String()
	}
	switch {
	case len(p.Args) == 2 && strings.EqualFold(p.Args[1], "off"):
		req.off = true
	case len(p.Args) > 1:
		return hookRequest{}, x.Usage(events.SubHook, prefix), false
	}
	if !req.off && inv.Command.Session.LauncherType != wire.LauncherPerson {
		// the reply carries the secret, and every member of a group
		// reads it and could sign forged deliveries: the secret is
		// shown in a private chat only, and nothing is rotated here
		return hookRequest{}, x.T("hook.private_only", "repo", req.name, "prefix", prefix), false
	}
	return req, "", true
}

// hookCommand serves "!gh hook <repo> [off]" once readHook let it through.
func (s *webhooks) hookCommand(ctx context.Context, inv *bus.Invocation, x texts, req hookRequest, prefix string) (string, error) {
	kv := s.runner.KV()
	sc := inv.Scope
	found, _, _, err := findRecord(ctx, kv, sc, RepoKey(req.name), nil, req.name)
	if err != nil {
		return "", errStore(err)
	}
	if found == nil || len(found.Rec.Subscribers) == 0 {
		return x.T("hook.not_subbed", "repo", req.name, "prefix", prefix), nil
	}
	if req.off {
		return s.hookOff(ctx, sc, x, found)
	}
	id, secret, err := s.hookOn(ctx, sc, found, inv.ID)
	if err != nil {
		return "", errStore(err)
	}
	return x.T("hook.ok", "repo", found.Rec.FullName, "url", s.hookURL(id), "secret", secret,
		"minutes", strconv.Itoa(s.healthIntervalS()/60), "prefix", prefix), nil
}

// hookOn makes sure the record has a webhook and sets its secret; a retry
// of the same invocation gets the secret it set.
func (s *webhooks) hookOn(ctx context.Context, sc binding.Scope, found *storedRecord, invID string) (id, secret string, err error) {
	kv := s.runner.KV()
	now := s.now().UTC()
	id = found.Rec.HookID
	if id == "" {
		if id, err = randomToken(hookIDBytes); err != nil {
			return "", "", err
		}
		// the hook record first: the id is unknown outside until the
		// repo record names it
		if _, err := hookStore(kv).Create(ctx, sc, &HookRecord{RepoKey: found.Key, FullName: found.Rec.FullName, CreatedAt: now}, id); err != nil {
			return "", "", err
		}
		mine := id
		rec, _, err := updateRecord(ctx, kv, sc, found.Key, func(r *RepoRecord) (*RepoRecord, error) {
			if r == nil || r.HookID != "" {
				return nil, bus.ErrNoChange // another admin won the race: use theirs
			}
			r.HookID = mine
			return r, nil
		})
		if err != nil || rec == nil || rec.HookID != mine {
			_ = hookStore(kv).Delete(context.WithoutCancel(ctx), sc, 0, mine)
			switch {
			case err != nil:
				return "", "", err
			case rec == nil:
				return "", "", errors.New("githubkit: the subscription was removed meanwhile")
			}
			id = rec.HookID
		}
	}
	secret, err = s.setSecret(ctx, sc, id, &HookRecord{RepoKey: found.Key, FullName: found.Rec.FullName, CreatedAt: now}, invID)
	if err != nil {
		return "", "", err
	}
	return id, secret, nil
}

// setSecret sets a fresh secret on hook id (fresh is the record written
// when it is gone) and returns it; a retry of the same invocation gets the
// secret it set.
func (s *webhooks) setSecret(ctx context.Context, sc binding.Scope, id string, fresh *HookRecord, invID string) (secret string, err error) {
	now := s.now().UTC()
	setBy := binding.HashToken(invID, 32)
	_, _, err = hookStore(s.runner.KV()).Update(ctx, sc, func(h *HookRecord) (*HookRecord, error) {
		if h == nil {
			c := *fresh
			h = &c
		}
		if h.SetBy == setBy && h.Secret != "" {
			plain, err := s.keyring.Open(sc, h.Secret)
			if err == nil {
				secret = string(plain)
				return nil, bus.ErrNoChange
			}
		}
		if secret, err = randomToken(hookSecretBytes); err != nil {
			return nil, err
		}
		sealed, err := s.keyring.Seal(sc, []byte(secret))
		if err != nil {
			return nil, err
		}
		h.Secret, h.SetBy, h.RotatedAt = sealed, setBy, now
		return h, nil
	}, id)
	if err != nil {
		return "", err
	}
	return secret, nil
}

// hookOff removes the record's webhook: its record and the repo record's
// reference. Deliveries to its URL then answer 404.
func (s *webhooks) hookOff(ctx context.Context, sc binding.Scope, x texts, found *storedRecord) (string, error) {
	id := found.Rec.HookID
	if id == "" {
		return x.T("hook.none", "repo", found.Rec.FullName), nil
	}
	kv := s.runner.KV()
	if err := hookStore(kv).Delete(ctx, sc, 0, id); err != nil {
		return "", errStore(err)
	}
	_, _, err := updateRecord(ctx, kv, sc, found.Key, func(r *RepoRecord) (*RepoRecord, error) {
		if r == nil || r.HookID != id {
			return nil, bus.ErrNoChange
		}
		r.HookID = ""
		return r, nil
	})
	if err != nil {
		return "", errStore(err)
	}
	return x.T("hook.removed", "repo", found.Rec.FullName), nil
}

// dropHook removes the webhook of a repo record that is being deleted
// (its last subscriber left). A failure leaves a hook whose deliveries
// find no record and push nothing.
func (s *webhooks) dropHook(ctx context.Context, sc binding.Scope, id string) {
	if id == "" {
		return
	}
	if err := hookStore(s.runner.KV()).Delete(ctx, sc, 0, id); err != nil {
		s.log.WarnContext(ctx, "webhook record not removed", "scope", sc.String(), "err", err)
	}
}

// touchHook records a delivery: a ping always, an event at most every
// hookTouchEvery. It reports whether the record exists.
func (s *shared) touchHook(ctx context.Context, sc binding.Scope, id string, ping bool) (bool, error) {
	now := s.now().UTC()
	h, _, err := hookStore(s.runner.KV()).Update(ctx, sc, func(h *HookRecord) (*HookRecord, error) {
		if h == nil {
			return nil, bus.ErrNoChange
		}
		if ping {
			h.LastPing = &now
			return h, nil
		}
		if h.LastEvent != nil && now.Sub(*h.LastEvent) < hookTouchEvery && !now.Before(*h.LastEvent) {
			return nil, bus.ErrNoChange
		}
		h.LastEvent = &now
		return h, nil
	}, id)
	return h != nil, err
}

// hookStatus reads the webhook of a repo record for "!gh subs" and the
// poller; nil when it has none or it cannot be read.
func (s *webhooks) hookStatus(ctx context.Context, sc binding.Scope, r *RepoRecord) *HookRecord {
	if r.HookID == "" {
		return nil
	}
	h, _, err := hookStore(s.runner.KV()).Get(ctx, sc, r.HookID)
	if err != nil {
		return nil
	}
	return h
}
