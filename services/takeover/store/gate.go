package store

import (
	"math"
	"strings"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// The event gate's part of the view (docs/protocol.md, "Event gate"): which
// chats of a scope are watched, so the package may let every other chat's
// events pass without waiting for a decision.

// mark is why a session makes its chat watched: a takeover or a waiting
// satisfaction question until a time (ms), an unread flag (a cancel word
// would be answered), or a record too broken to say which chat it is.
type mark struct {
	launcher [2]string // launcher type and id
	until    int64
	unread   bool
	corrupt  bool
}

// markOf returns the mark of an entry, and whether it has one.
func markOf(e ViewEntry) (mark, bool) {
	h := e.Head
	if h == nil {
		return mark{}, false
	}
	if e.Corrupt {
		return mark{corrupt: true, until: math.MaxInt64}, true
	}
	m := mark{launcher: [2]string{h.Type, h.TargetID}, unread: h.Unread}
	if h.Takeover.Active {
		m.until = h.Takeover.ExpiresAt
	}
	if s := h.Satisfaction; s != nil && s.Score == 0 {
		m.until = max(m.until, s.Until)
	}
	return m, m.until > 0 || m.unread
}

// watchedAt reports whether m watches its chat at now.
func (m mark) watchedAt(now int64) bool { return m.corrupt || m.unread || now < m.until }

// setMark records e's mark for key of scope (under v.mu) and reports
// whether the chat became watched at the gate's now: a quiet or unknown
// session now watched. Nothing is reported before the view is loaded
// (its replay is not news) or without WatchGate.
func (v *View) setMark(scope, key string, e ViewEntry) bool {
	old, had := v.marks[scope][key]
	m, ok := markOf(e)
	switch {
	case ok && v.marks[scope] == nil:
		v.marks[scope] = map[string]mark{key: m}
	case ok:
		v.marks[scope][key] = m
	case had:
		delete(v.marks[scope], key)
		if len(v.marks[scope]) == 0 {
			delete(v.marks, scope)
		}
	}
	if !ok || v.gateNow == nil || !v.initialized.Load() {
		return false
	}
	now := v.gateNow()
	return m.watchedAt(now) && (!had || !old.watchedAt(now) || old.launcher != m.launcher || (m.unread && !old.unread))
}

// WatchGate turns on the event gate's revocations: revoke is called with a
// scope (its string) whenever one of its chats becomes watched, and now
// is the clock of those decisions (ms). It is called outside the view's
// lock, from the consumer's goroutine or a writer's, and must not block.
func (v *View) WatchGate(now func() int64, revoke func(scope string)) {
	v.mu.Lock()
	v.gateNow, v.revoke = now, revoke
	v.mu.Unlock()
}

// Watched returns the chats of sc watched at now, as launcher type and id
// pairs (unread ones only when withUnread), and false when the view cannot
// give a gate: not live, a pending takeover not yet stored, a broken
// record, or more than limit chats.
func (v *View) Watched(sc binding.Scope, now int64, withUnread bool, limit int) ([][2]string, bool) {
	if !v.Live() {
		return nil, false
	}
	scope := sc.String()
	v.mu.RLock()
	defer v.mu.RUnlock()
	for k, exp := range v.pending {
		if now < exp && strings.HasPrefix(k, scope+".") {
			return nil, false
		}
	}
	seen := make(map[[2]string]bool)
	out := [][2]string{}
	for _, m := range v.marks[scope] {
		if m.corrupt {
			return nil, false
		}
		if !(now < m.until || (withUnread && m.unread)) || seen[m.launcher] {
			continue
		}
		if len(out) == limit {
			return nil, false
		}
		seen[m.launcher] = true
		out = append(out, m.launcher)
	}
	return out, true
}
