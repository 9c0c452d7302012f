package githubkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
)

// ImportOptions configure Import (lbctl import githubkit).
type ImportOptions struct {
	// Scope is the installation the document belongs to.
	Scope binding.Scope
	// Doc is the original plugin's stored subscription document.
	Doc []byte
	// DryRun computes and returns the plan without writing.
	DryRun bool
	// Prefix is the subject prefix; default "langbot".
	Prefix string
	// Replicas of the stream if Import has to create it; default 1.
	Replicas int
	// Now is the clock; nil = time.Now.
	Now func() time.Time
}

// ImportSummary reports what Import did (or would do, for a dry run).
type ImportSummary struct {
	ReposCreated, ReposMerged, ReposUnchanged, ReposSkipped  int
	SubscribersAdded, SubscribersPresent, SubscribersSkipped int
	// Notes are the parser's skip and drop reports; Plan has one line per
	// record.
	Notes []string
	Plan  []string
}

func (s *ImportSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "repos: %d created, %d merged, %d unchanged, %d skipped\n", s.ReposCreated, s.ReposMerged, s.ReposUnchanged, s.ReposSkipped)
	fmt.Fprintf(&b, "subscribers: %d added, %d already present, %d skipped\n", s.SubscribersAdded, s.SubscribersPresent, s.SubscribersSkipped)
	for _, l := range s.Plan {
		b.WriteString("  " + l + "\n")
	}
	for _, n := range s.Notes {
		b.WriteString("note: " + n + "\n")
	}
	return b.String()
}

// Import adopts the original plugin's stored subscriptions into a scope
// (spec §6.4): it parses the whole document first, checks the scope's
// authority and the caps against existing plus imported data, then writes
// each record by compare-and-set and arms its schedule. A second run
// changes nothing. Any refusal wraps ErrImport and writes nothing.
func Import(ctx context.Context, js jetstream.JetStream, o ImportOptions) (*ImportSummary, error) {
	if o.Scope.IsZero() {
		return nil, fmt.Errorf("%w: no scope", ErrImport)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	plan, err := ParseImport(o.Doc, now().UTC())
	if err != nil {
		return nil, err
	}
	subj, err := wire.NewSubjects(o.Prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrImport, err)
	}
	bucket, err := js.KeyValue(ctx, bus.Bucket(Plugin))
	if err != nil {
		return nil, fmt.Errorf("%w: the githubkit bucket is not there (has the service run?): %w", ErrImport, err)
	}
	a, err := bus.NewAuthorityStore(bucket, nil, nil, now).Get(ctx, o.Scope)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the authority: %w", ErrImport, err)
	}
	if a == nil || a.State == bus.StateRemoved {
		return nil, fmt.Errorf("%w: the installation has no authority or was removed", ErrImport)
	}
	st, _ := NormalizeSettings(a.Config, true)
	kv := bus.NewKV(js.Conn(), bucket)
	defer kv.Close()
	existing, err := listRecords(ctx, kv, o.Scope)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrImport, err)
	}
	byKey := map[string]*storedRecord{}
	for _, r := range existing {
		byKey[r.Key] = r
	}

	sum := &ImportSummary{Notes: plan.Notes}
	for _, n := range plan.Notes {
		switch {
		case strings.HasPrefix(n, "repo \""):
			sum.ReposSkipped++
		case strings.Contains(n, "skipped"):
			sum.SubscribersSkipped++
		}
	}
	var excess []string
	total := len(existing)
	for _, ir := range plan.Records {
		cur := byKey[ir.Key]
		if cur == nil {
			total++
		}
		n := len(ir.Record.Subscribers)
		added := n
		if cur != nil {
			n = len(cur.Rec.Subscribers)
			added = 0
			for _, s := range ir.Record.Subscribers {
				if cur.Rec.Find(s.Identity) == nil {
					n++
					added++
				}
			}
		}
		sum.SubscribersAdded += added
		sum.SubscribersPresent += len(ir.Record.Subscribers) - added
		switch {
		case cur == nil:
			sum.ReposCreated++
			sum.Plan = append(sum.Plan, fmt.Sprintf("create %s with %d subscriber(s)", ir.Record.FullName, added))
		case added > 0 || (cur.Rec.Head == nil && ir.Record.Head != nil):
			sum.ReposMerged++
			sum.Plan = append(sum.Plan, fmt.Sprintf("merge into %s: %d subscriber(s) added", cur.Rec.FullName, added))
		default:
			sum.ReposUnchanged++
		}
		if n > events.MaxSubscribersRepo {
			excess = append(excess, fmt.Sprintf("%s would have %d subscribers (max %d)", ir.Record.FullName, n, events.MaxSubscribersRepo))
		}
	}
	if total > events.MaxReposPerInst {
		excess = append(excess, fmt.Sprintf("the installation would follow %d repositories (max %d)", total, events.MaxReposPerInst))
	}
	if len(excess) > 0 {
		return sum, fmt.Errorf("%w: caps exceeded: %s", ErrImport, strings.Join(excess, "; "))
	}
	if o.DryRun {
		return sum, nil
	}

	stream, err := js.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = bus.EnsureStream(ctx, js, bus.StreamSpec{
			Name: StreamName, Subjects: []string{subj.InternalAll(Plugin, KindSched), subj.InternalAll(Plugin, KindPoll)},
			Replicas: o.Replicas, Schedules: true, MaxMsgsPerSubject: 1,
		})
	}
	if err != nil {
		return sum, fmt.Errorf("githubkit: import: stream: %w", err)
	}
	for _, ir := range plan.Records {
		changed := false
		interval := 0
		rec, _, err := updateRecord(ctx, kv, o.Scope, ir.Key, func(r *RepoRecord) (*RepoRecord, error) {
			changed = false
			if r == nil {
				n := ir.Record
				n.Subscribers = cloneSubs(ir.Record.Subscribers)
				interval = effectiveInterval(st.PollInterval, 0)
				n.Poll = PollState{IntervalS: interval}
				changed = true
				return &n, nil
			}
			interval = effectiveInterval(st.PollInterval, r.Poll.XPollIntervalS)
			if r.Head == nil && ir.Record.Head != nil {
				h := *ir.Record.Head
				r.Head = &h
				changed = true
			}
			for _, s := range cloneSubs(ir.Record.Subscribers) {
				if r.Find(s.Identity) == nil {
					r.Subscribers = append(r.Subscribers, s)
					changed = true
				}
			}
			if !changed {
				return nil, bus.ErrNoChange
			}
			if r.Poll.IntervalS == 0 {
				r.Poll.IntervalS = interval
			}
			return r, nil
		})
		if err != nil {
			return sum, fmt.Errorf("githubkit: import: write %s: %w", ir.Record.FullName, err)
		}
		if rec == nil || rec.Poll.Broken != nil {
			continue
		}
		sched, err := subj.Internal(Plugin, KindSched, o.Scope, ir.Key)
		if err != nil {
			return sum, err
		}
		poll, err := subj.Internal(Plugin, KindPoll, o.Scope, ir.Key)
		if err != nil {
			return sum, err
		}
		if !changed {
			if _, err := stream.GetLastMsgForSubject(ctx, sched); err == nil {
				continue
			}
		}
		if err := bus.ScheduleEvery(ctx, js, sched, poll, time.Duration(interval)*time.Second, []byte(`{"v":1}`)); err != nil {
			return sum, fmt.Errorf("githubkit: import: schedule %s: %w", ir.Record.FullName, err)
		}
	}
	return sum, nil
}

func cloneSubs(in []*Subscriber) []*Subscriber {
	out := make([]*Subscriber, len(in))
	for i, s := range in {
		c := *s
		if s.Cursor != nil {
			v := *s.Cursor
			c.Cursor = &v
		}
		out[i] = &c
	}
	return out
}
