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
	t, err := openImportTarget(ctx, js, o.Scope, now)
	if err != nil {
		return nil, err
	}
	defer t.kv.Close()
	existing, err := listRecords(ctx, t.kv, o.Scope)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrImport, err)
	}
	sum, err := planImport(plan, existing)
	if err != nil || o.DryRun {
		return sum, err
	}
	if err := t.openStream(ctx, subj, o.Replicas); err != nil {
		return sum, err
	}
	for _, ir := range plan.Records {
		if err := t.adopt(ctx, subj, ir); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// importTarget is the scope Import writes into: its records, the
// settings its schedules follow and, once the plan passed, the stream the
// schedules live on.
type importTarget struct {
	js       jetstream.JetStream
	scope    binding.Scope
	settings Settings
	kv       *bus.KV
	stream   jetstream.Stream
}

// openImportTarget checks that the scope has a live authority and opens
// its records. The caller closes t.kv.
func openImportTarget(ctx context.Context, js jetstream.JetStream, sc binding.Scope, now func() time.Time) (*importTarget, error) {
	bucket, err := js.KeyValue(ctx, bus.Bucket(Plugin))
	if err != nil {
		return nil, fmt.Errorf("%w: the githubkit bucket is not there (has the service run?): %w", ErrImport, err)
	}
	a, err := bus.NewAuthorityStore(bucket, nil, nil, now).Get(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the authority: %w", ErrImport, err)
	}
	if a == nil || a.State == bus.StateRemoved {
		return nil, fmt.Errorf("%w: the installation has no authority or was removed", ErrImport)
	}
	st, _ := NormalizeSettings(a.Config, true)
	return &importTarget{js: js, scope: sc, settings: st, kv: bus.NewKV(js.Conn(), bucket)}, nil
}

// planImport counts what the plan would do against the existing records
// and refuses, with the summary so far, when a cap would be exceeded.
func planImport(plan *ImportPlan, existing []*storedRecord) (*ImportSummary, error) {
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
		if n := sum.count(ir, cur); n > events.MaxSubscribersRepo {
			excess = append(excess, fmt.Sprintf("%s would have %d subscribers (max %d)", ir.Record.FullName, n, events.MaxSubscribersRepo))
		}
	}
	if total > events.MaxReposPerInst {
		excess = append(excess, fmt.Sprintf("the installation would follow %d repositories (max %d)", total, events.MaxReposPerInst))
	}
	if len(excess) > 0 {
		return sum, fmt.Errorf("%w: caps exceeded: %s", ErrImport, strings.Join(excess, "; "))
	}
	return sum, nil
}

// count adds one imported record to the summary, merged into cur (nil
// when the record is new), and returns how many subscribers the record
// would then have.
func (sum *ImportSummary) count(ir ImportRecord, cur *storedRecord) int {
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
	return n
}

// openStream opens the schedule stream, creating it when the service has
// not run yet.
func (t *importTarget) openStream(ctx context.Context, subj wire.Subjects, replicas int) error {
	stream, err := t.js.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = bus.EnsureStream(ctx, t.js, scheduleStream(subj, replicas))
	}
	if err != nil {
		return fmt.Errorf("githubkit: import: stream: %w", err)
	}
	t.stream = stream
	return nil
}

// adopt writes one imported record and arms its poll schedule.
func (t *importTarget) adopt(ctx context.Context, subj wire.Subjects, ir ImportRecord) error {
	rec, changed, interval, err := t.write(ctx, ir)
	if err != nil {
		return fmt.Errorf("githubkit: import: write %s: %w", ir.Record.FullName, err)
	}
	if rec == nil || rec.Poll.Broken != nil {
		return nil
	}
	return t.arm(ctx, subj, ir, changed, interval)
}

// write creates the record or merges the import into it by
// compare-and-set: the head if the record has none, and the subscribers it
// lacks. It reports whether the last attempt changed the record and the
// poll interval in seconds the schedule follows.
func (t *importTarget) write(ctx context.Context, ir ImportRecord) (rec *RepoRecord, changed bool, interval int, err error) {
	rec, _, err = updateRecord(ctx, t.kv, t.scope, ir.Key, func(r *RepoRecord) (*RepoRecord, error) {
		changed = false
		if r == nil {
			n := ir.Record
			n.Subscribers = cloneSubs(ir.Record.Subscribers)
			interval = effectiveInterval(t.settings.PollInterval, 0)
			n.Poll = PollState{IntervalS: interval}
			changed = true
			return &n, nil
		}
		interval = effectiveInterval(t.settings.PollInterval, r.Poll.XPollIntervalS)
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
	return rec, changed, interval, err
}

// arm schedules the record's polls every interval seconds; an unchanged
// record whose schedule is already there keeps it.
func (t *importTarget) arm(ctx context.Context, subj wire.Subjects, ir ImportRecord, changed bool, interval int) error {
	sched, err := subj.Internal(Plugin, KindSched, t.scope, ir.Key)
	if err != nil {
		return err
	}
	poll, err := subj.Internal(Plugin, KindPoll, t.scope, ir.Key)
	if err != nil {
		return err
	}
	if !changed {
		if _, err := t.stream.GetLastMsgForSubject(ctx, sched); err == nil {
			return nil
		}
	}
	if err := bus.ScheduleEvery(ctx, t.js, sched, poll, time.Duration(interval)*time.Second, []byte(`{"v":1}`)); err != nil {
		return fmt.Errorf("githubkit: import: schedule %s: %w", ir.Record.FullName, err)
	}
	return nil
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
