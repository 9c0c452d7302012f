package bus

import (
	"strings"
	"sync"
)

// fairQueue holds the invocations waiting for a worker, one FIFO per
// installation scope, and hands them out round robin across the scopes
// that have work waiting (docs/reliability.md "Shared pools"): a
// flooding installation's backlog never sits in front of another
// installation's request, yet an installation alone may use every worker.
// The schedule is that of fq_codel's two lists: a scope that held nothing
// (no job waiting or running) joins the "new" list and is served before the scopes of the
// "old" list, which hold a backlog; after one job a scope with more
// waiting goes to the tail of the old list. So a request of an
// installation with nothing waiting is taken by the next free worker,
// whatever another installation has queued.
//
// Bounds, each checked before anything changes: jobs held (waiting or
// running: counting the running ones makes a burst's admission independent
// of how fast the workers wake) in all and per scope, body bytes held in
// all and per scope. Every operation is O(1): a map
// lookup and list links, never a walk over the scopes. A scope leaves the
// map when its last job is done, so the map never holds more entries than
// jobs held (at most Workers+Queue); drained entries are kept on a short
// free list so a steady stream of one installation allocates nothing.
//
// The fired-message pools (ConsumeFired) also cap the jobs of one scope
// running at once (scopeRun): a scope at its cap leaves the lists while
// its jobs run and rejoins the old list when one is done, so its waiting
// jobs never take a worker another scope could use. The invocation intake
// sets no such cap (0).
type fairQueue struct {
	mu       sync.Mutex
	scopes   map[string]*scopeQueue
	new, old scopeList
	free     *scopeQueue // drained entries for reuse, linked by next
	nfree    int
	waiting  int // jobs waiting, all scopes
	held     int // jobs waiting or running, all scopes
	bytes    int // body bytes held, all scopes

	maxHeld, scopeHeld, scopeBytes, maxBytes int
	scopeRun                                 int // jobs of one scope running at once; 0: no cap
}

// scopeQueue is one scope's jobs: those waiting, a FIFO in a slice, and the
// count and bytes of all it holds.
type scopeQueue struct {
	key     string
	jobs    []job
	head    int // jobs[head:] wait
	held    int // jobs waiting or running
	running int // jobs popped and not yet done
	bytes   int // body bytes of the jobs held
	listed  bool
	next    *scopeQueue
}

func (q *scopeQueue) len() int { return len(q.jobs) - q.head }

// scopeList is a singly linked FIFO of scopes.
type scopeList struct{ head, tail *scopeQueue }

func (l *scopeList) push(q *scopeQueue) {
	q.next = nil
	if l.tail == nil {
		l.head = q
	} else {
		l.tail.next = q
	}
	l.tail = q
}

func (l *scopeList) pop() *scopeQueue {
	q := l.head
	if q != nil {
		l.head = q.next
		if l.head == nil {
			l.tail = nil
		}
		q.next = nil
	}
	return q
}

// maxFree bounds the drained scope entries kept for reuse, maxFreeJobs
// the job slots such an entry keeps.
const (
	maxFree     = 64
	maxFreeJobs = 16
)

func newFairQueue(held, scopeHeld, scopeBytes, bytes int) *fairQueue {
	return &fairQueue{scopes: make(map[string]*scopeQueue), maxHeld: held, scopeHeld: scopeHeld, scopeBytes: scopeBytes, maxBytes: bytes}
}

// capped reports whether q runs as many jobs as a scope may.
func (f *fairQueue) capped(q *scopeQueue) bool { return f.scopeRun > 0 && q.running >= f.scopeRun }

// refusal says which bound refused a job.
type refusal int

const (
	accepted refusal = iota
	fullQueue
	fullScope
)

// push queues j under key unless a bound refuses it; nothing changes on
// refusal. An accepted job must be handed to done once served.
func (f *fairQueue) push(key string, j job) refusal { return f.pushWithin(key, j, f.scopeHeld) }

// pushWithin is push with scopeHeld jobs held per scope instead of the
// queue's bound: the fired-message pools admit a message on its last
// delivery whatever its scope holds.
func (f *fairQueue) pushWithin(key string, j job, scopeHeld int) refusal {
	n := len(j.data)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held >= f.maxHeld || f.bytes+n > f.maxBytes {
		return fullQueue
	}
	q := f.scopes[key]
	if q != nil && (q.held >= scopeHeld || q.bytes+n > f.scopeBytes) {
		return fullScope
	}
	if q == nil {
		if q = f.free; q != nil {
			f.free, f.nfree = q.next, f.nfree-1
			q.next = nil
		} else {
			q = &scopeQueue{}
		}
		q.key = key
		f.scopes[key] = q
	}
	if !q.listed && !f.capped(q) {
		// new only when it holds nothing at all: a scope whose jobs are all
		// running would otherwise rejoin the new list with each request it
		// sends as a worker takes the last, and keep its flood in front of
		// the others (fq_codel moves an emptied new flow to the old list for
		// the same reason)
		q.listed = true
		if q.held == 0 {
			f.new.push(q)
		} else {
			f.old.push(q)
		}
	}
	if q.head > 0 && len(q.jobs) == cap(q.jobs) && q.head >= len(q.jobs)/2 {
		// a scope with a standing backlog: reuse the taken half instead of
		// growing the slice for good (amortized O(1))
		q.jobs = q.jobs[:copy(q.jobs, q.jobs[q.head:])]
		clear(q.jobs[len(q.jobs):cap(q.jobs)])
		q.head = 0
	}
	j.scope = q
	q.jobs = append(q.jobs, j)
	q.held++
	q.bytes += n
	f.waiting++
	f.held++
	f.bytes += n
	return accepted
}

// pop takes the next job round robin; ok is false when nothing waits, or
// only jobs of scopes running at their cap.
func (f *fairQueue) pop() (j job, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.new.pop()
	if q == nil {
		q = f.old.pop()
	}
	if q == nil {
		return job{}, false
	}
	j = q.jobs[q.head]
	q.jobs[q.head] = job{} // the worker owns it now; let it be collected
	q.head++
	q.running++
	f.waiting--
	switch {
	case q.len() == 0:
		q.listed = false
		q.jobs, q.head = q.jobs[:0], 0
	case f.capped(q):
		q.listed = false // rejoins the old list when a job is done
	default:
		f.old.push(q)
	}
	return j, true
}

// done releases what a popped job held; its scope leaves the map with its
// last job.
func (f *fairQueue) done(j job) {
	q, n := j.scope, len(j.data)
	f.mu.Lock()
	defer f.mu.Unlock()
	q.held--
	q.running--
	q.bytes -= n
	f.held--
	f.bytes -= n
	if q.held > 0 {
		if !q.listed && q.len() > 0 && !f.capped(q) {
			q.listed = true
			f.old.push(q)
		}
		return
	}
	delete(f.scopes, q.key)
	if f.nfree < maxFree {
		jobs := q.jobs[:0]
		if cap(jobs) > maxFreeJobs {
			jobs = nil // a flood's slice is not kept for good
		}
		*q = scopeQueue{jobs: jobs, next: f.free}
		f.free = q
		f.nfree++
	}
}

// appendWaiting appends the jobs waiting to dst: the fired-message pools
// extend their ack deadlines. It walks every scope held, so it is for a
// periodic sweep, never for a job's path.
func (f *fairQueue) appendWaiting(dst []job) []job {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, q := range f.scopes {
		dst = append(dst, q.jobs[q.head:]...)
	}
	return dst
}

// queued returns the jobs waiting and the scopes holding jobs.
func (f *fairQueue) queued() (jobs, scopes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting, len(f.scopes)
}

// maxScopeKey is the longest scope part of a valid invocation subject:
// three tokens of at most 64 characters and their two dots.
const maxScopeKey = 3*64 + 2

// scopeKey is the fairness key of an invocation subject: its scope part,
// a substring of the subject (no parse, no copy). A subject whose scope
// part is longer than any valid scope shares the key "" with the others
// like it: the handler refuses them all, and each costs the map no more
// than a valid one.
func scopeKey(subject, prefix string) string {
	k, ok := strings.CutPrefix(subject, prefix)
	if !ok || len(k) > maxScopeKey {
		return ""
	}
	return k
}
