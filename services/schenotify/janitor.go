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

// startJanitor starts the janitor and opens its queue. The returned stop
// closes the queue (finish then cleans up at once) and waits until the
// janitor has worked through what was queued.
func (s *Service) startJanitor() (stop func()) {
	q := make(chan janitorItem, janitorQueue)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.runJanitor(q)
	}()
	s.mu.Lock()
	s.janitor = q
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.janitor = nil
		s.mu.Unlock()
		close(q)
		<-done
	}
}

// janitorPart is the janitor as a part of the runner: started before the
// due consumer opens, stopped after its handlers returned, so no finished
// delivery is queued to a stopped janitor.
func (s *Service) janitorPart() bus.Part {
	var stop func()
	return bus.PartFuncs{
		StartFunc: func(context.Context) error { stop = s.startJanitor(); return nil },
		StopFunc:  func(context.Context) error { stop(); return nil },
	}
}

// finish queues the removal of a finished reminder's fired message for the
// janitor, or does it at once when the queue is full or stopped. Deferring them
// keeps the handler's slot, and the schedule stream the server fires into,
// free for the next claims during a burst of due reminders.
func (s *Service) finish(ctx context.Context, f *bus.Fired, both bool) {
	s.mu.Lock()
	q := s.janitor
	s.mu.Unlock()
	if q != nil {
		select {
		case q <- janitorItem{f: f, both: both, at: time.Now()}:
			return
		default:
		}
	}
	s.cleanUp(ctx, janitorItem{f: f, both: both})
}

func (s *Service) cleanUp(ctx context.Context, it janitorItem) {
	if it.both {
		if err := s.cancel(ctx, it.f.Scope, it.f.IDs[0]); err != nil {
			s.log.WarnContext(ctx, "schedule not cancelled after delivery", "scope", it.f.Scope.String(), "id", it.f.IDs[0], "err", err)
		}
	}
	s.ack(ctx, it.f)
}

// runJanitor removes the fired messages of finished deliveries until q is
// closed. Each
// item waits until no fired message is being handled, or until it has
// waited janitorYield since it was queued.
func (s *Service) runJanitor(q <-chan janitorItem) {
	for it := range q {
		if wait := janitorYield - time.Since(it.at); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-s.active.idle():
			case <-timer.C:
			}
			timer.Stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s.cleanUp(ctx, it)
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
