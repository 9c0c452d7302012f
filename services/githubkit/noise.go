package githubkit

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Less noise: quiet hours and digests per chat. A chat's choice
// and the events held for it are one record, <scope>.noise.<chat sid>; the
// summary is sent when a one-shot JetStream schedule,
// <prefix>.githubkit.nsched.<scope>.<chat sid>, fires onto
// <prefix>.githubkit.flush.<scope>.<chat sid> (stream NoiseStreamName,
// consumer NoiseConsumer). No timer runs in the process: any replica takes
// the fire, and a restart loses nothing.
const (
	// kindNoise is the key kind of a chat's quiet hours, digest and held
	// events: <scope>.noise.<chat sid>.
	kindNoise = "noise"
	// KindNoiseSched is the one-shot schedule of a chat's next summary:
	// <prefix>.githubkit.nsched.<scope>.<chat sid>.
	KindNoiseSched = "nsched"
	// KindNoiseFlush is the subject a chat's summary schedule fires on:
	// <prefix>.githubkit.flush.<scope>.<chat sid>.
	KindNoiseFlush = "flush"
	// NoiseStreamName holds the summary schedules and their fires.
	NoiseStreamName = "LANGBOT_GITHUBKIT_NOISE"
	// NoiseConsumer sends the summaries, shared by the replicas.
	NoiseConsumer = "githubkit-flush"

	// heldKept bounds the events held for one chat; more are counted
	// (chatNoise.More) and the summary says how many were left out.
	heldKept = 30
	// heldTextBytes bounds one held entry (an event line and its link).
	heldTextBytes = 1024
	// Digest intervals a chat may choose.
	minDigest = 15 * time.Minute
	maxDigest = 24 * time.Hour
	// flushRetries is how often a failed summary send is retried.
	flushRetries = 10
	// rearmFloor is how far past a fire, by the server's clock, a summary
	// that is still quiet is re-armed at the least (rearmAt).
	rearmFloor = time.Minute
)

// quietHours is a daily window in the installation's zone, minutes after
// midnight; From > To wraps midnight (22:00-07:00).
type quietHours struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// heldEvent is one event line held for a chat's summary.
type heldEvent struct {
	Repo string `json:"repo"`
	Text string `json:"text"` // the event's line and link
	Seq  uint64 `json:"seq"`
	// N is how many events Text carries.
	N int `json:"n"`
	// Key is the idempotency key the message would have had: a retried
	// poll or redelivery holds it once.
	Key string `json:"key"`
}

// chatNoise is one chat's record: its choices, where its summaries go,
// and what is held for the next one.
type chatNoise struct {
	V       int         `json:"v"`
	Quiet   *quietHours `json:"quiet,omitempty"`
	DigestS int         `json:"digest_s,omitempty"`
	// Chat is where the summary goes (the chat of the sub that held).
	Chat Identity    `json:"chat"`
	Held []heldEvent `json:"held,omitempty"`
	// More counts events held beyond heldKept entries.
	More int `json:"more,omitempty"`
	// Seq numbers held events; a summary removes those it carried.
	Seq uint64 `json:"seq"`
	// Since is when the oldest held event came; FlushAt when the armed
	// schedule fires; LastFlush when the last summary went out.
	Since     *time.Time `json:"since,omitempty"`
	FlushAt   *time.Time `json:"flush_at,omitempty"`
	LastFlush *time.Time `json:"last_flush,omitempty"`
}

// holds reports whether the chat holds events now (in zone loc).
func (c *chatNoise) holds(now time.Time, loc *time.Location) bool {
	return c != nil && (c.DigestS > 0 || c.Quiet.in(now, loc))
}

// in reports whether now falls in the quiet window.
func (q *quietHours) in(now time.Time, loc *time.Location) bool {
	if q == nil || q.From == q.To {
		return false
	}
	l := now.In(loc)
	m := l.Hour()*60 + l.Minute()
	if q.From < q.To {
		return m >= q.From && m < q.To
	}
	return m >= q.From || m < q.To
}

// end returns when the quiet window that holds now ends: the next To in
// loc (time.Date normalises a DST gap).
func (q *quietHours) end(now time.Time, loc *time.Location) time.Time {
	l := now.In(loc)
	at := time.Date(l.Year(), l.Month(), l.Day(), q.To/60, q.To%60, 0, 0, loc)
	if !at.After(now) {
		at = time.Date(l.Year(), l.Month(), l.Day()+1, q.To/60, q.To%60, 0, 0, loc)
	}
	return at
}

// nextFlush is when the summary of what c holds goes out: the end of the
// quiet window when quiet, else the digest's next tick.
func (c *chatNoise) nextFlush(now time.Time, loc *time.Location) time.Time {
	if c.Quiet.in(now, loc) {
		return c.Quiet.end(now, loc)
	}
	if c.DigestS > 0 {
		every := time.Duration(c.DigestS) * time.Second
		if c.LastFlush != nil && c.LastFlush.Add(every).After(now) {
			return c.LastFlush.Add(every)
		}
		return now.Add(every)
	}
	return now
}

// noise is the part that holds pushed events of quiet and digest chats
// and sends their summaries.
type noise struct {
	*shared
}

func chatNoises(kv *bus.KV) *bus.Records[chatNoise] {
	return bus.NewRecords(kv, kindNoise, bus.RecordsConfig[chatNoise]{})
}

// hold keeps text (a push message's event lines, without its header) of
// repo for chat instead of sending it, when the chat is quiet now or takes
// digests; held reports that it did. The first event held arms the
// chat's summary schedule.
// zone is called only for a chat that has a record, so a push to a chat
// without quiet hours or a digest costs one state read.
func (n *noise) hold(ctx context.Context, sc binding.Scope, chat Identity, zone func() *time.Location, repo, text, key string, events int) (held bool, err error) {
	kv := n.runner.KV()
	cur, _, err := chatNoises(kv).Get(ctx, sc, chat.SID())
	if err != nil || cur == nil {
		return false, err
	}
	now, loc := n.now(), zone()
	if !cur.holds(now, loc) {
		return false, nil
	}
	if len(text) > heldTextBytes {
		text = strings.ToValidUTF8(text[:heldTextBytes], "") + "…"
	}
	var arm *time.Time
	_, _, err = chatNoises(kv).Update(ctx, sc, func(c *chatNoise) (*chatNoise, error) {
		held, arm = false, nil
		if !c.holds(now, loc) {
			return nil, bus.ErrNoChange
		}
		held = true
		for _, h := range c.Held {
			if h.Key == key {
				return nil, bus.ErrNoChange
			}
		}
		c.Chat = chat
		c.Seq++
		if len(c.Held) < heldKept {
			c.Held = append(c.Held, heldEvent{Repo: repo, Text: text, Seq: c.Seq, Key: key, N: events})
		} else {
			c.More += events
		}
		if c.Since == nil {
			t := now.UTC()
			c.Since = &t
		}
		if c.FlushAt == nil || !c.FlushAt.After(now) {
			at := c.nextFlush(now, loc).UTC().Truncate(time.Second)
			c.FlushAt, arm = &at, &at
		}
		return c, nil
	}, chat.SID())
	if err != nil || !held {
		return false, err
	}
	if arm != nil {
		if err := n.armFlush(ctx, sc, chat.SID(), *arm); err != nil {
			// held but not armed: the next held event (FlushAt passed)
			// or a command arms it again
			n.log.ErrorContext(ctx, "noise: summary schedule failed", "scope", sc.String(), "err", err)
		}
	}
	n.metrics.push.WithLabelValues("held_quiet").Inc()
	return true, nil
}

// armFlush publishes (or replaces) the chat's one-shot summary schedule.
func (n *noise) armFlush(ctx context.Context, sc binding.Scope, sid string, at time.Time) error {
	sched, err := n.subj.Internal(Plugin, KindNoiseSched, sc, sid)
	if err != nil {
		return err
	}
	fire, err := n.subj.Internal(Plugin, KindNoiseFlush, sc, sid)
	if err != nil {
		return err
	}
	return bus.ScheduleAt(ctx, n.runner.JetStream(), sched, fire, at, []byte(`{"v":1}`))
}

// stream declares the stream of summary schedules and their fires.
func (n *noise) stream() bus.StreamSpec {
	return bus.StreamSpec{
		Name:              NoiseStreamName,
		Subjects:          []string{n.subj.InternalAll(Plugin, KindNoiseSched), n.subj.InternalAll(Plugin, KindNoiseFlush)},
		Replicas:          n.cfg.Replicas,
		Schedules:         true,
		MaxMsgsPerSubject: 1,
	}
}

// consumer declares the summary consumer, shared by the replicas.
func (n *noise) consumer() bus.Consumer {
	return bus.Consumer{FiredConfig: bus.FiredConfig{
		Stream: NoiseStreamName, Durable: NoiseConsumer, Filter: n.subj.InternalAll(Plugin, KindNoiseFlush),
		Workers: 4, AckWait: n.cfg.AckWait, MaxDeliver: flushRetries + 1, Timeout: n.cfg.HostTimeout + 10*time.Second,
	}, Handler: n.handleFlush}
}

// purge drops a removed scope's summary schedules and fires.
func (n *noise) purge(ctx context.Context, sc binding.Scope) error {
	st := n.runner.Stream(NoiseStreamName)
	if st == nil {
		return errors.New("githubkit: noise stream not ready")
	}
	return bus.PurgeSubjects(ctx, st, n.subj.InternalScope(Plugin, KindNoiseSched, sc), n.subj.InternalScope(Plugin, KindNoiseFlush, sc))
}

func (n *noise) handleFlush(ctx context.Context, f *bus.Fired) {
	opts := []trace.SpanStartOption{trace.WithAttributes(bus.AttrScope.String(f.Scope.String()))}
	if f.Origin.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: f.Origin}))
	}
	ctx, span := n.tracer.Start(ctx, "githubkit.noise.flush", opts...)
	defer span.End()
	if f.Kind != KindNoiseFlush || len(f.IDs) != 1 {
		_ = f.Term()
		return
	}
	outcome, retry := n.flush(ctx, f)
	span.SetAttributes(attribute.String("githubkit.flush.outcome", outcome))
	if retry && f.Delivered <= flushRetries {
		_ = f.Nak(5 * time.Second)
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = f.Ack(actx)
}

// flush sends a chat's summary of what it holds, one message, and forgets
// the events it carried; when the chat is still quiet (a window changed
// since the schedule was armed) it re-arms for the window's end.
func (n *noise) flush(ctx context.Context, f *bus.Fired) (outcome string, retry bool) {
	sc, sid := f.Scope, f.IDs[0]
	a, err := n.runner.Authority(ctx, sc)
	if err != nil {
		return "store", true
	}
	if a == nil || a.State != bus.StateActive {
		return "inactive", false
	}
	raw, err := n.runner.OpenConfig(sc, a)
	if err != nil {
		return "config", false
	}
	st, _ := n.settings(raw)
	kv := n.runner.KV()
	cur, _, err := chatNoises(kv).Get(ctx, sc, sid)
	if err != nil {
		return "store", true
	}
	if cur == nil || len(cur.Held) == 0 && cur.More == 0 {
		return "empty", false
	}
	now, loc := n.now(), st.Zone
	if cur.Quiet.in(now, loc) {
		at := rearmAt(cur.Quiet.end(now, loc), f.Published)
		if _, _, err := chatNoises(kv).Update(ctx, sc, func(c *chatNoise) (*chatNoise, error) {
			c.FlushAt = &at
			return c, nil
		}, sid); err != nil {
			return "store", true
		}
		if err := n.armFlush(ctx, sc, sid, at); err != nil {
			return "schedule", true
		}
		return "still_quiet", false
	}
	x := n.texts(st.Language)
	text := summaryText(x, cur, loc)
	last := cur.Seq
	sctx, cancel := context.WithTimeout(ctx, n.cfg.HostTimeout)
	err = n.runner.Host().SendMessage(sctx, a.Binding, wire.SendMessage{
		BotUUID: cur.Chat.BotUUID, TargetType: cur.Chat.TargetType, TargetID: cur.Chat.TargetID, MessageChain: wire.Plain(text),
	}, "githubkit:"+sc.String()+":noise:"+sid+":"+strconv.FormatUint(last, 10))
	cancel()
	if err != nil {
		n.metrics.push.WithLabelValues("failed").Inc()
		return "send_failed", !errors.Is(err, wire.ErrBindingRefused)
	}
	n.metrics.push.WithLabelValues("summary").Inc()
	var arm *time.Time
	if _, _, err := chatNoises(kv).Update(ctx, sc, func(c *chatNoise) (*chatNoise, error) {
		arm = nil
		keep := c.Held[:0:0]
		for _, h := range c.Held {
			if h.Seq > last {
				keep = append(keep, h)
			}
		}
		c.Held, c.More, c.FlushAt, c.Since = keep, 0, nil, nil
		t := now.UTC()
		c.LastFlush = &t
		if len(keep) > 0 {
			c.Since = &t
			at := c.nextFlush(now, loc).UTC().Truncate(time.Second)
			c.FlushAt, arm = &at, &at
		}
		return c, nil
	}, sid); err != nil {
		// sent; the same summary is sent again under the same key, which
		// the host's idempotency answers
		return "store", true
	}
	if arm != nil {
		if err := n.armFlush(ctx, sc, sid, *arm); err != nil {
			return "schedule", true
		}
	}
	return "sent", false
}

// rearmAt is when a summary that fired in its chat's quiet hours fires
// again: at the window's end by the service's clock (end), but never less
// than rearmFloor after the fire by the server's clock (fired, the fired
// message's timestamp). The server fires a schedule by its own clock, so
// a server clock ahead of the service's fires early; re-armed at the
// same end, which the server has passed, the schedule would fire again at
// once, and again, until the service's clock reaches it.
func rearmAt(end, fired time.Time) time.Time {
	if floor := fired.Add(rearmFloor); end.Before(floor) {
		end = floor
	}
	return end.UTC().Truncate(time.Second)
}

// summaryText is one chat's summary: a header (quiet hours or digest),
// the held events grouped by repository in the order they came, and how
// many more were left out.
func summaryText(x texts, c *chatNoise, loc *time.Location) string {
	n := c.More
	for _, h := range c.Held {
		n += max(h.N, 1)
	}
	key := "noise.summary_quiet"
	if c.DigestS > 0 {
		key = "noise.summary_digest"
	}
	since := ""
	if c.Since != nil {
		since = c.Since.In(loc).Format("2006-01-02 15:04")
	}
	var b strings.Builder
	b.WriteString(x.T(key, "n", strconv.Itoa(n), "since", since))
	var repos []string
	by := map[string][]string{}
	for _, h := range c.Held {
		if _, ok := by[h.Repo]; !ok {
			repos = append(repos, h.Repo)
		}
		by[h.Repo] = append(by[h.Repo], h.Text)
	}
	for _, r := range repos {
		b.WriteString("\n" + x.T("noise.summary_repo", "repo", r))
		for _, t := range by[r] {
			b.WriteString("\n" + t)
		}
	}
	if c.More > 0 {
		b.WriteString("\n" + x.T("noise.summary_more", "n", strconv.Itoa(c.More)))
	}
	return b.String()
}

// holdSends holds the messages of a webhook delivery for the chats that
// hold events now and returns the others, to send.
func (n *noise) holdSends(ctx context.Context, sc binding.Scope, a *bus.Authority, repo string, sends []hookSend) ([]hookSend, error) {
	var loc *time.Location
	zone := func() *time.Location {
		if loc == nil {
			loc = time.UTC // a config that cannot be opened: UTC
			if raw, err := n.runner.OpenConfig(sc, a); err == nil {
				st, _ := n.settings(raw)
				loc = st.Zone
			}
		}
		return loc
	}
	out := sends[:0:0]
	for _, sd := range sends {
		held, err := n.hold(ctx, sc, sd.sub.Identity, zone, repo, pushBody(sd.text), sd.idem, 1)
		if err != nil {
			return nil, err
		}
		if !held {
			out = append(out, sd)
		}
	}
	return out, nil
}

// pushBody is the event lines of a push message, without its header line.
func pushBody(text string) string {
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		return text[i+1:]
	}
	return text
}
