package takeover

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// recording is the event path: the blocking decision (event.go), then the
// recording of the event on the bounded pool (recorder.go) with the bot
// cache (bots.go). It reaches the alerts, the takeover's follow-ups, the
// live events and the session summary through notices.
//
// It is a bus.Part: Start starts the recording pool and the metadata
// writer; Stop lets the queued recordings and metadata writes finish once
// no event can queue more, and after a few seconds cancels their storage
// calls, so a stop never waits out a dead JetStream.
type recording struct {
	st       *store.Store
	view     *store.View
	meta     *store.MetaWriter
	trims    *store.Trimmer
	locks    *bus.KeyLocks[string] // per session, by store.SessionKey
	bots     *botCache
	notices  *notices
	pool     *recorder
	settings *settingsCache
	metrics  *metrics
	now      clock
	log      *slog.Logger

	budget time.Duration // Config.RecordBudget

	onDecision func(time.Duration) // benchmarks only; set before Run

	// unknownAccount remembers (scope, bot) pairs already logged for an
	// unknown account id under record_groups=addressed.
	unknownAccount sync.Map

	// bg is the recordings' and metadata writes' context: its Drain lets
	// the queued recordings, then the metadata writes, finish; after
	// stopGrace their storage calls are cancelled
	bg bus.Background
}

// stopGrace is how long Stop lets the queued recordings and metadata
// writes run before their storage calls are cancelled.
const stopGrace = 2 * time.Second

// Start starts the recording pool and the metadata writer (bus.Part).
func (rc *recording) Start(ctx context.Context) error {
	rc.bg.Grace = stopGrace
	rc.bg.Drain = func(ctx context.Context) error {
		rc.pool.stop()
		return rc.meta.Stop(ctx)
	}
	if err := rc.bg.Start(ctx); err != nil {
		return err
	}
	rc.pool.start()
	return rc.meta.Start(rc.bg.Context())
}

// Stop drains the recordings, then the metadata writes (bus.Part).
func (rc *recording) Stop(ctx context.Context) error { return rc.bg.Stop(ctx) }
