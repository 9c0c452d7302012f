package takeover

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

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
	m          map[string]*botInfo
}

func newBotCache(host *bus.Host, background func(parent context.Context, f func(ctx context.Context))) *botCache {
	return &botCache{host: host, background: background, m: make(map[string]*botInfo)}
}

// lookup returns the cached info (zero when unknown) and starts a refresh
// when it is missing or old.
func (c *botCache) lookup(sc binding.Scope, b binding.Binding, bot string) botInfo {
	key := sc.String() + "|" + bot
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if ok && time.Since(e.at) < botTTL {
		return *e
	}
	if !ok {
		if len(c.m) > 100000 {
			clear(c.m)
		}
		e = &botInfo{}
		c.m[key] = e
	}
	if !e.fetching {
		e.fetching = true
		c.background(context.Background(), func(ctx context.Context) { c.fetch(ctx, key, b, bot) })
	}
	return *e
}

// get returns the info, fetching it now on a miss (console reads, which may
// wait for the host).
func (c *botCache) get(ctx context.Context, sc binding.Scope, b binding.Binding, bot string) botInfo {
	key := sc.String() + "|" + bot
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

func (c *botCache) fetch(ctx context.Context, key string, b binding.Binding, bot string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.host.BotInfo(ctx, b, bot)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		e = &botInfo{}
		c.m[key] = e
	}
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

// goBackground runs f on a goroutine the service owns and waits for at
// shutdown. f's ctx is cancelled when the service stops.
func (s *Service) goBackground(parent context.Context, f func(ctx context.Context)) {
	ctx := s.runCtx
	if ctx == nil {
		ctx = context.Background()
	}
	// the work outlives the request but stays in its trace
	ctx = trace.ContextWithSpanContext(ctx, trace.SpanContextFromContext(parent))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f(ctx)
	}()
}
