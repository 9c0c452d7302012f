package bus

import (
	"crypto/sha256"
	"sync"
)

// scopeShare caps the invocations one scope has queued or running in a
// runner (RunnerConfig.PerScope), so that one installation flooding a
// service cannot take the whole worker pool and queue from the others
// (issue 19, docs/reliability.md "Shared pools"). Counts are keyed by a
// SHA-256 of the subject's scope part, so a long subject costs no more
// memory than a short one, and an entry leaves the map with its last job:
// the map never holds more entries than jobs in the runner.
type scopeShare struct {
	cap int
	mu  sync.Mutex
	m   map[[32]byte]int
}

func newScopeShare(n int) *scopeShare { return &scopeShare{cap: n, m: make(map[[32]byte]int)} }

// take counts one job of key; false when key holds its cap already. A
// cap of 0 or less is no cap, and nothing is counted.
func (s *scopeShare) take(key [32]byte) bool {
	if s.cap <= 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[key] >= s.cap {
		return false
	}
	s.m[key]++
	return true
}

// give uncounts one job of key.
func (s *scopeShare) give(key [32]byte) {
	if s.cap <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[key] <= 1 {
		delete(s.m, key)
		return
	}
	s.m[key]--
}

// shareKey is the fairness key of an invocation subject: its scope, or the
// whole subject when it does not parse (the handler refuses it anyway).
func (r *Runner) shareKey(subject string) [32]byte {
	if _, _, sc, err := r.subjects.ParseInvocation(subject); err == nil {
		return sha256.Sum256([]byte(sc.String()))
	}
	return sha256.Sum256([]byte(subject))
}
