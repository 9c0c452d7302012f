package githubkit

import (
	"context"
	"errors"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// purgeScope removes a removed scope's schedules and pending fires (spec
// §8); the runner purges the buckets afterwards. It is idempotent.
func (s *subscriptions) purgeScope(ctx context.Context, sc binding.Scope) error {
	st := s.streamHandle()
	if st == nil {
		return errors.New("githubkit: stream not ready")
	}
	if err := bus.PurgeSubjects(ctx, st, s.subj.InternalScope(Plugin, KindSched, sc), s.subj.InternalScope(Plugin, KindPoll, sc)); err != nil {
		return err
	}
	return s.wh.purgeHooks(ctx, sc)
}

// onTransition runs on the replica that changed a scope's authority (spec
// §8): it logs config warnings when the normalised config changed, and for
// an active authority republishes every schedule whose effective interval
// changed, and arms records that have no schedule (repair).
func (s *subscriptions) onTransition(ctx context.Context, sc binding.Scope, prev *bus.Authority, next bus.Authority) error {
	if next.State != bus.StateActive {
		return nil
	}
	raw, err := s.runner.OpenConfig(sc, &next)
	if err != nil {
		s.log.WarnContext(ctx, "authority config cannot be opened", "scope", sc.String())
		return nil
	}
	st, warns := s.settings(raw)
	var old *Settings
	if prev != nil {
		if praw, err := s.runner.OpenConfig(sc, prev); err == nil {
			o, _ := s.settings(praw)
			old = &o
		}
	}
	if len(warns) > 0 && (old == nil || !sameSettings(*old, st)) {
		for _, w := range warns {
			s.metrics.configWarnings.WithLabelValues(w.Field).Inc()
			s.log.WarnContext(ctx, "config value replaced", "scope", sc.String(), "field", w.Field, "reason", w.Reason)
		}
	}
	return s.resync(ctx, sc, st)
}

func sameSettings(a, b Settings) bool {
	return a.Language == b.Language && a.Token == b.Token && a.PollInterval == b.PollInterval &&
		a.MaxEventsPerPush == b.MaxEventsPerPush && a.APIURL == b.APIURL && a.SubscribeRequiresAdmin == b.SubscribeRequiresAdmin
}

// resync brings every live record's schedule in line with the settings.
func (s *subscriptions) resync(ctx context.Context, sc binding.Scope, st Settings) error {
	kv := s.runner.KV()
	all, err := listRecords(ctx, kv, sc)
	if err != nil {
		return err
	}
	stream := s.streamHandle()
	var errs []error
	for _, r := range all {
		if r.Rec.Poll.Broken != nil || len(r.Rec.Subscribers) == 0 {
			continue
		}
		eff := effectiveInterval(st.PollInterval, r.Rec.Poll.XPollIntervalS)
		arm := eff != r.Rec.Poll.IntervalS
		if arm {
			_, _, err := updateRecord(ctx, kv, sc, r.Key, func(cur *RepoRecord) (*RepoRecord, error) {
				if cur == nil || cur.Poll.IntervalS == eff {
					return nil, bus.ErrNoChange
				}
				cur.Poll.IntervalS = eff
				return cur, nil
			})
			if err != nil {
				errs = append(errs, err)
				continue
			}
		} else if stream != nil {
			sched, _, err := s.schedSubjects(sc, r.Key)
			if err == nil {
				arm, err = scheduleMissing(ctx, stream, sched)
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if arm {
			if err := s.arm(ctx, sc, r.Key, eff); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// scheduleMissing reports whether the schedule message sched is gone
// from stream: a fire found the installation inactive and did not re-arm
// it, so a (re)activation must.
func scheduleMissing(ctx context.Context, stream jetstream.Stream, sched string) (bool, error) {
	_, err := stream.GetLastMsgForSubject(ctx, sched)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true, nil
	}
	return false, err
}

// scheduleKeys lists the record keys of a scope that have a schedule
// message (tests and the import summary).
func (s *subscriptions) scheduleKeys(ctx context.Context, sc binding.Scope) ([]string, error) {
	all, err := listRecords(ctx, s.runner.KV(), sc)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range all {
		sched, _, err := s.schedSubjects(sc, r.Key)
		if err != nil {
			return nil, err
		}
		if _, err := s.streamHandle().GetLastMsgForSubject(ctx, sched); err == nil {
			out = append(out, r.Key)
		}
	}
	slices.Sort(out)
	return out, nil
}
