package githubkit

// The push budget: webhook deliveries are pushed as they come,
// so 200 validly signed deliveries used to become 200 chat messages in a
// second. Each chat and each webhook has a token bucket; a message that
// finds either empty is held back and counted, and once SummaryAfter has
// passed since the first held one, the chat gets one message per
// repository saying how many events were held ("…and N more events").
// Nothing is dropped silently.
//
// The budget lives in the replica's memory, as the link cards' does: with
// N replicas a chat may get N times the budget, and the counts held when
// a replica crashes are lost (a clean stop sends them first).

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
)

// PushBudget bounds webhook pushes; zero fields take the defaults.
type PushBudget struct {
	// ChatBurst messages a chat takes at once, one more every ChatEvery;
	// default 10, one more every 6 s (ten a minute).
	ChatBurst int
	ChatEvery time.Duration
	// HookBurst deliveries one webhook pushes at once, one more every
	// HookEvery; default 30, one more every 2 s.
	HookBurst int
	HookEvery time.Duration
	// SummaryAfter is how long held events gather before their summary;
	// default 1 min.
	SummaryAfter time.Duration
	// Tick is how often summaries that are due are looked for; default 1 s.
	Tick time.Duration
}

func (b PushBudget) withDefaults() PushBudget {
	if b.ChatBurst <= 0 {
		b.ChatBurst = 10
	}
	if b.ChatEvery <= 0 {
		b.ChatEvery = 6 * time.Second
	}
	if b.HookBurst <= 0 {
		b.HookBurst = 30
	}
	if b.HookEvery <= 0 {
		b.HookEvery = 2 * time.Second
	}
	if b.SummaryAfter <= 0 {
		b.SummaryAfter = time.Minute
	}
	if b.Tick <= 0 {
		b.Tick = time.Second
	}
	return b
}

// maxPushKeys bounds the buckets and held summaries a replica keeps; past
// it, full buckets are swept, and a chat that finds no room is held
// without a bucket of its own (its events are counted in its summary).
const maxPushKeys = 10000

// bucket is a token bucket (the push budget's, and each chat's for link cards).
type bucket struct {
	tokens float64
	at     time.Time
}

// take refills b for now and takes a token if there is one.
func (b *bucket) take(now time.Time, burst int, every time.Duration) bool {
	b.refill(now, burst, every)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (b *bucket) refill(now time.Time, burst int, every time.Duration) {
	if el := now.Sub(b.at); el > 0 {
		b.tokens = min(float64(burst), b.tokens+float64(el)/float64(every))
	}
	b.at = now
}

// heldKey is one chat's held events of one repository.
type heldKey struct {
	scope binding.Scope
	chat  string // Subscriber.SID
	repo  string // repo record key
}

// held is what a summary says and where it goes.
type held struct {
	sub      Subscriber
	fullName string
	lang     string
	n        int
	due      time.Time
	first    time.Time // names the summary's idempotency key
}

// pushBudget is a replica's push budget: the chats' and webhooks' buckets
// and the held counts. Safe for concurrent use.
type pushBudget struct {
	lim   PushBudget
	now   func() time.Time
	mu    sync.Mutex
	chats map[string]*bucket // scope + chat SID
	hooks map[string]*bucket // scope + hook id
	held  map[heldKey]*held
}

func newPushBudget(lim PushBudget, now func() time.Time) *pushBudget {
	return &pushBudget{lim: lim.withDefaults(), now: now, chats: map[string]*bucket{}, hooks: map[string]*bucket{}, held: map[heldKey]*held{}}
}

// admit decides on one delivery's sends: it returns the sends within
// budget; the others are held and counted for their chat's summary. The
// webhook's bucket pays one token per delivery, each chat's one per
// message.
func (p *pushBudget) admit(sc binding.Scope, hookID, repoKey, fullName, lang string, sends []hookSend) (ok []hookSend, nHeld int) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	hk := sc.String() + "|" + hookID
	hb := p.bucketOf(p.hooks, hk, p.lim.HookBurst, now)
	hookOK := hb != nil && hb.take(now, p.lim.HookBurst, p.lim.HookEvery)
	for _, sd := range sends {
		if hookOK {
			if cb := p.bucketOf(p.chats, sc.String()+"|"+sd.sub.SID(), p.lim.ChatBurst, now); cb != nil && cb.take(now, p.lim.ChatBurst, p.lim.ChatEvery) {
				ok = append(ok, sd)
				continue
			}
		}
		k := heldKey{scope: sc, chat: sd.sub.SID(), repo: repoKey}
		h := p.held[k]
		if h == nil {
			h = &held{sub: *sd.sub, fullName: fullName, lang: lang, due: now.Add(p.lim.SummaryAfter), first: now}
			p.held[k] = h
		}
		h.n++
		nHeld++
	}
	return ok, nHeld
}

// bucketOf returns key's bucket, made full on first use; nil when the
// map is at its bound even after a sweep.
func (p *pushBudget) bucketOf(m map[string]*bucket, key string, burst int, now time.Time) *bucket {
	if b := m[key]; b != nil {
		return b
	}
	if len(m) >= maxPushKeys {
		p.sweepLocked(now)
		if len(m) >= maxPushKeys {
			return nil
		}
	}
	b := &bucket{tokens: float64(burst), at: now}
	m[key] = b
	return b
}

// sweepLocked drops the buckets that are full again: a new one is the same.
func (p *pushBudget) sweepLocked(now time.Time) {
	for k, b := range p.chats {
		if b.refill(now, p.lim.ChatBurst, p.lim.ChatEvery); b.tokens >= float64(p.lim.ChatBurst) {
			delete(p.chats, k)
		}
	}
	for k, b := range p.hooks {
		if b.refill(now, p.lim.HookBurst, p.lim.HookEvery); b.tokens >= float64(p.lim.HookBurst) {
			delete(p.hooks, k)
		}
	}
}

// due takes the summaries due at now (all of them with all set).
func (p *pushBudget) due(all bool) map[heldKey]*held {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[heldKey]*held{}
	for k, h := range p.held {
		if all || !now.Before(h.due) {
			out[k] = h
			delete(p.held, k)
		}
	}
	if len(out) > 0 || len(p.chats)+len(p.hooks) > maxPushKeys/2 {
		p.sweepLocked(now)
	}
	return out
}

// pushSummaries is the part that sends due summaries: a goroutine looking
// every Tick, stopped and awaited by Stop, which sends the held ones left.
type pushSummaries struct {
	s    *webhooks
	quit chan struct{}
	done chan struct{}
}

// Start starts the loop (bus.Part).
func (ps *pushSummaries) Start(ctx context.Context) error {
	ps.quit, ps.done = make(chan struct{}), make(chan struct{})
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(ps.done)
		t := time.NewTicker(ps.s.pushes.lim.Tick)
		defer t.Stop()
		for {
			select {
			case <-ps.quit:
				return
			case <-t.C:
				ps.s.sendSummaries(ctx, ps.s.pushes.due(false))
			}
		}
	}()
	return nil
}

// Stop ends the loop and sends every held summary, up to ctx (bus.Part).
func (ps *pushSummaries) Stop(ctx context.Context) error {
	if ps.quit == nil {
		return nil
	}
	close(ps.quit)
	<-ps.done
	ps.s.sendSummaries(ctx, ps.s.pushes.due(true))
	return nil
}

// sendSummaries sends each chat its summary under the installation's
// active authority; a summary that cannot be sent is counted and logged
// (the events it counts were acknowledged).
func (s *webhooks) sendSummaries(ctx context.Context, due map[heldKey]*held) {
	for k, h := range due {
		a, err := s.runner.Authority(ctx, k.scope)
		if err != nil || a == nil || !a.Active() {
			s.metrics.push.WithLabelValues("summary_failed").Inc()
			continue
		}
		x := s.texts(h.lang)
		text := x.T("push.header", "repo", events.ChatSafe(h.fullName)) + "\n" + x.T("push.held", "n", strconv.Itoa(h.n))
		sctx, cancel := context.WithTimeout(ctx, s.cfg.HostTimeout)
		err = s.runner.Host().SendMessage(sctx, a.Binding, wire.SendMessage{
			BotUUID: h.sub.BotUUID, TargetType: h.sub.TargetType, TargetID: h.sub.TargetID, MessageChain: wire.Plain(text),
		}, pushIdem(k.scope, k.repo, &h.sub, "held", strconv.FormatInt(h.first.UnixNano(), 10)))
		cancel()
		if err != nil {
			s.metrics.push.WithLabelValues("summary_failed").Inc()
			s.log.WarnContext(ctx, "webhook: held-events summary not sent", "scope", k.scope.String(), "err", err)
			continue
		}
		s.metrics.push.WithLabelValues("summary").Inc()
	}
}
