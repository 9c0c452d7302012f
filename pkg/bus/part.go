package bus

import (
	"context"
	"sync"
)

// Part is background work a service declares in RunnerConfig.Parts: a
// writer, a janitor, a sweep. The runner starts the parts in order after
// its streams and buckets exist and the authority view is loaded, before
// any intake opens (endpoints, lifecycle and fired-message consumers), and
// stops them in reverse order after intake drained and every handler
// returned, so a handler never finds a part stopped.
type Part interface {
	// Start starts the part. ctx lives until every part was stopped: work
	// the part starts may keep it. An error stops the runner's start.
	Start(ctx context.Context) error
	// Stop stops the part and waits for its work, giving up when ctx is
	// done. It is called once, only after a successful Start.
	Stop(ctx context.Context) error
}

// PartFuncs adapts a pair of functions to a Part.
type PartFuncs struct {
	StartFunc func(ctx context.Context) error
	StopFunc  func(ctx context.Context) error
}

// Start calls StartFunc (nil: nothing).
func (p PartFuncs) Start(ctx context.Context) error {
	if p.StartFunc == nil {
		return nil
	}
	return p.StartFunc(ctx)
}

// Stop calls StopFunc (nil: nothing).
func (p PartFuncs) Stop(ctx context.Context) error {
	if p.StopFunc == nil {
		return nil
	}
	return p.StopFunc(ctx)
}

// Loop is a Part that runs one function until its context is done: Start
// runs it on its own goroutine, Stop cancels it and waits for it to return.
func Loop(run func(ctx context.Context)) Part { return &loop{run: run} }

type loop struct {
	run    func(ctx context.Context)
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func (l *loop) Start(ctx context.Context) error {
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		l.run(ctx)
	}()
	return nil
}

func (l *loop) Stop(ctx context.Context) error {
	l.once.Do(l.cancel)
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
