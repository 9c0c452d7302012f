package schenotify

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/bus"
)

// The exact second. The server fires a large batch of @at
// schedules up to a second late (its fire floor), so each schedule is armed
// Lead ahead of its due instant. A fire that arrives inside the lead window
// is claimed at once (the record decides, as on every fire), and the claimed
// delivery is released by an in-process timer at the instant: only the
// send remains on the critical path. The fired message stays unacked while
// it is held, so a crash before the instant leads to its redelivery once
// AckWait and the claim have expired; a stop puts the record back as it was
// before the claim and re-arms the schedule, so another replica (or the
// restarted one) sends it at the instant.
// The number of held deliveries is bounded (MaxHeld); beyond it, and for a
// fire earlier than the hold window, the fire takes today's path (a nak
// with a delay until the target, or a re-arm).

// Defaults and bounds of the lead (Config.Lead, Config.MaxHeld).
const (
	DefaultLead    = 5 * time.Second
	MaxLead        = 10 * time.Second
	defaultMaxHeld = 4096
)

// held is one claimed delivery waiting in memory for its instant.
type held struct {
	*claimed
	timer *time.Timer
}

// holder owns the held deliveries: membership of the map is ownership, so
// a timer that fires while stop runs finds its entry gone and does nothing.
type holder struct {
	mu       sync.Mutex
	held     map[*held]struct{}
	reserved int
	max      int
	stopped  bool
	// releases runs the sends of released deliveries. A send that began
	// runs to its end, as the instant is now and its claim is taken: stop
	// waits for it without giving up, and its context is not cancelled.
	releases bus.Background
}

func newHolder(max int) *holder {
	h := &holder{held: map[*held]struct{}{}, max: max}
	h.releases.CancelAtDeadline = true
	return h
}

// reserve takes a slot for one held delivery; false when the cap is reached
// or the holder has stopped.
func (h *holder) reserve() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.reserved >= h.max {
		return false
	}
	h.reserved++
	return true
}

func (h *holder) unreserve() {
	h.mu.Lock()
	h.reserved--
	h.mu.Unlock()
}

// len is the number of deliveries waiting for their instant.
func (h *holder) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

// holdSlot is the place in the holder one fired message's handling may
// take: taken while the fire is inside the hold window, given back unless
// the delivery is held (the holder then owns it).
type holdSlot struct {
	h     *holder
	taken bool
}

// want takes the slot for an early fire (when the holder has room) and
// gives it back for one that is not early any more.
func (sl *holdSlot) want(early bool) {
	switch {
	case early && !sl.taken:
		sl.taken = sl.h.reserve()
	case !early && sl.taken:
		sl.h.unreserve()
		sl.taken = false
	}
}

// giveBack gives the slot back unless the holder took it over.
func (sl *holdSlot) giveBack() {
	if sl.taken {
		sl.h.unreserve()
		sl.taken = false
	}
}

// holdWindow is how far ahead of its target a fire is held in memory: the
// lead plus a second of clock difference, and never more than half the
// ack wait, so a held message is not redelivered while it waits.
func (d *delivery) holdWindow() time.Duration {
	return min(d.lead+time.Second, d.ackWait/2)
}

// hold hands a claimed delivery (a reserved slot) to a timer at its
// target. The handler's slot is free once it returns.
func (d *delivery) hold(it *held) {
	h := d.holds
	h.mu.Lock()
	if h.stopped {
		h.reserved--
		h.mu.Unlock()
		d.putBack(it)
		return
	}
	h.held[it] = struct{}{}
	wait := it.target.Sub(d.now())
	it.timer = time.AfterFunc(max(0, wait), func() { d.release(it) })
	h.mu.Unlock()
}

// release sends a held delivery at its instant. It hands the send to
// releases while it holds the lock, so stopHolds, which marks the holder
// stopped under the same lock before it stops releases, waits for it.
func (d *delivery) release(it *held) {
	h := d.holds
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.held[it]; !ok || h.stopped {
		return // stop took it over
	}
	delete(h.held, it)
	h.reserved--
	_ = h.releases.Go(func(ctx context.Context) { d.sendReleased(context.WithoutCancel(ctx), it) })
}

// sendReleased sends a released delivery and settles its fired message.
func (d *delivery) sendReleased(ctx context.Context, it *held) {
	if a, ok := d.runner.View().Lookup(it.f.Scope); ok && !a.Active() {
		// Disabled, superseded or removed while it waited: the record
		// decides again, on the fire's own path (which pauses or purges).
		d.putBackClaim(it.claimed)
		_ = it.f.Nak(0)
		return
	}
	d.active.begin()
	defer d.active.end()
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(bus.MessagingAttrs(it.f.Subject, d.subj.InternalAll(Plugin, KindDue), "process", DueConsumer)...),
	}
	if it.f.Origin.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: it.f.Origin}))
	}
	ctx, span := d.tracer.Start(ctx, "release held reminder", opts...)
	defer span.End()
	ctx, cancel := context.WithTimeout(ctx, d.hostTimeout+10*time.Second+d.claimExtra(it.rec))
	defer cancel()
	outcome, err := d.send(ctx, it.claimed)
	d.settle(ctx, it.f, outcome, err)
}

// stopHolds stops every timer, puts their records back and naks their
// messages with a delay until their targets, then waits for the releases
// already running. Nothing is held afterwards.
func (d *delivery) stopHolds(ctx context.Context) {
	h := d.holds
	h.mu.Lock()
	h.stopped = true
	var back []*held
	for it := range h.held {
		it.timer.Stop()
		back = append(back, it)
	}
	clear(h.held)
	h.reserved = 0
	h.mu.Unlock()
	work := make(chan *held)
	var wg sync.WaitGroup
	for range min(16, len(back)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				d.putBack(it)
			}
		}()
	}
	for _, it := range back {
		work <- it
	}
	close(work)
	wg.Wait()
	_ = h.releases.Stop(ctx) // it waits the sends out: its error is nil
}

// putBack undoes the claim of a delivery that will not be sent here (the
// record decides: if it changed meanwhile, that write wins) and re-arms its
// schedule for the target, whose fired message replaces the held one (the
// due subject keeps the last fired message only), so the next replica sends
// it at the instant. A nak with a delay was tried first: its redelivery
// could wait for AckWait after a restart.
func (d *delivery) putBack(it *held) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sc, id := it.f.Scope, it.rec.ID
	if !d.putBackClaim(it.claimed) {
		return
	}
	if err := d.rem.arm(ctx, sc, id, it.target); err != nil {
		d.log.WarnContext(ctx, "held reminder: not re-armed", "scope", sc.String(), "id", id, "err", err)
		_ = it.f.Nak(max(0, it.target.Sub(d.now())))
		return
	}
	d.ack(ctx, it.f)
}

// putBackClaim writes the record as it was before the claim, unless it
// changed meanwhile (that write wins); false when the store failed, and the
// claim then stays until it expires.
func (d *delivery) putBackClaim(it *claimed) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	orig := it.orig
	if _, err := d.rem.casRecord(ctx, it.sc, &orig, it.rev); err != nil && !bus.IsCASConflict(err) {
		d.log.WarnContext(ctx, "held reminder: claim not released", "scope", it.sc.String(), "id", it.rec.ID, "err", err)
		return false
	}
	return true
}
