package bus_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
)

var _ bus.Part = (*bus.Background)(nil)

// TestBackgroundStopCancelsAndWaits: with no grace, Stop cancels the work's
// context at once and returns only after every function Go ran returned.
func TestBackgroundStopCancelsAndWaits(t *testing.T) {
	b := &bus.Background{}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var done atomic.Int32
	running := make(chan struct{}, 2)
	for range 2 {
		if err := b.Go(func(ctx context.Context) {
			running <- struct{}{}
			<-ctx.Done()
			done.Add(1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	<-running
	<-running
	if err := b.Context().Err(); err != nil {
		t.Fatalf("the work's context ended before Stop: %v", err)
	}
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := done.Load(); n != 2 {
		t.Fatalf("Stop returned with %d of 2 functions done", n)
	}
}

// TestBackgroundDrainThenGrace: Drain runs first with the work's context
// live, work that ends on its own within the grace is never cancelled, and
// work still running when the grace is over is.
func TestBackgroundDrainThenGrace(t *testing.T) {
	queue := make(chan struct{})
	b := &bus.Background{Grace: time.Hour}
	var drained, cancelledEarly atomic.Bool
	b.Drain = func(context.Context) error {
		drained.Store(b.Context().Err() == nil)
		close(queue)
		return nil
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = b.Go(func(ctx context.Context) {
		<-queue
		cancelledEarly.Store(ctx.Err() != nil)
	})
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !drained.Load() {
		t.Fatal("Drain ran after the work's context was cancelled")
	}
	if cancelledEarly.Load() {
		t.Fatal("work that ended within the grace was cancelled")
	}
	if b.Context().Err() == nil {
		t.Fatal("the work's context outlived Stop")
	}

	// a function that ends only when cancelled ends after the grace
	g := &bus.Background{Grace: time.Millisecond}
	_ = g.Start(context.Background())
	var sawCancel atomic.Bool
	_ = g.Go(func(ctx context.Context) { <-ctx.Done(); sawCancel.Store(true) })
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !sawCancel.Load() {
		t.Fatal("the grace did not cancel the work")
	}
}

// TestBackgroundStopGivesUp: Stop waits no longer than its own context.
func TestBackgroundStopGivesUp(t *testing.T) {
	b := &bus.Background{Grace: time.Hour}
	_ = b.Start(context.Background())
	release := make(chan struct{})
	defer close(release)
	_ = b.Go(func(context.Context) { <-release })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop with its context done: %v", err)
	}
}

// TestBackgroundGoAfterStop: after Stop, Go runs nothing and says so;
// before Start it runs f on a live context.
func TestBackgroundGoAfterStop(t *testing.T) {
	b := &bus.Background{}
	ran := make(chan error, 1)
	if err := b.Go(func(ctx context.Context) { ran <- ctx.Err() }); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatalf("Go before Start: context %v", err)
	}
	_ = b.Start(context.Background())
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	var after atomic.Bool
	if err := b.Go(func(context.Context) { after.Store(true) }); !errors.Is(err, bus.ErrStopped) {
		t.Fatalf("Go after Stop: %v", err)
	}
	if err := b.Stop(context.Background()); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	if after.Load() {
		t.Fatal("Go after Stop ran its function")
	}
}

// TestBackgroundCancelAtDeadline: with CancelAtDeadline the work's context
// stays live through Drain and until Stop's context is done; then it is
// cancelled and Stop waits for the work to return, and returns no error.
func TestBackgroundCancelAtDeadline(t *testing.T) {
	queue := make(chan struct{})
	b := &bus.Background{CancelAtDeadline: true}
	var liveInDrain atomic.Bool
	b.Drain = func(context.Context) error {
		liveInDrain.Store(b.Context().Err() == nil)
		close(queue)
		return nil
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	_ = b.Go(func(ctx context.Context) {
		<-queue
		queued <- ctx.Err()
	})
	cancelled, finish := make(chan struct{}), make(chan struct{})
	_ = b.Go(func(ctx context.Context) {
		<-ctx.Done()
		close(cancelled)
		<-finish
	})
	stopCtx, deadline := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- b.Stop(stopCtx) }()
	if err := <-queued; err != nil {
		t.Fatalf("queued work ended on its own before Stop's deadline, context %v", err)
	}
	if !liveInDrain.Load() {
		t.Fatal("the work's context was cancelled before Drain")
	}
	if err := b.Context().Err(); err != nil {
		t.Fatalf("the work's context ended before Stop's deadline: %v", err)
	}
	deadline()
	<-cancelled
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while the cancelled work still ran", err)
	default:
	}
	close(finish)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop after the work returned: %v", err)
	}
}
