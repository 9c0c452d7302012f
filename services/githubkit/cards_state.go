package githubkit

// The in-process state behind link cards, one entry per installation:
// each chat's rate limit, the lookup cache, the bots' account ids and the
// card jobs waiting for a worker. Every map is bounded, keyed by
// fixed-size hashes (a chat id or a link costs the same whatever its
// length) and swept; a full map refuses only its own installation's new
// entries, so one installation never takes another's room.

import (
	"container/list"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/services/githubkit/events"
)

// CardLimits bound link cards (docs/githubkit.md, "Link cards"). The zero
// value means the defaults.
type CardLimits struct {
	// Workers is the number of card jobs handled at once; default 4.
	Workers int
	// Burst is how many cards a chat gets at once; default 6.
	Burst int
	// Every is how long a chat waits for one more card once its burst is
	// spent; default 10 s.
	Every time.Duration
	// RepeatWindow is how long the same link in the same chat gets no
	// second card; default 10 min.
	RepeatWindow time.Duration
	// CacheTTL is how long a looked-up item is answered from the cache
	// without asking GitHub; after it the item is revalidated with its
	// ETag. Default 2 min.
	CacheTTL time.Duration
	// CacheEntries is the most items one installation's cache holds (least
	// recently used first out); default 256.
	CacheEntries int
	// QueuePerInstallation is the most messages of one installation waiting
	// for a worker; default 8.
	QueuePerInstallation int
}

// Bounds of the per-installation maps (not settings: they only bound
// memory; a full one refuses its own installation's newcomers).
const (
	maxCardInstallations = 100000
	maxCardChats         = 4096 // per installation
	maxCardBots          = 64   // per installation
	recentLinks          = 8    // link keys a chat remembers for RepeatWindow
	botAccountTTL        = 10 * time.Minute
)

func (l CardLimits) withDefaults() CardLimits {
	if l.Workers <= 0 {
		l.Workers = 4
	}
	if l.Burst <= 0 {
		l.Burst = 6
	}
	if l.Every <= 0 {
		l.Every = 10 * time.Second
	}
	if l.RepeatWindow <= 0 {
		l.RepeatWindow = 10 * time.Minute
	}
	if l.CacheTTL <= 0 {
		l.CacheTTL = 2 * time.Minute
	}
	if l.CacheEntries <= 0 {
		l.CacheEntries = 256
	}
	if l.QueuePerInstallation <= 0 {
		l.QueuePerInstallation = 8
	}
	return l
}

// chatBucket is one chat's token bucket and the links it got cards for.
type chatBucket struct {
	bucket // tokens, and when they were last computed
	recent [recentLinks]struct {
		key httpserve.LimitKey
		at  time.Time
	}
	next int // ring index into recent
}

// botAccount is a bot's platform account id as the host reported it.
type botAccount struct {
	id string
	at time.Time
}

// cacheEntry is one looked-up item: its card facts (or "not found"), the
// ETag to revalidate it with, and until when it is fresh.
type cacheEntry struct {
	key      httpserve.LimitKey
	facts    cardFacts
	notFound bool
	etag     string
	fresh    time.Time
}

// instCards is one installation's card state.
type instCards struct {
	chats   map[httpserve.LimitKey]*chatBucket
	bots    map[httpserve.LimitKey]botAccount
	entries map[httpserve.LimitKey]*list.Element // of *cacheEntry
	lru     *list.List                           // front = most recently used
	queue   []*cardJob
	ready   bool // in cardState.ready
}

func (in *instCards) idle() bool {
	return len(in.chats) == 0 && len(in.bots) == 0 && in.lru.Len() == 0 && len(in.queue) == 0
}

// cardState holds every installation's card state under one lock; the
// lock is never held across I/O.
type cardState struct {
	lim  CardLimits
	now  func() time.Time
	mu   sync.Mutex
	inst map[httpserve.LimitKey]*instCards
	// ready lists the installations with queued jobs, served round robin
	// so that one installation's burst delays another's by one job at most.
	ready []httpserve.LimitKey
	wake  chan struct{}
	stop  bool
}

func newCardState(lim CardLimits, now func() time.Time) *cardState {
	lim = lim.withDefaults()
	return &cardState{lim: lim, now: now, inst: make(map[httpserve.LimitKey]*instCards), wake: make(chan struct{}, lim.Workers)}
}

func scopeKey(sc binding.Scope) httpserve.LimitKey { return httpserve.LimitKeyOf(sc.String()) }

// of returns sc's state, creating it; nil when the service already holds
// maxCardInstallations others. s.mu is held.
func (s *cardState) of(sk httpserve.LimitKey) *instCards {
	in := s.inst[sk]
	if in == nil {
		if len(s.inst) >= maxCardInstallations {
			return nil
		}
		in = &instCards{chats: map[httpserve.LimitKey]*chatBucket{}, bots: map[httpserve.LimitKey]botAccount{}, entries: map[httpserve.LimitKey]*list.Element{}, lru: list.New()}
		s.inst[sk] = in
	}
	return in
}

// Outcomes of enqueue and take, also metric labels.
const (
	cardQueued  = "queued"
	cardDropped = "dropped" // the installation's queue is full, or the service stops
	cardLimited = "limited"
	cardRepeat  = "repeat"
)

// enqueue queues a job behind sc's others and wakes a worker.
func (s *cardState) enqueue(j *cardJob) string {
	sk := scopeKey(j.sc)
	s.mu.Lock()
	in := s.of(sk)
	if s.stop || in == nil || len(in.queue) >= s.lim.QueuePerInstallation {
		s.mu.Unlock()
		return cardDropped
	}
	in.queue = append(in.queue, j)
	if !in.ready {
		in.ready = true
		s.ready = append(s.ready, sk)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // every worker has a wake-up pending already
	}
	return cardQueued
}

// next takes the next job, round robin over installations; false when
// none waits.
func (s *cardState) next() (*cardJob, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.ready) > 0 {
		sk := s.ready[0]
		s.ready = s.ready[1:]
		in := s.inst[sk]
		if in == nil || len(in.queue) == 0 {
			if in != nil {
				in.ready = false
			}
			continue
		}
		j := in.queue[0]
		in.queue[0] = nil
		in.queue = in.queue[1:]
		if len(in.queue) > 0 {
			s.ready = append(s.ready, sk)
		} else {
			in.ready = false
		}
		return j, true
	}
	return nil, false
}

// take spends one token of chat for each link not carded there within the
// repeat window, and returns the links that get a card. limited reports
// whether the rate limit (not a repeat) held a link back.
func (s *cardState) take(sc binding.Scope, chat httpserve.LimitKey, links []events.Link) (out []events.Link, limited bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.of(scopeKey(sc))
	if in == nil {
		return nil, true
	}
	b := in.chats[chat]
	if b == nil {
		if len(in.chats) >= maxCardChats {
			s.sweepInst(in, now)
		}
		if len(in.chats) >= maxCardChats {
			return nil, true
		}
		b = &chatBucket{bucket: bucket{tokens: float64(s.lim.Burst), at: now}}
		in.chats[chat] = b
	}
	b.refill(now, s.lim.Burst, s.lim.Every)
	for _, l := range links {
		k := httpserve.LimitKeyOf(l.Key())
		if b.seen(k, now, s.lim.RepeatWindow) {
			continue
		}
		if b.tokens < 1 {
			limited = true
			continue
		}
		b.tokens--
		b.recent[b.next].key, b.recent[b.next].at = k, now
		b.next = (b.next + 1) % recentLinks
		out = append(out, l)
	}
	return out, limited
}

func (b *chatBucket) seen(k httpserve.LimitKey, now time.Time, window time.Duration) bool {
	for _, r := range b.recent {
		if r.key == k && !r.at.IsZero() && now.Sub(r.at) < window {
			return true
		}
	}
	return false
}

// account returns a bot's cached account id.
func (s *cardState) account(sc binding.Scope, bot string) (string, bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.inst[scopeKey(sc)]
	if in == nil {
		return "", false
	}
	a, ok := in.bots[httpserve.LimitKeyOf(bot)]
	if !ok || now.Sub(a.at) >= botAccountTTL {
		return "", false
	}
	return a.id, true
}

func (s *cardState) setAccount(sc binding.Scope, bot, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.of(scopeKey(sc))
	if in == nil {
		return
	}
	if len(in.bots) >= maxCardBots {
		clear(in.bots) // a refetch costs one host call per bot
	}
	in.bots[httpserve.LimitKeyOf(bot)] = botAccount{id: id, at: s.now()}
}

// cached returns the entry of key: fresh reports whether it may be used
// without asking GitHub; a stale entry still gives its ETag.
func (s *cardState) cached(sc binding.Scope, key httpserve.LimitKey) (e cacheEntry, ok, fresh bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.inst[scopeKey(sc)]
	if in == nil {
		return cacheEntry{}, false, false
	}
	el, ok := in.entries[key]
	if !ok {
		return cacheEntry{}, false, false
	}
	in.lru.MoveToFront(el)
	e = *el.Value.(*cacheEntry)
	return e, true, now.Before(e.fresh)
}

// store puts an entry, fresh for the TTL, evicting the least recently used
// one of the installation when its cache is full.
func (s *cardState) store(sc binding.Scope, e cacheEntry) {
	e.fresh = s.now().Add(s.lim.CacheTTL)
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.of(scopeKey(sc))
	if in == nil {
		return
	}
	if el, ok := in.entries[e.key]; ok {
		*el.Value.(*cacheEntry) = e
		in.lru.MoveToFront(el)
		return
	}
	for in.lru.Len() >= s.lim.CacheEntries {
		old := in.lru.Back()
		delete(in.entries, old.Value.(*cacheEntry).key)
		in.lru.Remove(old)
	}
	in.entries[e.key] = in.lru.PushFront(&e)
}

// sweep drops what no longer matters: chats whose bucket is full again and
// that remember no recent link, bots past their TTL, cache entries long
// stale (a stale entry is kept a while for its ETag), and installations
// left with nothing.
func (s *cardState) sweep() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for sk, in := range s.inst {
		s.sweepInst(in, now)
		if in.idle() {
			delete(s.inst, sk)
		}
	}
}

// staleKeep is how long past its TTL a cache entry stays for its ETag.
const staleKeep = 10

func (s *cardState) sweepInst(in *instCards, now time.Time) {
	refill := time.Duration(s.lim.Burst) * s.lim.Every
	for k, b := range in.chats {
		if now.Sub(b.at) < refill {
			continue
		}
		recent := false
		for _, r := range b.recent {
			if !r.at.IsZero() && now.Sub(r.at) < s.lim.RepeatWindow {
				recent = true
			}
		}
		if !recent {
			delete(in.chats, k)
		}
	}
	for k, a := range in.bots {
		if now.Sub(a.at) >= botAccountTTL {
			delete(in.bots, k)
		}
	}
	for el := in.lru.Back(); el != nil; {
		prev := el.Prev()
		e := el.Value.(*cacheEntry)
		if now.Sub(e.fresh) > staleKeep*s.lim.CacheTTL {
			delete(in.entries, e.key)
			in.lru.Remove(el)
		}
		el = prev
	}
}

// sizes reports the number of installations and, for sc, its chats and
// cache entries (tests).
func (s *cardState) sizes(sc binding.Scope) (installations, chats, entries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in := s.inst[scopeKey(sc)]; in != nil {
		chats, entries = len(in.chats), in.lru.Len()
	}
	return len(s.inst), chats, entries
}
