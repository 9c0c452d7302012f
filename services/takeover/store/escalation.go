package store

import (
	"context"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// ScheduleEscalation arms (or replaces) the session's escalation schedule
// at ms (Unix milliseconds, rounded up to the second), carrying body: the
// JetStream schedule survives restarts, as the expiry's does.
func (st *Store) ScheduleEscalation(ctx context.Context, sc binding.Scope, sid string, ms int64, body []byte) error {
	if err := st.Check("timer.escalate", sc); err != nil {
		return err
	}
	subject, err := st.subj.Internal(Plugin, KindEscTimer, sc, sid)
	if err != nil {
		return err
	}
	target, err := st.subj.Internal(Plugin, KindEscalate, sc, sid)
	if err != nil {
		return err
	}
	return bus.ScheduleAt(ctx, st.js, subject, target, time.UnixMilli(model.ScheduleAt(ms)), body)
}

// CancelEscalation removes the session's escalation schedule; a fired one
// not yet handled finds the record changed and only acks.
func (st *Store) CancelEscalation(ctx context.Context, sc binding.Scope, sid string) error {
	if err := st.Check("timer.escalate", sc); err != nil {
		return err
	}
	subject, err := st.subj.Internal(Plugin, KindEscTimer, sc, sid)
	if err != nil {
		return err
	}
	return bus.PurgeSubjects(ctx, st.timers, subject)
}
