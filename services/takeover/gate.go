package takeover

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// The event gate (docs/protocol.md, "Event gate"): an event of a chat no
// human watches is answered with no effect, so the package may let it pass
// at once and forward it in the background. The service tells the package
// which chats are watched, and revokes that whenever one more becomes so.

// gateTTL is how long a package may use a gate without asking again: the
// bound on how late a watched chat is seen when a revocation is lost.
const gateTTL = 5 * time.Second

// gateLimit is the most watched chats a gate lists; a scope with more
// gets no gate, and each of its events waits for its decision.
const gateLimit = 1000

// gate returns the event gate of sc under set at now, or nil when the
// view cannot vouch for one (store.View.Watched).
func (s *Service) gate(sc binding.Scope, set model.Settings, now int64) *wire.EventGate {
	// unread chats answer a cancel word (escalation.go); operator chats
	// relay (relay.go)
	loud, ok := s.view.Watched(sc, now, len(set.CancelWords) > 0, gateLimit)
	for _, o := range set.OperatorChats {
		if c := [2]string{o.Type, o.ID}; ok && !slices.Contains(loud, c) {
			loud = append(loud, c)
		}
	}
	if !ok || len(loud) > gateLimit {
		s.rec.metrics.gates.WithLabelValues("refused").Inc()
		return nil
	}
	s.rec.metrics.gates.WithLabelValues("given").Inc()
	return &wire.EventGate{TTLMillis: int(gateTTL.Milliseconds()), Events: decidedEvents(), Loud: loud, Words: model.TriggerPattern(set)}
}

// revokeGates returns the view's revocation hook: a notice without reply on
// the scope's gate_revoke subject, which its package serves. A notice that
// cannot be published is logged; the gate's TTL bounds the damage.
func revokeGates(nc *nats.Conn, subj wire.Subjects, log *slog.Logger) func(scope string) {
	return func(scope string) {
		sc, err := binding.ParseScope(scope)
		if err != nil {
			return
		}
		if err := nc.Publish(subj.HostAction(wire.ActionGateRevoke, sc), nil); err != nil {
			log.WarnContext(context.Background(), "an event gate revocation was not sent", "scope", scope, "err", err)
		}
	}
}
