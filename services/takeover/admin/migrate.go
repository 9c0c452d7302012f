package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// MigrateOptions configures MigrateHistory.
type MigrateOptions struct {
	// Prefix is the subject prefix ("langbot" when empty).
	Prefix string
}

// MigrateSummary reports what MigrateHistory did.
type MigrateSummary struct {
	Sessions int  // session histories copied into the shards
	Entries  int  // entries copied
	Removed  bool // the single stream was deleted
	// Left names the subjects of the single stream that are not session
	// histories; while there are any, the stream is kept.
	Left []string
}

// String is the report lbctl prints.
func (s MigrateSummary) String() string {
	out := fmt.Sprintf("copied %d entries of %d sessions into %d history streams\n", s.Entries, s.Sessions, store.HistoryShards)
	if s.Removed {
		out += "deleted " + store.LegacyHistoryStream + "\n"
	}
	for _, l := range s.Left {
		out += "left in " + store.LegacyHistoryStream + ": " + l + "\n"
	}
	return out
}

// ErrMigrate wraps every failure of MigrateHistory.
var ErrMigrate = errors.New("takeover: migrate history")

// MigrateHistory moves the chat history of an earlier version, one stream
// LANGBOT_TAKEOVER_HISTORY holding every session, into the shards
// (store.HistoryStream), keeping each session's entries and their order, then
// deletes that stream. It is lbctl migrate takeover-history. Run it with
// every takeover replica stopped (they refuse to start until it is done).
//
// It can be run again after an interruption: it changes nothing in the old
// stream's messages until it deletes the stream, and it empties each
// session's new subject before copying into it. A subject of the old stream
// that is not a session history is left there and reported, and the stream
// is then kept.
func MigrateHistory(ctx context.Context, js jetstream.JetStream, o MigrateOptions) (MigrateSummary, error) {
	var sum MigrateSummary
	subj, err := wire.NewSubjects(o.Prefix)
	if err != nil {
		return sum, fmt.Errorf("%w: %w", ErrMigrate, err)
	}
	old, err := js.Stream(ctx, store.LegacyHistoryStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return sum, nil // nothing to move
	}
	if err != nil {
		return sum, fmt.Errorf("%w: %w", ErrMigrate, err)
	}
	// The old stream gives up its subjects (a stream keeps the messages it
	// holds when its subjects change), so that the shards can take them.
	cfg := old.CachedInfo().Config
	if !slices.Equal(cfg.Subjects, []string{store.LegacyHistoryStream}) {
		cfg.Subjects = []string{store.LegacyHistoryStream}
		if old, err = js.UpdateStream(ctx, cfg); err != nil {
			return sum, fmt.Errorf("%w: release the old stream's subjects: %w", ErrMigrate, err)
		}
	}
	st := store.New(js, subj, nil)
	if err := st.EnsureHistory(ctx, cfg.Replicas); err != nil {
		return sum, fmt.Errorf("%w: %w", ErrMigrate, err)
	}
	if err := copyLegacy(ctx, st, old, &sum); err != nil {
		return sum, fmt.Errorf("%w: %w", ErrMigrate, err)
	}
	if len(sum.Left) > 0 {
		return sum, nil
	}
	if err := js.DeleteStream(ctx, store.LegacyHistoryStream); err != nil {
		return sum, fmt.Errorf("%w: delete %s: %w", ErrMigrate, store.LegacyHistoryStream, err)
	}
	sum.Removed = true
	return sum, nil
}

// copyLegacy copies every message of the old stream onto its session's
// subject in the shards, in stream order, and waits for every ack.
func copyLegacy(ctx context.Context, st *store.Store, old jetstream.Stream, sum *MigrateSummary) error {
	cons, err := old.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return err
	}
	pending := int(cons.CachedInfo().NumPending)
	seen := map[string]bool{} // old subjects whose new subject was emptied
	left := map[string]bool{} // old subjects that are not session histories
	var acks []jetstream.PubAckFuture
	for read := 0; read < pending; {
		batch, err := cons.Fetch(min(pending-read, 500), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			kind, sc, ids, perr := st.Subjects().ParseInternal(store.Plugin, m.Subject())
			if perr != nil || kind != store.KindHistory || len(ids) != 1 || !model.ValidSID(ids[0]) {
				left[m.Subject()] = true
				continue
			}
			sid := ids[0]
			if !seen[m.Subject()] {
				// a run before this one may have copied part of it
				if err := st.PurgeHistory(ctx, sc, sid, 0); err != nil {
					return err
				}
				seen[m.Subject()] = true
				sum.Sessions++
			}
			subject := st.HistorySubject(sc, sid)
			msg := &nats.Msg{Subject: subject, Data: m.Data(), Header: nats.Header{}}
			for k, v := range m.Headers() {
				// trace context stays; JetStream's own headers (message
				// id, batch) belonged to the original append
				if !strings.HasPrefix(k, "Nats-") {
					msg.Header[k] = v
				}
			}
			f, err := st.JetStream().PublishMsgAsync(msg)
			if err != nil {
				return err
			}
			acks = append(acks, f)
			sum.Entries++
		}
		if err := batch.Error(); err != nil && n == 0 {
			return err
		}
		if n == 0 {
			break
		}
		read += n
		if err := waitAcks(ctx, acks); err != nil {
			return err
		}
		acks = acks[:0]
	}
	for s := range left {
		sum.Left = append(sum.Left, s)
	}
	slices.Sort(sum.Left)
	return nil
}

// waitAcks waits for every publish ack of a batch of async publishes.
func waitAcks(ctx context.Context, acks []jetstream.PubAckFuture) error {
	for _, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
