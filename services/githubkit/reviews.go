package githubkit

// Scheduled review reminders: a chat chooses times of day
// ("gh reviews 09:30 weekdays"), and at each one gets one message listing
// the open pull requests waiting for review in the repositories it
// subscribes to, oldest first. Nothing waiting sends nothing.
//
// Cost: reminders are stored per time of day, not per chat: the slot
// record <scope>.rslot.<HHMM> lists every chat of the installation that
// chose that minute, and has one JetStream schedule ("@at" the next
// occurrence in the installation's zone, re-armed after each fire, so it
// follows DST and survives restarts) on
// <prefix>.githubkit.rsched.<scope>.<HHMM> firing onto
// <prefix>.githubkit.review.<scope>.<HHMM>. One fire reads each
// repository any of its chats follows once (a conditional
// GET /pulls with the ETag kept in <scope>.pulls.<repo-key>), whatever the
// number of chats: one request per repository per reminder time.

import (
	"context"
	"errors"
	"fmt"
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

// Review reminder kinds and limits.
const (
	// KindReviewSched is the schedule of one reminder time:
	// <prefix>.githubkit.rsched.<scope>.<HHMM>.
	KindReviewSched = "rsched"
	// KindReviewFire is the subject it fires onto.
	KindReviewFire = "review"
	// ReviewConsumer is the durable consumer of fired reminders.
	ReviewConsumer = "githubkit-review"
	// kindReviewSlot is the key kind of a reminder time's chats.
	kindReviewSlot = "rslot"
	// kindPulls is a repository's open pull requests as last read.
	kindPulls = "pulls"
	// maxReviewTimes is how many times a day one chat may choose.
	maxReviewTimes = 4
	// maxChatsPerSlot caps the chats of one reminder time (one record).
	maxChatsPerSlot = 500
	// maxReviewList is how many pull requests one reminder lists.
	maxReviewList = 20
)

// reviewSlot is <scope>.rslot.<HHMM>: the chats reminded at one time of day.
type reviewSlot struct {
	V      int          `json:"v"`
	Minute int          `json:"minute"` // minutes after local midnight
	Chats  []reviewChat `json:"chats"`
}

// reviewChat is one chat of a slot.
type reviewChat struct {
	Identity
	Weekdays bool   `json:"weekdays"` // Monday to Friday only
	Prefix   string `json:"prefix"`
}

// pullsCache is <scope>.pulls.<repo-key>: the open pull requests waiting
// for review, with the ETag they were read with.
type pullsCache struct {
	V       int           `json:"v"`
	ETag    string        `json:"etag"`
	Waiting []waitingPull `json:"waiting"`
	Read    time.Time     `json:"read"`
}

// waitingPull is one open, non-draft pull request with a requested reviewer.
type waitingPull struct {
	Repo      string    `json:"repo"`
	Number    int       `json:"number"`
	Title     string    `json:"title"`
	URL       string    `json:"url"`
	Author    string    `json:"author"`
	CreatedAt time.Time `json:"created_at"`
	Reviewers []string  `json:"reviewers"`
}

// reviewReminders is "gh reviews" and the fired reminders.
type reviewReminders struct {
	*shared
	gh *ghclient.GitHub
}

func slots(kv *bus.KV) *bus.Records[reviewSlot] {
	return bus.NewRecords[reviewSlot](kv, kindReviewSlot, bus.RecordsConfig[reviewSlot]{})
}

func pullsStore(kv *bus.KV) *bus.Records[pullsCache] {
	return bus.NewRecords[pullsCache](kv, kindPulls, bus.RecordsConfig[pullsCache]{})
}

// slotID is the id of a time of day: "0930".
func slotID(minute int) string { return fmt.Sprintf("%02d%02d", minute/60, minute%60) }

// parseReviewTime reads "9:30", "09:30" or "9：30" (full-width colon) as
// minutes after midnight.
func parseReviewTime(s string) (int, bool) {
	s = strings.ReplaceAll(s, "：", ":")
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) < 1 || len(h) > 2 || len(m) != 2 {
		return 0, false
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 || strings.ContainsAny(h+m, "+-") {
		return 0, false
	}
	return hh*60 + mm, true
}

// nextReviewTime is the first instant after now that is minute past local
// midnight in loc (on a weekday when weekdays is set). A time a DST change
// skips is moved forward as time.Date does (02:30 becomes 03:30).
func nextReviewTime(now time.Time, loc *time.Location, minute int, weekdays bool) time.Time {
	l := now.In(loc)
	for d := 0; d < 9; d++ {
		c := time.Date(l.Year(), l.Month(), l.Day()+d, minute/60, minute%60, 0, 0, loc)
		if got := c.Hour()*60 + c.Minute(); got < minute && c.Day() == time.Date(l.Year(), l.Month(), l.Day()+d, 12, 0, 0, 0, loc).Day() {
			// a time the clocks skip: time.Date may give the hour
			// before the gap; the reminder comes as much later
			c = c.Add(time.Duration(minute-got) * time.Minute)
		}
		if weekdays && (c.Weekday() == time.Saturday || c.Weekday() == time.Sunday) {
			continue
		}
		if c.After(now) {
			return c
		}
	}
	return now.Add(24 * time.Hour) // unreachable: a week has weekdays
}

// armSlot schedules a slot's next fire after now: the earliest next time
// of its chats.
func (s *reviewReminders) armSlot(ctx context.Context, sc binding.Scope, st Settings, sl *reviewSlot, now time.Time) error {
	sched, fire, err := s.schedSubjectsOf(reviewFirings, sc, slotID(sl.Minute))
	if err != nil {
		return err
	}
	at := nextReviewTime(now, st.Zone, sl.Minute, true)
	for _, c := range sl.Chats {
		if !c.Weekdays {
			at = nextReviewTime(now, st.Zone, sl.Minute, false)
			break
		}
	}
	return bus.ScheduleAt(ctx, s.runner.JetStream(), sched, fire, at, []byte(`{"v":1}`))
}

func (s *reviewReminders) disarmSlot(ctx context.Context, sc binding.Scope, id string) error {
	return s.disarmOf(ctx, reviewFirings, sc, id)
}

// command is "gh reviews [<HH:MM>... [weekdays|daily] | off]".
func (s *reviewReminders) command(ctx context.Context, inv *bus.Invocation, st Settings, x texts, p events.Parsed, prefix string) (string, error) {
	id, ok := identity(inv.Command)
	if !ok {
		return x.T("err.no_bot"), nil
	}
	kv := s.runner.KV()
	sc := inv.Scope
	all, err := slots(kv).List(ctx, sc)
	if err != nil {
		return "", errStore(err)
	}
	mine := func() (times []string, weekdays bool) {
		for _, l := range all {
			if l.Value == nil {
				continue
			}
			for _, c := range l.Value.Chats {
				if c.Identity == id {
					times = append(times, fmt.Sprintf("%02d:%02d", l.Value.Minute/60, l.Value.Minute%60))
					weekdays = c.Weekdays
				}
			}
		}
		slices.Sort(times)
		return times, weekdays
	}
	if len(p.Args) == 0 {
		times, wd := mine()
		if len(times) == 0 {
			return x.T("reviews.none", "prefix", prefix), nil
		}
		return x.T("reviews.show", "times", strings.Join(times, ", "), "days", x.reviewDays(wd), "zone", st.Zone.String(), "prefix", prefix), nil
	}
	if st.SubscribeRequiresAdmin && inv.Command.Privilege < adminPrivilege {
		return x.T("err.admin_only"), nil
	}
	var minutes []int
	weekdays, off := false, false
	for _, a := range p.Args {
		switch strings.ToLower(a) {
		case "off", "关闭", "关":
			off = true
		case "weekdays", "workdays", "工作日":
			weekdays = true
		case "daily", "everyday", "每天":
			weekdays = false
		default:
			m, ok := parseReviewTime(a)
			if !ok {
				return x.T("reviews.usage", "prefix", prefix), nil
			}
			if !slices.Contains(minutes, m) {
				minutes = append(minutes, m)
			}
		}
	}
	if off == (len(minutes) > 0) {
		return x.T("reviews.usage", "prefix", prefix), nil
	}
	if len(minutes) > maxReviewTimes {
		return x.T("reviews.too_many", "max", strconv.Itoa(maxReviewTimes)), nil
	}
	// the chat leaves every slot it is in, then joins the chosen ones
	for _, l := range all {
		if l.Value == nil || !slices.ContainsFunc(l.Value.Chats, func(c reviewChat) bool { return c.Identity == id }) {
			continue
		}
		if err := s.leave(ctx, sc, st, l.ID, id); err != nil {
			return "", errStore(err)
		}
	}
	if off {
		return x.T("reviews.off"), nil
	}
	for _, m := range minutes {
		sl, _, err := slots(kv).Update(ctx, sc, func(cur *reviewSlot) (*reviewSlot, error) {
			if cur == nil {
				cur = &reviewSlot{V: 1, Minute: m}
			}
			cur.Chats = slices.DeleteFunc(cur.Chats, func(c reviewChat) bool { return c.Identity == id })
			if len(cur.Chats) >= maxChatsPerSlot {
				return nil, &errAbort{x.T("reviews.too_many_chats")}
			}
			cur.Chats = append(cur.Chats, reviewChat{Identity: id, Weekdays: weekdays, Prefix: prefix})
			return cur, nil
		}, slotID(m))
		var abort *errAbort
		if errors.As(err, &abort) {
			return abort.text, nil
		}
		if err != nil {
			return "", errStore(err)
		}
		if err := s.armSlot(ctx, sc, st, sl, s.now()); err != nil {
			return "", errStore(err)
		}
	}
	slices.Sort(minutes)
	var shown []string
	for _, m := range minutes {
		shown = append(shown, fmt.Sprintf("%02d:%02d", m/60, m%60))
	}
	return x.T("reviews.set", "times", strings.Join(shown, ", "), "days", x.reviewDays(weekdays), "zone", st.Zone.String(), "prefix", prefix), nil
}

// leave removes a chat from one slot; an emptied slot is deleted and its
// schedule cancelled.
func (s *reviewReminders) leave(ctx context.Context, sc binding.Scope, st Settings, id string, who Identity) error {
	kv := s.runner.KV()
	sl, _, err := slots(kv).Update(ctx, sc, func(cur *reviewSlot) (*reviewSlot, error) {
		if cur == nil {
			return nil, bus.ErrNoChange
		}
		n := len(cur.Chats)
		cur.Chats = slices.DeleteFunc(cur.Chats, func(c reviewChat) bool { return c.Identity == who })
		if len(cur.Chats) == n {
			return nil, bus.ErrNoChange
		}
		return cur, nil
	}, id)
	if err != nil {
		return err
	}
	if sl != nil && len(sl.Chats) > 0 {
		return s.armSlot(ctx, sc, st, sl, s.now())
	}
	if err := slots(kv).Purge(ctx, sc, id); err != nil {
		return err
	}
	return s.disarmSlot(ctx, sc, id)
}

func (x texts) reviewDays(weekdays bool) string {
	if weekdays {
		return x.T("reviews.weekdays")
	}
	return x.T("reviews.daily")
}

// handleFire handles one fired reminder time.
func (s *reviewReminders) handleFire(ctx context.Context, f *bus.Fired) {
	ctx = ghclient.WithInstallation(ctx, f.Scope.String())
	ctx, span := s.tracer.Start(ctx, "githubkit.reviews")
	defer span.End()
	if f.Kind != KindReviewFire || len(f.IDs) != 1 {
		_ = f.Term()
		return
	}
	if retry := s.fire(ctx, f.Scope, f.IDs[0], f.Published); retry {
		_ = f.Nak(5 * time.Second)
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = f.Ack(actx)
}

// fire sends one reminder time's messages and arms the next; retry asks
// for redelivery (the state store failed before anything was sent). fired
// is when the server fired it, by the server's clock.
func (s *reviewReminders) fire(ctx context.Context, sc binding.Scope, id string, fired time.Time) (retry bool) {
	kv := s.runner.KV()
	a, err := s.runner.Authority(ctx, sc)
	if err != nil {
		return true
	}
	if a == nil || a.State == bus.StateRemoved {
		_ = s.disarmSlot(ctx, sc, id)
		return false
	}
	sl, _, err := slots(kv).Get(ctx, sc, id)
	if err != nil {
		return true
	}
	if sl == nil || len(sl.Chats) == 0 {
		_ = s.disarmSlot(ctx, sc, id)
		return false
	}
	raw, err := s.runner.OpenConfig(sc, a)
	if err != nil {
		return false
	}
	st, _ := s.settings(raw)
	// the next occurrence is armed whatever happens to the sends: the
	// first a minute after both this service's clock and the server's
	// (the fire's time) passed this one. The server fires by its own
	// clock: one ahead of the service's fires early, and an occurrence
	// taken from the service's clock alone would be this same one, which
	// the server, having passed it, would fire again at once, in a loop.
	defer func() {
		from := s.now()
		if fired.After(from) {
			from = fired
		}
		if err := s.armSlot(context.WithoutCancel(ctx), sc, st, sl, from.Add(time.Minute)); err != nil {
			s.log.WarnContext(ctx, "reviews: next reminder not armed", "scope", sc.String(), "err", err)
		}
	}()
	if !a.Active() || st.APIErr != nil {
		return false
	}
	now := s.now()
	local := now.In(st.Zone)
	weekend := local.Weekday() == time.Saturday || local.Weekday() == time.Sunday
	var due []reviewChat
	for _, c := range sl.Chats {
		if !c.Weekdays || !weekend {
			due = append(due, c)
		}
	}
	if len(due) == 0 {
		return false
	}
	recs, err := listRecords(ctx, kv, sc)
	if err != nil {
		return true
	}
	orgRecs, err := orgStore(kv).List(ctx, sc)
	if err != nil {
		return true
	}
	// each repository is read once for every chat of the slot
	waiting := map[string][]waitingPull{}
	x := s.texts(st.Language)
	t := ghclient.Target{BaseURL: st.APIURL, Token: st.Token}
	day := local.Format("20060102")
	for _, c := range due {
		var list []waitingPull
		for _, r := range chatRepos(recs, orgRecs, c.Identity) {
			w, ok := waiting[r.Key]
			if !ok {
				w = s.waiting(ctx, sc, t, r)
				waiting[r.Key] = w
			}
			list = append(list, w...)
		}
		if len(list) == 0 {
			continue
		}
		slices.SortStableFunc(list, func(a, b waitingPull) int { return a.CreatedAt.Compare(b.CreatedAt) })
		text := x.reviewMessage(list, now)
		sctx, cancel := context.WithTimeout(ctx, s.cfg.HostTimeout)
		err := s.runner.Host().SendMessage(sctx, a.Binding, wire.SendMessage{
			BotUUID: c.BotUUID, TargetType: c.TargetType, TargetID: c.TargetID, MessageChain: wire.Plain(text),
		}, "githubkit:"+sc.String()+":reviews:"+id+":"+c.SID()+":"+day)
		cancel()
		if err != nil {
			s.log.WarnContext(ctx, "reviews: send failed", "scope", sc.String(), "err", err)
		}
	}
	return false
}

// chatRepos are the repositories a chat's reminder reads: those it
// subscribes to, then the repositories of the organisations it follows
// that the organisation's feed showed activity in (orgRecord.Repos), each
// once. An organisation repository is keyed like a subscribed one, so
// both share one read and one pulls cache.
func chatRepos(recs []*storedRecord, orgRecs []bus.Stored[orgRecord], id Identity) []*storedRecord {
	var out []*storedRecord
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Rec.Find(id) != nil && !seen[r.Key] {
			seen[r.Key] = true
			out = append(out, r)
		}
	}
	for _, o := range orgRecs {
		if o.Value == nil || o.Value.Find(id) == nil {
			continue
		}
		for _, name := range o.Value.Repos {
			k := RepoKey(name)
			if !seen[k] {
				seen[k] = true
				out = append(out, &storedRecord{Key: k, Rec: &RepoRecord{FullName: name}})
			}
		}
	}
	return out
}

// waiting reads one repository's pull requests waiting for review: a
// conditional request with the last ETag; on a failure, the last list.
func (s *reviewReminders) waiting(ctx context.Context, sc binding.Scope, t ghclient.Target, r *storedRecord) []waitingPull {
	kv := s.runner.KV()
	cache, _, err := pullsStore(kv).Get(ctx, sc, r.Key)
	if err != nil {
		cache = nil
	}
	etag := ""
	if cache != nil {
		etag = cache.ETag
	}
	page, err := s.gh.OpenPulls(ctx, t, r.Rec.FullName, etag)
	switch {
	case err != nil && cache != nil:
		return cache.Waiting
	case err != nil:
		return nil
	case page.NotModified && cache != nil:
		return cache.Waiting
	}
	var out []waitingPull
	for _, p := range page.Pulls {
		if p.Draft || (len(p.RequestedReviewers) == 0 && len(p.RequestedTeams) == 0) {
			continue
		}
		w := waitingPull{Repo: r.Rec.FullName, Number: p.Number, Title: clip(p.Title, 120), URL: p.HTMLURL, CreatedAt: p.CreatedAt}
		if p.User != nil {
			w.Author = p.User.Login
		}
		for _, rv := range p.RequestedReviewers {
			w.Reviewers = append(w.Reviewers, rv.Login)
		}
		for _, tm := range p.RequestedTeams {
			w.Reviewers = append(w.Reviewers, "@"+tm.Slug)
		}
		out = append(out, w)
	}
	c := &pullsCache{V: 1, ETag: page.ETag, Waiting: out, Read: s.now().UTC()}
	if _, _, err := pullsStore(kv).Update(ctx, sc, func(*pullsCache) (*pullsCache, error) { return c, nil }, r.Key); err != nil {
		s.log.WarnContext(ctx, "reviews: list not kept", "scope", sc.String(), "err", err)
	}
	return out
}

// reviewMessage is the reminder: a header, then one line per pull request,
// oldest first.
func (x texts) reviewMessage(list []waitingPull, now time.Time) string {
	lines := []string{x.T("reviews.header", "n", strconv.Itoa(len(list)))}
	for i, p := range list {
		if i == maxReviewList {
			lines = append(lines, x.T("reviews.more", "n", strconv.Itoa(len(list)-maxReviewList)))
			break
		}
		lines = append(lines, x.T("reviews.item", "repo", p.Repo, "n", strconv.Itoa(p.Number), "title", p.Title,
			"age", x.age(now.Sub(p.CreatedAt)), "author", p.Author, "reviewers", strings.Join(p.Reviewers, ", "), "url", p.URL))
	}
	return strings.Join(lines, "\n")
}

// age is a short duration: days, else hours, else minutes.
func (x texts) age(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		return x.T("age.days", "n", strconv.Itoa(int(d/(24*time.Hour))))
	case d >= time.Hour:
		return x.T("age.hours", "n", strconv.Itoa(int(d/time.Hour)))
	default:
		return x.T("age.minutes", "n", strconv.Itoa(max(int(d/time.Minute), 0)))
	}
}

// consumer is the durable consumer of fired reminder times.
func (s *reviewReminders) consumer() bus.Consumer {
	return bus.Consumer{FiredConfig: bus.FiredConfig{
		Stream: StreamName, Durable: ReviewConsumer, Filter: s.subj.InternalAll(Plugin, KindReviewFire),
		Workers: 4, AckWait: s.cfg.AckWait, MaxDeliver: 3, Timeout: s.cfg.PollDeadline,
	}, Handler: s.handleFire}
}

// clip cuts s to n runes, marking a cut with "…".
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
