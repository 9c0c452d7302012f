package takeover

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// botTTL is how long a bot's info is cached (spec §3.3 step 1).
const botTTL = 10 * time.Minute

// botInfo is what the service keeps about a bot.
type botInfo struct {
	name, adapter, accountID string
	at                       time.Time
	fetching                 bool
}

// botCache caches host get_bot_info per (scope, bot). A miss starts a
// background fetch and answers "" meanwhile; a failed fetch leaves "".
type botCache struct {
	host       *bus.Host
	background func(parent context.Context, f func(ctx context.Context)) // runs a fetch off the caller
	mu         sync.Mutex
	m          map[botKey]*botInfo
}

// botKey keys the cache by a hash of (scope, bot), so an entry costs the
// same whatever bot id an event carried.
type botKey [sha256.Size]byte

func keyOfBot(sc binding.Scope, bot string) botKey {
	return sha256.Sum256([]byte(sc.String() + "|" + bot))
}

// maxBots is the most entries the cache holds; past it the cache starts
// over (a refetch costs one host call per bot).
const maxBots = 100000

// entry returns key's entry, adding it (and starting over when the cache
// is full). c.mu is held.
func (c *botCache) entry(key botKey) *botInfo {
	e, ok := c.m[key]
	if !ok {
		if len(c.m) >= maxBots {
			clear(c.m)
		}
		e = &botInfo{}
		c.m[key] = e
	}
	return e
}

func newBotCache(host *bus.Host, background func(parent context.Context, f func(ctx context.Context))) *botCache {
	return &botCache{host: host, background: background, m: make(map[botKey]*botInfo)}
}

// lookup returns the cached info (zero when unknown) and starts a refresh
// when it is missing or old.
func (c *botCache) lookup(sc binding.Scope, b binding.Binding, bot string) botInfo {
	key := keyOfBot(sc, bot)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if ok && time.Since(e.at) < botTTL {
		return *e
	}
	e = c.entry(key)
	if !e.fetching {
		e.fetching = true
		c.background(context.Background(), func(ctx context.Context) { c.fetch(ctx, key, b, bot) })
	}
	return *e
}

// get returns the info, fetching it now on a miss (console reads, which may
// wait for the host).
func (c *botCache) get(ctx context.Context, sc binding.Scope, b binding.Binding, bot string) botInfo {
	key := keyOfBot(sc, bot)
	c.mu.Lock()
	e, ok := c.m[key]
	if ok && time.Since(e.at) < botTTL {
		defer c.mu.Unlock()
		return *e
	}
	c.mu.Unlock()
	c.fetch(ctx, key, b, bot)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		return *e
	}
	return botInfo{}
}

func (c *botCache) fetch(ctx context.Context, key botKey, b binding.Binding, bot string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.host.BotInfo(ctx, b, bot)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entry(key)
	e.fetching = false
	if err != nil {
		return
	}
	e.name, e.adapter, e.at = info.Name, info.Adapter, time.Now()
	if v, ok := info.AdapterRuntimeValues["bot_account_id"]; ok && v != nil {
		switch x := v.(type) {
		case float64:
			e.accountID = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			e.accountID = fmt.Sprint(x)
		}
	}
}
