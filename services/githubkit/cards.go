package githubkit

// Link cards: a GitHub repository, issue, pull request,
// release or commit address pasted in a chat gets a short card.
//
// The event endpoint only decides whether a message may get cards (the
// installation's link_cards setting, links found by ParseLinks, not a gh
// command) and queues a job; it answers at once with both flags false,
// because LangBot holds the user's message until the event answer comes
// back. A worker then checks the chat's toggle (KV), that the sender is
// not the bot itself, the chat's rate limit, looks the items up through
// the per-installation cache (cards_state.go), and sends one message with
// every card of the message through the host's send_message, keyed by the
// event's query (or invocation) id so a redelivered event sends once.

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/go-github/v62/github"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// The events githubkit listens to: every message a chat receives.
const (
	eventPersonMessage = "PersonMessageReceived"
	EventGroupMessage  = "GroupMessageReceived"
)

// Card text limits, in runes.
const (
	cardTitleRunes = 100
	cardDescRunes  = 120
	cardLabels     = 3
	cardSweepEvery = time.Minute
	cardJobTimeout = 30 * time.Second
	// maxCardText bounds the text of a message that is read for links
	// (ParseLinks scans the first 8 KiB of it).
	maxCardText = 16 << 10
)

// Outcomes of a card job besides those of cards_state.go (metric labels).
const (
	cardSent     = "sent"
	cardFailed   = "failed"
	cardChatOff  = "chat_off"
	cardOwn      = "own_message"
	cardNoBot    = "bot_unknown"
	cardNoItem   = "no_item" // every link failed its lookup (not found, rate limit, ...)
	cardStoreErr = "store_error"
)

// cardFacts is what a card shows of one item: a few fields cut to size,
// so that a cache entry stays small whatever GitHub sent (a commit's
// patch, an issue's body are never kept).
type cardFacts struct {
	Kind     string
	Repo     string
	Number   int
	IsPR     bool
	State    string // open, closed, merged, draft
	Title    string
	Author   string
	Comments int
	Labels   []string
	Desc     string
	Stars    int
	Forks    int
	Lang     string
	Archived bool
	Tag      string
	Name     string
	Pre      bool
	Date     string // YYYY-MM-DD
	SHA      string // 7 hex
	Add, Del int
	URL      string
}

// cardJob is one message's cards, waiting for a worker.
type cardJob struct {
	sc     binding.Scope
	b      binding.Binding
	st     Settings
	chat   Identity
	sender string
	links  []events.Link
	idem   string
	link   trace.SpanContext
}

// cardEventData is what a message event carries that cards read.
type cardEventData struct {
	LauncherType string          `json:"launcher_type"`
	LauncherID   wire.ID         `json:"launcher_id"`
	SenderID     wire.ID         `json:"sender_id"`
	MessageChain json.RawMessage `json:"message_chain"`
	MessageEvent *struct {
		MessageChain json.RawMessage `json:"message_chain"`
	} `json:"message_event"`
}

// text returns the message's own words: its Plain components joined (a
// quoted message is another component, so links in a quote get no card).
func (d *cardEventData) text() string {
	chain := d.MessageChain
	if len(chain) == 0 || string(chain) == "null" {
		if d.MessageEvent != nil {
			chain = d.MessageEvent.MessageChain
		}
	}
	var comps []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(chain, &comps) != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range comps {
		if c.Type == "Plain" && b.Len()+len(c.Text) <= maxCardText {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// isCommand reports whether text is a gh command ("!gh repo <link>"): the
// command answers it, so a card would say the same twice.
func isCommand(text string) bool {
	s := strings.TrimLeftFunc(text, unicode.IsSpace)
	for i, r := range s {
		if i > 12 || unicode.IsSpace(r) {
			return false
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			w := s[i:]
			if j := strings.IndexFunc(w, unicode.IsSpace); j >= 0 {
				w = w[:j]
			}
			return i > 0 && strings.EqualFold(w, CommandWord)
		}
	}
	return false
}

// cards runs the card workers and holds their state.
type cards struct {
	s       *shared
	gh      *ghclient.GitHub
	state   *cardState
	outcome *prometheus.CounterVec
	lookups *prometheus.CounterVec

	// bg runs the workers and the sweep. Its Drain refuses new jobs and
	// wakes the workers; they finish the queued ones until Stop's ctx
	// ends, then their context is cancelled and Stop waits for them.
	bg   bus.Background
	quit chan struct{} // closed by Stop: the sweep ends
}

func newCards(s *shared, gh *ghclient.GitHub, lim CardLimits, reg prometheus.Registerer) (*cards, error) {
	c := &cards{s: s, gh: gh, state: newCardState(lim, s.now), quit: make(chan struct{}),
		outcome: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "githubkit_link_cards_total", Help: "Messages with GitHub links by card outcome.",
		}, []string{"outcome"}),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "githubkit_card_lookups_total", Help: "Card lookups by result (hit, revalidated, fetched, error).",
		}, []string{"result"}),
	}
	c.bg.CancelAtDeadline = true
	c.bg.Drain = c.drain
	if reg != nil {
		for _, m := range []prometheus.Collector{c.outcome, c.lookups} {
			if err := reg.Register(m); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// Start starts the workers and the sweep (bus.Part).
func (c *cards) Start(ctx context.Context) error {
	if err := c.bg.Start(ctx); err != nil {
		return err
	}
	for range c.state.lim.Workers {
		if err := c.bg.Go(c.work); err != nil {
			return err
		}
	}
	return c.bg.Go(c.sweep)
}

// sweep drops expired card state until Stop.
func (c *cards) sweep(ctx context.Context) {
	t := time.NewTicker(cardSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.quit:
			return
		case <-t.C:
			c.state.sweep()
		}
	}
}

// Stop refuses new jobs, lets the workers finish the queued ones until ctx
// ends, then cancels what still runs and waits (bus.Part).
func (c *cards) Stop(ctx context.Context) error { return c.bg.Stop(ctx) }

// drain refuses new jobs, ends the sweep and wakes the idle workers, which
// return once the queue is empty.
func (c *cards) drain(context.Context) error {
	c.state.mu.Lock()
	c.state.stop = true
	c.state.mu.Unlock()
	close(c.quit)
	for range c.state.lim.Workers {
		select {
		case c.state.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

func (c *cards) work(ctx context.Context) {
	for {
		if j, ok := c.state.next(); ok {
			c.run(ctx, j)
			continue
		}
		c.state.mu.Lock()
		stop := c.state.stop
		c.state.mu.Unlock()
		if stop {
			return
		}
		select {
		case <-c.state.wake:
		case <-ctx.Done():
			return
		}
	}
}

// run handles one job: the checks in order of cost, then the lookups and
// the send.
func (c *cards) run(parent context.Context, j *cardJob) {
	s := c.s
	ctx, cancel := context.WithTimeout(ghclient.WithInstallation(parent, j.sc.String()), cardJobTimeout)
	defer cancel()
	ctx, span := s.tracer.Start(ctx, "githubkit.cards", trace.WithLinks(trace.Link{SpanContext: j.link}),
		trace.WithAttributes(bus.AttrScope.String(j.sc.String()), attribute.Int("githubkit.links", len(j.links))))
	defer span.End()
	out := c.card(ctx, j)
	span.SetAttributes(attribute.String("githubkit.cards.outcome", out))
	c.outcome.WithLabelValues(out).Inc()
	s.log.DebugContext(ctx, "link cards", "scope", j.sc.String(), "outcome", out)
}

func (c *cards) card(ctx context.Context, j *cardJob) string {
	s := c.s
	off, err := chatCardsOff(ctx, s.runner.KV(), j.sc, j.chat)
	if err != nil {
		s.log.WarnContext(ctx, "link cards: chat setting unreadable", "scope", j.sc.String(), "error", err)
		return cardStoreErr
	}
	if off {
		return cardChatOff
	}
	account, ok := c.botAccount(ctx, j)
	if !ok {
		// without the bot's own id a card could answer the bot's own card
		return cardNoBot
	}
	if account != "" && account == j.sender {
		return cardOwn
	}
	links, limited := c.state.take(j.sc, httpserve.LimitKeyOf(j.chat.BotUUID, j.chat.TargetType, j.chat.TargetID), j.links)
	if len(links) == 0 {
		if limited {
			return cardLimited
		}
		return cardRepeat
	}
	x := s.texts(j.st.Language)
	t := ghclient.Target{BaseURL: j.st.APIURL, Token: j.st.Token}
	var parts []string
	for _, l := range links {
		f, err := c.lookup(ctx, j.sc, t, l)
		if err != nil {
			continue // a card says nothing about a link it cannot read
		}
		parts = append(parts, x.card(f))
	}
	if len(parts) == 0 {
		return cardNoItem
	}
	text := events.ChatSafe(strings.Join(parts, "\n\n"))
	sctx, cancel := context.WithTimeout(ctx, s.cfg.HostTimeout)
	defer cancel()
	err = s.runner.Host().SendMessage(sctx, j.b, wire.SendMessage{BotUUID: j.chat.BotUUID, TargetType: j.chat.TargetType,
		TargetID: j.chat.TargetID, MessageChain: wire.Plain(text)}, j.idem)
	if err != nil {
		return cardFailed
	}
	return cardSent
}

// botAccount returns the platform account id of the job's bot (cached;
// "" when the host names none). false when the host could not be asked.
func (c *cards) botAccount(ctx context.Context, j *cardJob) (string, bool) {
	if id, ok := c.state.account(j.sc, j.chat.BotUUID); ok {
		return id, true
	}
	hctx, cancel := context.WithTimeout(ctx, c.s.cfg.HostTimeout)
	defer cancel()
	info, err := c.s.runner.Host().BotInfo(hctx, j.b, j.chat.BotUUID)
	if err != nil {
		return "", false
	}
	id := ""
	switch v := info.AdapterRuntimeValues["bot_account_id"].(type) {
	case string:
		id = v
	case float64:
		id = strconv.FormatFloat(v, 'f', -1, 64)
	}
	c.state.setAccount(j.sc, j.chat.BotUUID, id)
	return id, true
}

// lookup answers a link from the installation's cache: fresh entries
// without a request, stale ones revalidated with their ETag (a 304 keeps
// them), misses fetched. A not-found item is cached too, so a pasted
// private link costs one request per TTL.
func (c *cards) lookup(ctx context.Context, sc binding.Scope, t ghclient.Target, l events.Link) (cardFacts, error) {
	key := httpserve.LimitKeyOf(t.BaseURL, t.Token, l.Key())
	e, ok, fresh := c.state.cached(sc, key)
	if ok && fresh {
		c.lookups.WithLabelValues("hit").Inc()
		if e.notFound {
			return cardFacts{}, &ghclient.APIError{Code: ghclient.CodeNotFound, Status: 404}
		}
		return e.facts, nil
	}
	cond := &ghclient.Conditional{}
	if ok && !e.notFound {
		cond.IfNoneMatch = e.etag
	}
	f, err := c.fetch(ghclient.WithConditional(ctx, cond), t, l)
	var ae *ghclient.APIError
	switch {
	case cond.NotModified && ok:
		c.lookups.WithLabelValues("revalidated").Inc()
		c.state.store(sc, e)
		return e.facts, nil
	case errors.As(err, &ae) && ae.Code == ghclient.CodeNotFound:
		c.lookups.WithLabelValues("fetched").Inc()
		c.state.store(sc, cacheEntry{key: key, notFound: true})
		return cardFacts{}, err
	case err != nil:
		c.lookups.WithLabelValues("error").Inc()
		return cardFacts{}, err
	}
	c.lookups.WithLabelValues("fetched").Inc()
	c.state.store(sc, cacheEntry{key: key, facts: f, etag: cond.ETag})
	return f, nil
}

// fetch reads one item from GitHub and keeps its card facts.
func (c *cards) fetch(ctx context.Context, t ghclient.Target, l events.Link) (cardFacts, error) {
	gh := c.gh
	f := cardFacts{Kind: l.Kind, Repo: l.Repo.String()}
	switch l.Kind {
	case events.LinkRepo:
		r, err := gh.Repo(ctx, t, l.Repo)
		if err != nil || r == nil {
			return f, err
		}
		if n := r.GetFullName(); n != "" {
			f.Repo = n
		}
		f.Desc = ghclient.Truncate(events.Clean(r.GetDescription()), cardDescRunes)
		f.Stars, f.Forks, f.Lang, f.Archived = r.GetStargazersCount(), r.GetForksCount(), events.Clean(r.GetLanguage()), r.GetArchived()
		f.URL = r.GetHTMLURL()
	case events.LinkIssue:
		is, err := gh.Issue(ctx, t, l.Repo, l.Number)
		if err != nil || is == nil {
			return f, err
		}
		f.Number, f.IsPR, f.State = is.GetNumber(), events.IsPullRequest(is), events.IssueState(is)
		if f.IsPR && f.State == "open" && is.GetDraft() {
			f.State = "draft"
		}
		f.Title = ghclient.Truncate(events.Clean(is.GetTitle()), cardTitleRunes)
		if is.User != nil {
			f.Author = events.Clean(is.User.GetLogin())
		}
		f.Comments = is.GetComments()
		for _, lb := range is.Labels {
			if n := events.Clean(lb.GetName()); n != "" && len(f.Labels) < cardLabels {
				f.Labels = append(f.Labels, n)
			}
		}
		f.URL = is.GetHTMLURL()
	case events.LinkRelease:
		r, err := gh.ReleaseByTag(ctx, t, l.Repo, l.Tag)
		if err != nil || r == nil {
			return f, err
		}
		f.Tag, f.Pre = ghclient.Truncate(events.Clean(r.GetTagName()), cardTitleRunes), r.GetPrerelease()
		if n := ghclient.Truncate(events.Clean(r.GetName()), cardTitleRunes); n != f.Tag {
			f.Name = n
		}
		if r.Author != nil {
			f.Author = events.Clean(r.Author.GetLogin())
		}
		f.Date = day(r.PublishedAt)
		f.URL = r.GetHTMLURL()
	case events.LinkCommit:
		cm, err := gh.Commit(ctx, t, l.Repo, l.SHA)
		if err != nil || cm == nil {
			return f, err
		}
		f.SHA = cm.GetSHA()
		if len(f.SHA) > 7 {
			f.SHA = f.SHA[:7]
		}
		if cm.Commit != nil {
			f.Title = ghclient.Truncate(ghclient.FirstLine(cm.Commit.GetMessage()), cardTitleRunes)
			if cm.Commit.Author != nil {
				f.Author = events.Clean(cm.Commit.Author.GetName())
				f.Date = day(cm.Commit.Author.Date)
			}
		}
		if cm.Author != nil && cm.Author.GetLogin() != "" {
			f.Author = events.Clean(cm.Author.GetLogin())
		}
		if cm.Stats != nil {
			f.Add, f.Del = cm.Stats.GetAdditions(), cm.Stats.GetDeletions()
		}
		f.URL = cm.GetHTMLURL()
	}
	return f, nil
}

func day(t *github.Timestamp) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02")
}

// card renders one item's card.
func (x texts) card(f cardFacts) string {
	or := func(s string) string {
		if s == "" {
			return x.Dash()
		}
		return s
	}
	url := or(events.Clean(f.URL))
	switch f.Kind {
	case events.LinkRepo:
		desc, lang, archived := "", "", ""
		if f.Desc != "" {
			desc = x.T("card.desc", "desc", f.Desc)
		}
		if f.Lang != "" {
			lang = x.T("card.lang", "lang", f.Lang)
		}
		if f.Archived {
			archived = x.T("card.archived")
		}
		return x.T("card.repo", "repo", f.Repo, "desc", desc, "stars", strconv.Itoa(f.Stars), "forks", strconv.Itoa(f.Forks),
			"lang", lang, "archived", archived, "url", url)
	case events.LinkIssue:
		emoji, kind := "📝", x.T("issue.kind_issue")
		if f.IsPR {
			emoji, kind = "🔀", x.T("issue.kind_pr")
		}
		state := or(f.State)
		switch f.State {
		case "open", "closed", "merged":
			state = x.T("state." + f.State)
		case "draft":
			state = x.T("card.draft")
		}
		comments := x.T("card.comments", "n", strconv.Itoa(f.Comments))
		switch f.Comments {
		case 0:
			comments = x.T("card.comments_none")
		case 1:
			comments = x.T("card.comments_one")
		}
		labels := ""
		if len(f.Labels) > 0 {
			labels = x.T("card.labels", "labels", x.Join(f.Labels))
		}
		return x.T("card.issue", "emoji", emoji, "repo", f.Repo, "number", strconv.Itoa(f.Number), "state", state,
			"title", or(f.Title), "kind", kind, "author", or(f.Author), "comments", comments, "labels", labels, "url", url)
	case events.LinkRelease:
		name, pre, date := "", "", ""
		if f.Name != "" {
			name = x.T("releases.name", "name", f.Name)
		}
		if f.Pre {
			pre = x.T("releases.prerelease")
		}
		if f.Date != "" {
			date = x.T("releases.date", "date", f.Date)
		}
		return x.T("card.release", "repo", f.Repo, "tag", or(f.Tag), "name", name, "pre", pre, "author", or(f.Author),
			"date", date, "url", url)
	case events.LinkCommit:
		date := ""
		if f.Date != "" {
			date = x.T("card.commit_date", "date", f.Date)
		}
		return x.T("card.commit", "repo", f.Repo, "sha", or(f.SHA), "title", or(f.Title), "author", or(f.Author),
			"additions", strconv.Itoa(f.Add), "deletions", strconv.Itoa(f.Del), "date", date, "url", url)
	}
	return url
}
