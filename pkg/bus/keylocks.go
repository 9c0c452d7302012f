package bus

import (
	"context"
	"sync"
)

// KeyLocks serialise one replica's work per key (an installation, a
// session), so that concurrent writers of one record take turns instead of
// exhausting each other's compare-and-set retries; other replicas still
// race by CAS. A lock is a map entry only while someone holds or waits for
// it, so the map never holds more entries than callers. The zero value is
// ready to use; a KeyLocks must not be copied after first use.
type KeyLocks[K comparable] struct {
	mu sync.Mutex
	m  map[K]*keyLock
}

// keyLock is one key's lock: a token in ch while it is held.
type keyLock struct {
	ch   chan struct{}
	refs int // holders and waiters
}

// Lock waits for key's lock and returns its unlock, or gives up with ctx's
// error (and then holds nothing).
func (l *KeyLocks[K]) Lock(ctx context.Context, key K) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[K]*keyLock{}
	}
	k := l.m[key]
	if k == nil {
		k = &keyLock{ch: make(chan struct{}, 1)}
		l.m[key] = k
	}
	k.refs++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if k.refs--; k.refs == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
	select {
	case k.ch <- struct{}{}:
		return func() { <-k.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// held returns how many keys have a holder or a waiter (for tests).
func (l *KeyLocks[K]) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
