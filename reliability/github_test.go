package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// TestGitHubFaultsPollingCatchesUp lets the real poll schedules (@every 1 s)
// of five subscriptions run against a fake GitHub that answers each
// repository's events feed with one kind of fault: 500s, a 429 with
// Retry-After, a 403 rate limit with X-RateLimit-Reset, responses slower
// than the GitHub timeout, and connection resets. New events arrive during
// the faults. Then the faults end. Checked: no events request reaches a
// rate-limited repository before its reset or retry time, the service
// never stops, and afterwards every new event is pushed exactly once.
//
// githubkit's own tests prove the arithmetic with a fired poll at a time
// (TestAT33RateLimits, TestAT34Backoff, TestAT35Broken, TestAT31AtLeastOnce,
// TestErrorMapping, TestNetworkErrors); this one runs the schedules for real.
func TestGitHubFaultsPollingCatchesUp(t *testing.T) {
	t.Parallel() // waits on timers, not the CPU
	srv := bustest.NewServer(t)
	s := newStack(t, srv.Conn(t))
	run := s.start(githubkit.Plugin, srv.Conn(t), 1)
	rateReset := time.Now().Add(6 * time.Second).Truncate(time.Second)
	faults := map[string][]fakegithub.Fault{
		"http500":    {{Status: 500, Times: 3}},
		"retryafter": {{Status: 429, Header: http.Header{"Retry-After": {"4"}}, Times: 1}},
		"ratelimit": {{Status: 403, Times: 1, Body: `{"message":"API rate limit exceeded"}`,
			Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(rateReset.Unix(), 10)}}}},
		"slow":  {{Delay: 4 * time.Second, Times: 2}},
		"reset": {{Reset: true, Times: 2}},
	}
	names := []string{"http500", "retryafter", "ratelimit", "slow", "reset"}
	ins := map[string]*install{}
	var id int64 = 9000
	for _, name := range names {
		in := s.newInstall("ghf-" + name)
		in.cfg[githubkit.Plugin] = s.githubConfig(in.name, 1)
		ins[name] = in
		id++
		s.repoWithEvent("acme/"+name, id)
		s.publishAttach(in, githubkit.Plugin, true)
	}
	s.waitLifecycle(githubkit.Plugin)
	for _, name := range names {
		if _, err := s.ghCmd(ins[name], s.newID(), "sub acme/"+name); err != nil {
			t.Fatal(err)
		}
	}
	// faults on, then new events
	eventsPath := func(name string) string { return "/repos/acme/" + name + "/events" }
	for _, name := range names {
		for _, f := range faults[name] {
			f.Path = eventsPath(name)
			s.gh.Inject(f)
		}
	}
	requests := func(name string) int { return s.gh.Count(s.gh.PathPrefix(eventsPath(name))) }
	before := map[string]int{}
	for _, name := range names {
		before[name] = requests(name)
	}
	lastID := map[string]int64{}
	for _, name := range names {
		for _, fixture := range []string{"watch", "issue_opened"} {
			id++
			s.gh.AddEvents("acme/"+name, fakegithub.Event(fixture, id))
			lastID[name] = id
		}
	}
	// Rate limits are respected: once the limited answer was given, no
	// request until the reset (resp. Retry-After) has passed. The rate
	// limit also pauses other repositories polled with the same token;
	// each installation here has its own.
	quiet := map[string]func(answered time.Time) time.Time{
		"ratelimit":  func(time.Time) time.Time { return rateReset },
		"retryafter": func(at time.Time) time.Time { return at.Add(4 * time.Second) },
	}
	watching := map[string]*quietWatch{}
	limitDeadline := time.Now().Add(30 * time.Second)
	for len(watching) < len(quiet) || time.Now().Before(maxUntil(watching)) {
		for name, q := range quiet {
			n := requests(name)
			w := watching[name]
			switch {
			case w == nil && n > before[name]:
				// the limited answer has just been given (polled every 20 ms)
				watching[name] = &quietWatch{n: n, until: q(time.Now()).Add(-200 * time.Millisecond)}
			case w != nil && n != w.n && time.Now().Before(w.until):
				t.Errorf("%s: an events request before %s", name, w.until.Format(time.StampMilli))
				w.n = n
			}
		}
		if time.Now().After(limitDeadline) {
			t.Fatalf("limited answers not seen: %v", watching)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// everything catches up: the record's head is the newest event and
	// every subscriber's cursor is there; no push twice
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	kv, err := s.js.KeyValue(ctx, bus.Bucket(githubkit.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	record := func(name string) githubkit.RepoRecord {
		k, _ := bus.Key(ins[name].scope(githubkit.Plugin), githubkit.KindRepo, githubkit.RepoKey("acme/"+name))
		var r githubkit.RepoRecord
		if e, err := kv.Get(ctx, k); err == nil {
			_ = json.Unmarshal(e.Value(), &r)
		}
		return r
	}
	for _, name := range names {
		want := strconv.FormatInt(lastID[name], 10)
		bustest.EventuallyWithin(t, 60*time.Second, name+" caught up", func() bool {
			r := record(name)
			if r.Head == nil || *r.Head != want || len(r.Subscribers) == 0 {
				return false
			}
			for _, sub := range r.Subscribers {
				if sub.Cursor == nil || *sub.Cursor != want {
					return false
				}
			}
			return true
		})
	}
	s.waitConsumerDrained(t, githubkit.StreamName)
	pushes := func(name string) map[string]int {
		keys := map[string]int{}
		for _, c := range s.host.Sends() {
			if c.Scope == ins[name].scope(githubkit.Plugin) {
				keys[c.IdempotencyKey]++
			}
		}
		return keys
	}
	var dup, total int
	for _, name := range names {
		for k, n := range pushes(name) {
			total++
			if n > 1 {
				dup += n - 1
				t.Errorf("%s: %d sends under %s", name, n, k)
			}
		}
	}
	select {
	case <-run.run.Done():
		t.Fatalf("the service stopped: %v", run.run.Err())
	default:
	}
	if !run.run.Ready() {
		t.Error("the service is not ready after the faults")
	}
	var still []string
	for _, name := range names {
		if r := record(name); r.Poll.TransientFailures != 0 {
			still = append(still, fmt.Sprintf("%s:%d", name, r.Poll.TransientFailures))
		}
	}
	if len(still) > 0 {
		t.Errorf("failure counters not reset after recovery: %s", strings.Join(still, " "))
	}
	t.Logf("FIGURE github-faults: 5 fault kinds (500 x3, 429 Retry-After, 403 rate limit with reset, slow > timeout x2, reset x2), %d push messages, %d duplicates, 0 requests before a reset, service up", total, dup)
}

// quietWatch is a rate-limited repository: its request count when the
// limited answer was seen, and until when no further request may come.
type quietWatch struct {
	n     int
	until time.Time
}

func maxUntil(m map[string]*quietWatch) time.Time {
	var out time.Time
	for _, w := range m {
		if w.until.After(out) {
			out = w.until
		}
	}
	return out
}
