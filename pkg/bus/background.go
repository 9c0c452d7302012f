package bus

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrStopped is returned by Background.Go after Stop began.
var ErrStopped = errors.New("bus: background work stopped")

// Background is a Part for the work a service starts as it goes (a
// notice's retries, a fetch, a pool's workers): Go runs a function on the
// part's context and Stop waits for every one, so a service keeps no
// context, cancel func or wait group of its own. The zero value is ready;
// set Grace, CancelAtDeadline and Drain before Start.
type Background struct {
	// Grace is how long Stop lets the work run before it cancels the
	// work's context; 0 cancels at once.
	Grace time.Duration
	// CancelAtDeadline makes Stop wait the work out: Grace is not used,
	// the work runs until Stop's ctx is done, then its context is
	// cancelled and Stop waits for every function to return instead of
	// giving up. For work that must have ended when the part counts as
	// stopped (a worker that finishes a queued job it took).
	CancelAtDeadline bool
	// Drain, when set, runs first in Stop, within the grace: it makes the
	// work end on its own (lets queued jobs finish, closes their queue)
	// and waits for what it owns. Its error is Stop's.
	Drain func(ctx context.Context) error

	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped bool
}

// Start opens the work's context under ctx (Part).
func (b *Background) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ctx, b.cancel = context.WithCancel(ctx)
	return nil
}

// Context is the work's context: cancelled by Stop (after the grace), a
// never-cancelled one before Start.
func (b *Background) Context() context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == nil {
		return context.Background()
	}
	return b.ctx
}

// Go runs f on its own goroutine with the work's context, and Stop waits
// for it. After Stop began it runs nothing and returns ErrStopped.
func (b *Background) Go(f func(ctx context.Context)) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return ErrStopped
	}
	ctx := b.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		f(ctx)
	}()
	return nil
}

// Stop refuses further work, runs Drain, cancels the work's context once
// the grace is over (at the latest when the work ended) and waits for
// every function Go ran, giving up when ctx is done (Part). With
// CancelAtDeadline it cancels when ctx is done instead and then waits for
// the work to return; the work ended, so ctx's error is not Stop's.
func (b *Background) Stop(ctx context.Context) error {
	b.mu.Lock()
	b.stopped = true
	cancel := b.cancel
	b.mu.Unlock()
	if cancel == nil {
		cancel = func() {}
	}
	defer cancel()
	switch {
	case b.CancelAtDeadline:
	case b.Grace > 0:
		grace := time.AfterFunc(b.Grace, cancel)
		defer grace.Stop()
	default:
		cancel()
	}
	var err error
	if b.Drain != nil {
		err = b.Drain(ctx)
	}
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return err
	case <-ctx.Done():
	}
	if !b.CancelAtDeadline {
		return errors.Join(err, ctx.Err())
	}
	cancel()
	<-done
	return err
}
