package githubkit

// Personal notifications: a user links their GitHub login in a
// private chat ("gh me <login>", per installation, "gh me off" to undo)
// and gets a private message when a review is requested from them, they
// are assigned, or they are mentioned, in a repository some chat of the
// installation follows. The events are the ones the poller and the webhook
// consumer already read: no request per user.
//
// A login already linked by another user moves only with an admin's
// consent: "gh me allow <login>" (admins) lets the next user who links it
// within a day take it over.

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

const (
	// kindMe is the key kind of a linked login: <scope>.me.<login-token>.
	kindMe = "me"
	// consentFor is how long an admin's consent to move a link lasts.
	consentFor = 24 * time.Hour
	// maxLinks caps the linked logins of an installation.
	maxLinks = 1000
)

// personalLink is <scope>.me.<token of the lower-cased login>.
type personalLink struct {
	V        int        `json:"v"`
	Login    string     `json:"login"`
	Chat     Identity   `json:"chat"` // the private chat
	LinkedAt time.Time  `json:"linked_at"`
	Consent  *time.Time `json:"consent,omitempty"` // another user may take it over until then
}

var loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9]|-[A-Za-z0-9]){0,38}$`)

func links(kv *bus.KV) *bus.Records[personalLink] {
	return bus.NewRecords[personalLink](kv, kindMe, bus.RecordsConfig[personalLink]{})
}

func loginKey(login string) string { return binding.Token(strings.ToLower(login)) }

// personal is "gh me" and the personal pushes.
type personal struct {
	*shared
}

// command is "gh me [<login> | off | allow <login>]".
func (s *personal) command(ctx context.Context, inv *bus.Invocation, x texts, p events.Parsed, prefix string) (string, error) {
	id, ok := identity(inv.Command)
	if !ok {
		return x.T("err.no_bot"), nil
	}
	kv := s.runner.KV()
	sc := inv.Scope
	all, err := links(kv).List(ctx, sc)
	if err != nil {
		return "", errStore(err)
	}
	var mine *personalLink
	for _, l := range all {
		if l.Value != nil && l.Value.Chat == id {
			mine = l.Value
		}
	}
	if len(p.Args) >= 2 && strings.EqualFold(p.Args[0], "allow") {
		if inv.Command.Privilege < adminPrivilege {
			return x.T("me.admin_only"), nil
		}
		login := p.Args[1]
		until := s.now().Add(consentFor).UTC()
		_, _, err := links(kv).Update(ctx, sc, func(cur *personalLink) (*personalLink, error) {
			if cur == nil {
				return nil, &errAbort{x.T("me.not_linked_login", "login", login)}
			}
			cur.Consent = &until
			return cur, nil
		}, loginKey(login))
		if abort, ok := asAbort(err); ok {
			return abort, nil
		}
		if err != nil {
			return "", errStore(err)
		}
		return x.T("me.allowed", "login", login, "prefix", prefix), nil
	}
	if id.TargetType != wire.LauncherPerson {
		return x.T("me.private_only", "prefix", prefix), nil
	}
	switch {
	case len(p.Args) == 0:
		if mine == nil {
			return x.T("me.none", "prefix", prefix), nil
		}
		return x.T("me.show", "login", mine.Login, "prefix", prefix), nil
	case len(p.Args) == 1 && (strings.EqualFold(p.Args[0], "off") || p.Args[0] == "关闭"):
		if mine == nil {
			return x.T("me.none", "prefix", prefix), nil
		}
		if err := links(kv).Purge(ctx, sc, loginKey(mine.Login)); err != nil {
			return "", errStore(err)
		}
		return x.T("me.off", "login", mine.Login), nil
	case len(p.Args) != 1 || !loginRE.MatchString(p.Args[0]):
		return x.T("me.usage", "prefix", prefix), nil
	}
	login := p.Args[0]
	if mine == nil && len(all) >= maxLinks {
		return x.T("me.cap", "max", strconv.Itoa(maxLinks)), nil
	}
	now := s.now().UTC()
	_, _, err = links(kv).Update(ctx, sc, func(cur *personalLink) (*personalLink, error) {
		if cur != nil && cur.Chat != id && (cur.Consent == nil || !now.Before(*cur.Consent)) {
			return nil, &errAbort{x.T("me.taken", "login", login, "prefix", prefix)}
		}
		return &personalLink{V: 1, Login: login, Chat: id, LinkedAt: now}, nil
	}, loginKey(login))
	if abort, ok := asAbort(err); ok {
		return abort, nil
	}
	if err != nil {
		return "", errStore(err)
	}
	// one login per user: a previous link of this chat goes
	if mine != nil && !strings.EqualFold(mine.Login, login) {
		if err := links(kv).Purge(ctx, sc, loginKey(mine.Login)); err != nil {
			return "", errStore(err)
		}
	}
	return x.T("me.linked", "login", login, "prefix", prefix), nil
}

// asAbort returns the reply text of an errAbort.
func asAbort(err error) (string, bool) {
	if a, ok := err.(*errAbort); ok {
		return a.text, true
	}
	return "", false
}

// personalPayload is what the notification reads of an event's payload,
// in the Events API's and the webhooks' shapes alike.
type personalPayload struct {
	Action            string         `json:"action"`
	RequestedReviewer *ghLogin       `json:"requested_reviewer"`
	Assignee          *ghLogin       `json:"assignee"`
	Issue             *personalThing `json:"issue"`
	PullRequest       *personalThing `json:"pull_request"`
	Comment           *struct {
		Body    string `json:"body"`
		HTMLURL string `json:"html_url"`
	} `json:"comment"`
	Review *struct {
		Body    string `json:"body"`
		HTMLURL string `json:"html_url"`
	} `json:"review"`
}

type ghLogin struct {
	Login string `json:"login"`
}

type personalThing struct {
	Number  int    `json:"number"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	HTMLURL string `json:"html_url"`
}

// Personal reasons.
const (
	reasonReview  = "review"
	reasonAssign  = "assign"
	reasonMention = "mention"
)

// personalTarget is one login an event concerns and why.
type personalTarget struct {
	login, reason string
}

// mentions returns the @login mentions of a text, at most max: not
// e-mail addresses (a word character before the @) nor team mentions
// (@org/team).
func mentions(text string, max int) []string {
	var out []string
	for i := 0; i < len(text) && len(out) < max; i++ {
		if text[i] != '@' || (i > 0 && isMentionStop(text[i-1])) {
			continue
		}
		j := i + 1
		for j < len(text) && (isAlnum(text[j]) || text[j] == '-') {
			j++
		}
		if j < len(text) && (text[j] == '/' || text[j] == '_' || text[j] == '@') {
			i = j
			continue
		}
		if login := strings.TrimRight(text[i+1:j], "-"); len(login) == j-i-1 && loginRE.MatchString(login) {
			out = append(out, login)
		}
		i = j - 1
	}
	return out
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// isMentionStop: a character before @ that makes it no mention.
func isMentionStop(c byte) bool {
	return isAlnum(c) || c == '_' || c == '@' || c == '/' || c == '.' || c == '-' || c == '`'
}

// personalTargets returns the logins an event concerns: the requested
// reviewer, the assignee, and the logins mentioned in a new issue, pull
// request, comment or review; never the actor.
func personalTargets(e ghclient.Event) []personalTarget {
	var p personalPayload
	if json.Unmarshal(e.Payload, &p) != nil {
		return nil
	}
	actor := ""
	if e.Actor != nil {
		actor = e.Actor.Login
	}
	var out []personalTarget
	seen := map[string]bool{}
	add := func(login, reason string) {
		k := strings.ToLower(login)
		if login == "" || strings.EqualFold(login, actor) || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, personalTarget{login: login, reason: reason})
	}
	switch {
	case p.Action == "review_requested" && p.RequestedReviewer != nil:
		add(p.RequestedReviewer.Login, reasonReview)
	case p.Action == "assigned" && p.Assignee != nil:
		add(p.Assignee.Login, reasonAssign)
	}
	var body string
	switch {
	case p.Comment != nil && (p.Action == "created" || p.Action == ""):
		body = p.Comment.Body
	case p.Review != nil && p.Action == "submitted":
		body = p.Review.Body
	case p.Action == "opened" && p.PullRequest != nil:
		body = p.PullRequest.Body
	case p.Action == "opened" && p.Issue != nil:
		body = p.Issue.Body
	}
	for _, m := range mentions(body, 20) {
		add(m, reasonMention)
	}
	return out
}

// notify sends the personal messages of new events of a followed
// repository. One KV listing per batch that concerns someone; idempotency
// keys make a redelivered batch harmless.
func (s *personal) notify(ctx context.Context, sc binding.Scope, a *bus.Authority, st Settings, fullName string, evs []ghclient.Event) {
	type hit struct {
		e ghclient.Event
		t personalTarget
	}
	var hits []hit
	for _, e := range evs {
		for _, t := range personalTargets(e) {
			hits = append(hits, hit{e, t})
		}
	}
	if len(hits) == 0 {
		return
	}
	all, err := links(s.runner.KV()).List(ctx, sc)
	if err != nil || len(all) == 0 {
		return
	}
	byLogin := map[string]*personalLink{}
	for _, l := range all {
		if l.Value != nil {
			byLogin[strings.ToLower(l.Value.Login)] = l.Value
		}
	}
	x := s.texts(st.Language)
	for _, h := range hits {
		l := byLogin[strings.ToLower(h.t.login)]
		if l == nil {
			continue
		}
		text, ok := x.personalLine(h.e, h.t.reason, fullName)
		if !ok {
			continue
		}
		idem := "githubkit:" + sc.String() + ":me:" + loginKey(l.Login) + ":" + h.t.reason + ":" + eventIdentity(h.e)
		sctx, cancel := context.WithTimeout(ctx, s.cfg.HostTimeout)
		err := s.runner.Host().SendMessage(sctx, a.Binding, wire.SendMessage{
			BotUUID: l.Chat.BotUUID, TargetType: l.Chat.TargetType, TargetID: l.Chat.TargetID, MessageChain: wire.Plain(text),
		}, idem)
		cancel()
		if err != nil {
			s.log.WarnContext(ctx, "personal: send failed", "scope", sc.String(), "err", err)
		}
	}
}

// personalLine is the private message of one event for one reason.
func (x texts) personalLine(e ghclient.Event, reason, fullName string) (string, bool) {
	var p personalPayload
	if json.Unmarshal(e.Payload, &p) != nil {
		return "", false
	}
	th := p.PullRequest
	if th == nil {
		th = p.Issue
	}
	if th == nil {
		return "", false
	}
	actor := "-"
	if e.Actor != nil && e.Actor.Login != "" {
		actor = e.Actor.Login
	}
	url := th.HTMLURL
	if p.Comment != nil && p.Comment.HTMLURL != "" {
		url = p.Comment.HTMLURL
	} else if p.Review != nil && p.Review.HTMLURL != "" {
		url = p.Review.HTMLURL
	}
	return x.T("me.push."+reason, "actor", actor, "repo", fullName, "n", strconv.Itoa(th.Number),
		"title", clip(th.Title, 120), "url", url), true
}
