package schenotify

import (
	"context"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
)

// The janitor removes the fired message of a finished reminder (ack and
// delete by sequence, bus.Fired.Remove) and cancels its schedule when the
// delete of its record lost a race, off the handler's slot: during a burst
// of due reminders, the claims and sends get the storage first (spec 7.4).

// janitorItem is a finished delivery whose fired message is still to be
// removed (and its schedule cancelled, when both).
type janitorItem struct {
	f    *bus.Fired
	both bool
	at   time.Time
}

// janitorYield is how long the janitor lets handlers go first: while any
// fired message is being handled, an item waits up to this long, so that
// during a burst the claims and sends get the storage first.
const janitorYield = 5 * time.Second

// janitorQueue bounds the finished deliveries waiting for the janitor;
// past it, a handler cleans up after itself.
const janitorQueue = 4096

// janitor removes finished deliveries' fired messages off the handlers'
// slots: one goroutine over a bounded queue, started and stopped by
// delivery.
type janitor struct {
	active  *activity                                 // the handlers it yields to
	cleanUp func(ctx context.Context, it janitorItem) // the removal itself

	mu   sync.Mutex
	q    chan janitorItem // nil while stopped
	done chan struct{}    // closed when the goroutine has returned
}

func newJanitor(active *activity, cleanUp func(context.Context, janitorItem)) *janitor {
	return &janitor{active: active, cleanUp: cleanUp}
}

// start starts the janitor and opens its queue.
func (j *janitor) start() {
	q := make(chan janitorItem, janitorQueue)
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.run(q)
	}()
	j.mu.Lock()
	j.q, j.done = q, done
	j.mu.Unlock()
}

// stop closes the queue (finish then cleans up at once) and waits until
// the janitor has worked through what was queued.
func (j *janitor) stop() {
	j.mu.Lock()
	q, done := j.q, j.done
	j.q = nil
	j.mu.Unlock()
	if q == nil {
		return
	}
	close(q)
	<-done
}

// queue hands it to the janitor; false when the queue is full or stopped.
func (j *janitor) queue(it janitorItem) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.q == nil {
		return false
	}
	select {
	case j.q <- it:
		return true
	default:
		return false
	}
}

// finish queues the removal of a finished reminder's fired message for the
// janitor, or does it at once when the queue is full or stopped. Deferring them
// keeps the handler's slot, and the schedule stream the server fires into,
// free for the next claims during a burst of due reminders.
func (d *delivery) finish(ctx context.Context, f *bus.Fired, both bool) {
	if d.janitor.queue(janitorItem{f: f, both: both, at: time.Now()}) {
		return
	}
	d.cleanUp(ctx, janitorItem{f: f, both: both})
}

func (d *delivery) cleanUp(ctx context.Context, it janitorItem) {
	if it.both {
		if err := d.rem.cancel(ctx, it.f.Scope, it.f.IDs[0]); err != nil {
			d.log.WarnContext(ctx, "schedule not cancelled after delivery", "scope", it.f.Scope.String(), "id", it.f.IDs[0], "err", err)
		}
	}
	d.ack(ctx, it.f)
}

// run removes the fired messages of finished deliveries until q is
// closed. Each item waits until no fired message is being handled, or
// until it has waited janitorYield since it was queued.
func (j *janitor) run(q <-chan janitorItem) {
	for it := range q {
		if wait := janitorYield - time.Since(it.at); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-j.active.idle():
			case <-timer.C:
			}
			timer.Stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		j.cleanUp(ctx, it)
		cancel()
	}
}

// activity counts the fired messages being handled and tells the janitor
// when none is, without polling. The zero value is idle.
type activity struct {
	mu sync.Mutex
	n  int
	// quiet is closed when n drops back to 0; nil while n is 0.
	quiet chan struct{}
}

// begin counts one more handler.
func (a *activity) begin() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == 0 {
		a.quiet = make(chan struct{})
	}
	a.n++
}

// end counts one handler less.
func (a *activity) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n--
	if a.n == 0 {
		close(a.quiet)
		a.quiet = nil
	}
}

// idle returns a channel that is closed once no handler is running: at
// once when none is now.
func (a *activity) idle() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return a.quiet
}
