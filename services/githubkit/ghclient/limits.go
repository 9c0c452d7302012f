package ghclient

import (
	"context"
	"crypto/sha256"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Codes of calls refused before they reach GitHub by the shared-pool
// limits: the installation or the upstream host has its in-flight cap
// taken, or the host's circuit breaker is open.
const (
	CodeBusy        = "busy"
	CodeUnavailable = "unavailable"
)

// Limits bound what one installation and one upstream host may hold of the
// shared worker pool (docs/reliability.md, "Shared pools"). The zero value
// means the defaults.
type Limits struct {
	// PerInstallation is the number of GitHub calls of one installation in
	// flight at once; default 4. As many more may wait for a slot.
	PerInstallation int
	// PerHost is the number of GitHub calls to one API host in flight at
	// once, all installations together; default 32.
	PerHost int
	// SlotWait is how long a call waits for a free slot before it is
	// answered CodeBusy; default 2 s.
	SlotWait time.Duration
	// BreakerFailures is the number of consecutive network failures, 5xx
	// answers or timeouts of one host that open its breaker; default 5.
	BreakerFailures int
	// BreakerCooldown is how long an open breaker refuses calls before one
	// probe is let through; default 30 s.
	BreakerCooldown time.Duration
	// OtherHostTimeout bounds one call to a host other than the default
	// API host (Config.DefaultAPIURL); default 10 s (never above the
	// GitHub timeout).
	OtherHostTimeout time.Duration
}

// maxBreakers bounds the hosts whose failures are remembered; a host that
// answers is forgotten at once, so only failing hosts occupy the map.
const maxBreakers = 10000

func (l Limits) withDefaults() Limits {
	if l.PerInstallation <= 0 {
		l.PerInstallation = 4
	}
	if l.PerHost <= 0 {
		l.PerHost = 32
	}
	if l.SlotWait <= 0 {
		l.SlotWait = 2 * time.Second
	}
	if l.BreakerFailures <= 0 {
		l.BreakerFailures = 5
	}
	if l.BreakerCooldown <= 0 {
		l.BreakerCooldown = 30 * time.Second
	}
	if l.OtherHostTimeout <= 0 {
		l.OtherHostTimeout = 10 * time.Second
	}
	return l
}

// installationKey carries the calling installation's scope to GitHub.do.
type installationKey struct{}

// WithInstallation marks ctx as working for the installation named by
// scope (a scope's string); calls without one share the key of "".
func WithInstallation(ctx context.Context, scope string) context.Context {
	return context.WithValue(ctx, installationKey{}, scope)
}

func installationOf(ctx context.Context) string {
	s, _ := ctx.Value(installationKey{}).(string)
	return s
}

// digest keys every map by a fixed-size value: a long scope or host name
// costs no more memory than a short one.
type digest [32]byte

func digestOf(kind, s string) digest { return sha256.Sum256([]byte(kind + "\x00" + s)) }

// slotSet is one key's semaphore; refs counts holders and waiters, and the
// entry leaves the map when it drops to zero, so the map holds at most as
// many entries as calls in progress.
type slotSet struct {
	ch      chan struct{}
	refs    int
	waiting int
}

// breaker is one host's circuit (closed, open until, half-open probing).
type breaker struct {
	failures  int
	openUntil time.Time
	probing   bool
}

// limiter holds the caps and breakers of one GitHub access layer.
type limiter struct {
	cfg         Limits
	defaultHost string
	now         func() time.Time

	mu       sync.Mutex
	slots    map[digest]*slotSet
	breakers map[digest]*breaker
}

func newLimiter(cfg Limits, defaultAPIURL string, now func() time.Time) *limiter {
	host := ""
	if u, err := url.Parse(defaultAPIURL); err == nil {
		host = strings.ToLower(u.Host)
	}
	return &limiter{cfg: cfg.withDefaults(), defaultHost: host, now: now,
		slots: make(map[digest]*slotSet), breakers: make(map[digest]*breaker)}
}

func hostOf(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host)
}

// timeout is the bound of one call to host.
func (l *limiter) timeout(host string, def time.Duration) time.Duration {
	if host == l.defaultHost {
		return def
	}
	return min(def, l.cfg.OtherHostTimeout)
}

// acquire takes one slot of key (capacity n), waiting at most SlotWait; at
// most n callers wait per key, the others are refused at once, so a
// flooding installation holds at most 2n workers of the shared pool.
func (l *limiter) acquire(ctx context.Context, key digest, n int) (func(), bool) {
	l.mu.Lock()
	s := l.slots[key]
	if s == nil {
		s = &slotSet{ch: make(chan struct{}, n)}
		l.slots[key] = s
	}
	select {
	case s.ch <- struct{}{}:
		s.refs++
		l.mu.Unlock()
		return func() { l.release(key, s) }, true
	default:
	}
	if s.waiting >= n {
		l.mu.Unlock()
		return nil, false
	}
	s.waiting++
	s.refs++
	l.mu.Unlock()
	t := time.NewTimer(l.cfg.SlotWait)
	defer t.Stop()
	ok := false
	select {
	case s.ch <- struct{}{}:
		ok = true
	case <-t.C:
	case <-ctx.Done():
	}
	l.mu.Lock()
	s.waiting--
	l.mu.Unlock()
	if !ok {
		l.unref(key, s)
		return nil, false
	}
	return func() { l.release(key, s) }, true
}

func (l *limiter) release(key digest, s *slotSet) {
	<-s.ch
	l.unref(key, s)
}

func (l *limiter) unref(key digest, s *slotSet) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.refs--
	if s.refs == 0 && l.slots[key] == s {
		delete(l.slots, key)
	}
}

// admit asks the host's breaker whether a call may go; probe is true for
// the one call let through after the cool-down.
func (l *limiter) admit(host digest) (ok, probe bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.breakers[host]
	if b == nil || b.failures < l.cfg.BreakerFailures {
		return true, false
	}
	if b.probing || l.now().Before(b.openUntil) {
		return false, false
	}
	b.probing = true
	return true, true
}

// record feeds one call's outcome to the host's breaker: a host that
// answers is forgotten; a failure counts, and the Nth (or a failed probe)
// opens the breaker for the cool-down.
func (l *limiter) record(host digest, failed, probe bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.breakers[host]
	if !failed {
		delete(l.breakers, host)
		return
	}
	if b == nil {
		if len(l.breakers) >= maxBreakers {
			return // full of failing hosts: this one is not tracked
		}
		b = &breaker{}
		l.breakers[host] = b
	}
	if probe {
		b.probing = false
	}
	b.failures++
	if b.failures >= l.cfg.BreakerFailures {
		b.openUntil = l.now().Add(l.cfg.BreakerCooldown)
	}
}

// breakerFailure reports whether err counts against the host: no answer
// (network, timeout) or a 5xx. Client errors and rate limits are answers.
func breakerFailure(err error) bool {
	ae, ok := err.(*APIError)
	if !ok || err == nil {
		return false
	}
	return ae.Code == CodeNetwork || (ae.Code == CodeUpstream && ae.Status >= 500)
}

// guard runs call under the installation and host caps and the host's
// breaker; it is GitHub.do's gate.
func (l *limiter) guard(ctx context.Context, baseURL string, call func(time.Duration) error, def time.Duration) error {
	host := hostOf(baseURL)
	hk := digestOf("host", host)
	ok, probe := l.admit(hk)
	if !ok {
		return &APIError{Code: CodeUnavailable}
	}
	relI, ok := l.acquire(ctx, digestOf("installation", installationOf(ctx)), l.cfg.PerInstallation)
	if !ok {
		l.unprobe(hk, probe)
		return &APIError{Code: CodeBusy}
	}
	defer relI()
	relH, ok := l.acquire(ctx, hk, l.cfg.PerHost)
	if !ok {
		l.unprobe(hk, probe)
		return &APIError{Code: CodeBusy}
	}
	defer relH()
	err := call(l.timeout(host, def))
	l.record(hk, breakerFailure(err), probe)
	return err
}

// unprobe gives the probe back when the call never went out.
func (l *limiter) unprobe(host digest, probe bool) {
	if !probe {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.breakers[host]; b != nil {
		b.probing = false
	}
}
