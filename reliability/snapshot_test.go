package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// snapshot is everything the services stored, grouped by scope: for each
// scope, "<bucket> <key>" -> KV revision and "<stream> <subject>" -> message
// count (plus the stream's last sequence on that subject's scope). Two equal
// snapshots of a scope mean nothing of it changed in between.
type snapshot map[string]map[string]uint64

// buckets are the KV buckets of the three services.
var buckets = []string{
	bus.Bucket(githubkit.Plugin), bus.DedupeBucket(githubkit.Plugin),
	bus.Bucket(takeover.Plugin), bus.DedupeBucket(takeover.Plugin),
	bus.Bucket(schenotify.Plugin), bus.DedupeBucket(schenotify.Plugin),
}

// streams are the plain streams of the services, with the plugin owning
// their subjects.
var streams = func() map[string]string {
	m := map[string]string{
		githubkit.StreamName:  githubkit.Plugin,
		store.TimerStream:     takeover.Plugin,
		schenotify.StreamName: schenotify.Plugin,
	}
	for k := range store.HistoryShards {
		m[store.HistoryStream(k)] = takeover.Plugin
	}
	return m
}()

// take reads a snapshot of every bucket and stream (missing ones are
// empty).
func (s *stack) take(ctx context.Context) (snapshot, error) {
	snap := snapshot{}
	add := func(scope, item string, v uint64) {
		if snap[scope] == nil {
			snap[scope] = map[string]uint64{}
		}
		snap[scope][item] = v
	}
	for _, b := range buckets {
		kv, err := s.js.KeyValue(ctx, b)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", b, err)
		}
		w, err := kv.WatchAll(ctx, jetstream.MetaOnly())
		if err != nil {
			return nil, fmt.Errorf("watch %s: %w", b, err)
		}
		for e := range w.Updates() {
			if e == nil {
				break
			}
			sc, _, _, err := bus.ParseKey(e.Key())
			if err != nil {
				_ = w.Stop()
				return nil, fmt.Errorf("%s: unscoped key %q", b, e.Key())
			}
			v := e.Revision()
			if e.Operation() != jetstream.KeyValuePut {
				v = 0 // deleted or purged: present as a marker only
			}
			add(sc.String(), b+" "+e.Key(), v)
		}
		_ = w.Stop()
	}
	for name, plugin := range streams {
		st, err := s.js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", name, err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(">"))
		if err != nil {
			return nil, fmt.Errorf("stream %s info: %w", name, err)
		}
		for subj, n := range info.State.Subjects {
			_, sc, _, err := wire.Subjects{}.ParseInternal(plugin, subj)
			if err != nil {
				return nil, fmt.Errorf("%s: unscoped subject %q", name, subj)
			}
			add(sc.String(), name+" "+subj, n)
		}
	}
	return snap, nil
}

// mustTake is take with a bounded context, retried briefly (a bucket may be
// created by a starting service meanwhile).
func (s *stack) mustTake() snapshot {
	s.t.Helper()
	var last error
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		snap, err := s.take(ctx)
		cancel()
		if err == nil {
			return snap
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("snapshot: %v", last)
	return nil
}

// changed lists the scopes whose state differs between a and b, with one
// differing item each for the message.
func changed(a, b snapshot) map[string]string {
	out := map[string]string{}
	for sc, items := range a {
		for k, v := range items {
			if w, ok := b[sc][k]; !ok || w != v {
				out[sc] = fmt.Sprintf("%s: %d -> %d (present %v)", k, v, w, ok)
				break
			}
		}
	}
	for sc, items := range b {
		if _, done := out[sc]; done {
			continue
		}
		for k, v := range items {
			if _, ok := a[sc][k]; !ok {
				out[sc] = fmt.Sprintf("%s: new (%d)", k, v)
				break
			}
		}
	}
	return out
}

// keysOf lists the items of one scope, sorted.
func (s snapshot) keysOf(scope string) []string {
	var out []string
	for k := range s[scope] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// only reports the live items of a scope (delete and purge markers left
// out) not matching any allowed prefix.
func (s snapshot) only(scope string, allowed ...string) []string {
	var out []string
next:
	for _, k := range s.keysOf(scope) {
		if s[scope][k] == 0 {
			continue
		}
		for _, a := range allowed {
			if strings.HasPrefix(k, a) {
				continue next
			}
		}
		out = append(out, k)
	}
	return out
}
