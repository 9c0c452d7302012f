package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestNATSRestartEverythingResumes stops the embedded NATS server (file
// store, fsync always) while the three services hold pending work, keeps
// it down past the due time of some reminders, and starts it again on the
// same store. Nothing is re-sent by the host: the services must resume on
// their own. Then
//   - every reminder (due during the outage or after it) is delivered once;
//   - every subscription polls again and pushes a new event once;
//   - every takeover still blocks the AI and is released by its expiry
//     schedule.
//
// The per-service tests cover one service each (schenotify TestN5NATSRestart,
// githubkit TestAT43SelfResume, takeover TestRestartReadsEachInstallationBack
// and TestExpiryBySchedule); this one runs all three against one restart.
func TestNATSRestartEverythingResumes(t *testing.T) {
	t.Parallel() // waits on timers, not the CPU
	srv := bustest.NewServer(t)
	s := newStack(t, srv.Conn(t))
	s.startAll(func() *nats.Conn { return srv.Conn(t) })
	const n = 5
	var ins []*install
	for i := range n {
		in := s.newInstall(fmt.Sprintf("restart-%d", i))
		in.cfg[githubkit.Plugin] = s.githubConfig(in.name, 1)
		in.cfg[takeover.Plugin] = json.RawMessage(`{"language":"en_US","takeover_timeout":12}`)
		ins = append(ins, in)
	}
	s.attachAll(ins...)

	base := time.Now().Truncate(time.Second)
	dueDuring, dueAfter := base.Add(4*time.Second), base.Add(9*time.Second)
	var eventID int64 = 5000
	for i, in := range ins {
		for _, due := range []time.Time{dueDuring, dueAfter} {
			r, err := s.scheTool(in, s.newID(), schenotify.ToolSchedule, map[string]any{"message": "due " + due.Format(time.TimeOnly),
				"time_str": due.UTC().Format(time.RFC3339)})
			if err != nil || r["status"] != "ok" {
				t.Fatalf("schedule: %v %v", r, err)
			}
		}
		repo := fmt.Sprintf("acme/restart-%d", i)
		eventID++
		s.repoWithEvent(repo, eventID)
		if _, err := s.ghCmd(in, s.newID(), "sub "+repo); err != nil {
			t.Fatal(err)
		}
		if _, err := s.message(in, s.newID(), "u1", "help"); err != nil {
			t.Fatal(err)
		}
		if err := s.page(in, s.newID(), "POST", "/takeover", map[string]string{"sid": in.sid("u1")}, nil); err != nil {
			t.Fatal(err)
		}
	}

	srv.Stop()
	for !time.Now().After(dueDuring.Add(time.Second)) {
		time.Sleep(50 * time.Millisecond) // the outage lasts past dueDuring
	}
	srv.Restart(t)
	bustest.EventuallyWithin(t, 30*time.Second, "clients reconnected", s.nc.IsConnected)

	// new GitHub activity after the restart
	for i := range ins {
		eventID++
		s.gh.AddEvents(fmt.Sprintf("acme/restart-%d", i), fakegithub.Event("release_full", eventID))
	}
	// takeovers still block
	for _, in := range ins {
		var r wire.EventReply
		bustest.EventuallyWithin(t, 20*time.Second, "takeover answering after the restart", func() bool {
			var err error
			r, err = s.message(in, s.newID(), "u1", "still there?")
			return err == nil
		})
		if time.Now().Before(base.Add(11*time.Second)) && !r.PreventDefault {
			t.Errorf("%s: taken-over chat not blocked after the restart", in.name)
		}
	}
	// everything due arrives
	count := func(plugin string) map[string]int {
		keys := map[string]int{}
		for _, c := range s.host.Sends() {
			if strings.HasPrefix(c.Scope.String(), "instance-1.ws-restart-") && strings.Contains(c.Scope.String(), plugin) {
				keys[c.IdempotencyKey]++
			}
		}
		return keys
	}
	bustest.EventuallyWithin(t, 60*time.Second, "reminders and pushes after the restart", func() bool {
		return len(count(schenotify.Plugin)) >= 2*n && len(count(githubkit.Plugin)) >= n
	})
	// takeovers released by their schedules
	for _, in := range ins {
		bustest.EventuallyWithin(t, 60*time.Second, in.name+" takeover released by its schedule", func() bool {
			got, err := s.sessions(in)
			return err == nil && !got[in.sid("u1")]
		})
	}
	// let redeliveries, if any, happen: the due consumer drains
	s.waitConsumerDrained(t, schenotify.StreamName)
	s.waitConsumerDrained(t, githubkit.StreamName)
	var dup int
	for _, p := range []string{schenotify.Plugin, githubkit.Plugin} {
		for k, c := range count(p) {
			if c > 1 {
				dup += c - 1
				t.Errorf("%s: %d sends under %s", p, c, k)
			}
		}
	}
	sche, gh := count(schenotify.Plugin), count(githubkit.Plugin)
	if len(sche) != 2*n || len(gh) != n {
		t.Errorf("%d reminder deliveries (want %d), %d pushes (want %d)", len(sche), 2*n, len(gh), n)
	}
	t.Logf("FIGURE nats-restart: %d reminders (%d due during the outage) delivered %d times, %d pushes, %d takeovers released, %d duplicates",
		2*n, n, len(sche), len(gh), n, dup)
}

// waitConsumerDrained waits until every durable consumer of a stream has
// nothing pending or unacknowledged.
func (s *stack) waitConsumerDrained(t testing.TB, stream string) {
	t.Helper()
	bustest.EventuallyWithin(t, 60*time.Second, stream+" consumers drained", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := s.js.Stream(ctx, stream)
		if err != nil {
			return false
		}
		names := st.ConsumerNames(ctx)
		for name := range names.Name() {
			c, err := st.Consumer(ctx, name)
			if err != nil {
				return false
			}
			info, err := c.Info(ctx)
			if err != nil || info.NumPending > 0 || info.NumAckPending > 0 {
				return false
			}
		}
		return names.Err() == nil
	})
}
