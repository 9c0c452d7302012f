package takeover

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// notices is the bottom part of the service: what follows a takeover or a
// release (the expiry schedule, the live event, the user notice), the
// operator alerts and "taken by" notes, the expiry and resume sweep, the
// live publisher and the session summary. The recording and the console
// operations call down into it; it calls nothing above it.
//
// It is a bus.Part: its background work (notice retries, bot info
// fetches) is a bus.Background, which Stop cancels and waits for.
type notices struct {
	st       *store.Store
	view     *store.View
	runner   *bus.Runner // host, dedupe bucket, authority, installation config; set once the runner exists
	nc       *nats.Conn  // the live publisher
	js       jetstream.JetStream
	subj     wire.Subjects
	catalog  *i18n.Catalog
	metrics  *metrics
	settings *settingsCache
	bots     *botCache
	now      clock
	log      *slog.Logger

	hostTimeout   time.Duration   // Config.HostTimeout
	noticeRetry   []time.Duration // Config.NoticeRetry
	alertInterval time.Duration   // Config.AlertInterval
	assist        *assist         // the alert's AI summary (assist.go)

	bg bus.Background // the background work: notice retries, bot info fetches
}

// session is one session as the notices act on it: the installation
// (scope, binding the host actions use, settings), the session id and its
// committed record.
type session struct {
	sc  binding.Scope
	b   binding.Binding
	set model.Settings
	sid string
	rec *model.Record
}

// Start opens the context of background work (bus.Part).
func (n *notices) Start(ctx context.Context) error { return n.bg.Start(ctx) }

// Stop ends the background context and waits for the notices and fetches
// it runs (bus.Part).
func (n *notices) Stop(ctx context.Context) error { return n.bg.Stop(ctx) }

// goBackground runs f in the notices' background work, which the
// service's stop cancels and waits for; after the stop it runs nothing.
func (n *notices) goBackground(parent context.Context, f func(ctx context.Context)) {
	// the work outlives the request but stays in its trace
	span := trace.SpanContextFromContext(parent)
	_ = n.bg.Go(func(ctx context.Context) { f(trace.ContextWithSpanContext(ctx, span)) })
}

// publishLive sends a live message to the scope's live subject (best
// effort, spec §7.5).
func (n *notices) publishLive(sc binding.Scope, l model.Live) {
	subject, err := n.subj.Internal(Plugin, store.KindLive, sc)
	if err != nil {
		return
	}
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	_ = n.nc.Publish(subject, b)
}

// storeEntry writes an entry's blobs, then appends it (spec §5.3 rule 7).
func storeEntry(ctx context.Context, st *store.Store, sc binding.Scope, sid string, e *model.Entry, parts []model.Part) error {
	e.Parts = make([]model.Part, len(parts))
	for i, p := range parts {
		if p.Data != nil {
			name := store.BlobName(sc, sid, e.ID, i)
			if err := st.PutBlob(ctx, sc, name, p.Data, p.Mime, p.Name); err != nil {
				return err
			}
			p.Blob, p.Data = name, nil
		}
		e.Parts[i] = p
	}
	seq, err := st.AppendEntry(ctx, sc, sid, e)
	if err != nil {
		return err
	}
	e.Seq = seq
	return nil
}

// sendKey is the idempotency key of a message the service sends for the
// installation sc: "takeover:<scope>:" and parts joined by ":". A host
// drops a repeat of a key it has sent, so each kind of message names what
// makes it one message (the session, the occurrence, the operator chat).
func sendKey(sc binding.Scope, parts ...string) string {
	return Plugin + ":" + sc.String() + ":" + strings.Join(parts, ":")
}
