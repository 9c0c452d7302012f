package store

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// Relays is the bucket of the relay bindings (KeyRelay, KeyRelayTo): the
// session bucket, which has no TTL, so a binding lives as long as its
// takeover however often that is renewed (the dedupe bucket's 24 h TTL
// would end a long takeover's relay silently). The release, `ho leave`
// and the first message after a takeover ended remove them; a deleted
// session or a cleared installation purges them (PurgeRelays).
func (st *Store) Relays() *bus.KV { return st.kv }

// PurgeRelays removes the relay records of a scope: the reverse pointers
// of the chats sids, or, with none named, every binding and pointer (a
// cleared installation).
func (st *Store) PurgeRelays(ctx context.Context, sc binding.Scope, sids ...string) error {
	if err := st.Check("kv.purge", sc); err != nil {
		return err
	}
	if len(sids) > 0 {
		for _, sid := range sids {
			if err := st.kv.Purge(ctx, sc, KeyRelayTo, sid); err != nil {
				return err
			}
		}
		return nil
	}
	for _, kind := range []string{KeyRelay, KeyRelayTo} {
		ids, err := st.kv.Keys(ctx, sc, kind)
		if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
			return err
		}
		for _, id := range ids {
			if err := st.kv.Purge(ctx, sc, kind, id); err != nil {
				return err
			}
		}
	}
	return nil
}
