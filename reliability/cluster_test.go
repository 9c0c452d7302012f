package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestClusterLeaderStops runs schenotify (two replicas) and takeover on a
// three-node cluster with R3 streams and buckets, under a steady load of
// reminders due a few seconds later and operator replies (host retries
// under the same invocation id). Mid-load it stops the leader of the
// schedule stream LANGBOT_SCHENOTIFY (and brings it back), then the leader
// of the bucket KV_langbot_takeover (and brings it back). Writes must
// continue after each election, every acknowledged reminder and reply must
// be stored once, and every reminder must be delivered once.
//
// schenotify TestN6TwoReplicasR3Cluster and githubkit TestAT39Replicas run
// one service on an R3 cluster without stopping a leader.
func TestClusterLeaderStops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	t.Parallel() // waits on elections and timers, not the CPU
	c := bustest.NewCluster(t, 3)
	s := newStack(t, c.Conn(t))
	s.dueIn = 15 * time.Second
	sche := s.start(schenotify.Plugin, c.Conn(t), 3)
	s.start(schenotify.Plugin, c.Conn(t), 3)
	s.start(takeover.Plugin, c.Conn(t), 3)
	workers, ops := 3, 12
	if soak() {
		workers, ops = 6, 40
	}
	ins := make([]*install, workers)
	for w := range ins {
		ins[w] = s.newInstall(fmt.Sprintf("cluster-%d", w))
		s.publishAttach(ins[w], schenotify.Plugin, true)
		s.publishAttach(ins[w], takeover.Plugin, true)
	}
	s.waitLifecycle(schenotify.Plugin)
	s.waitLifecycle(takeover.Plugin)
	for _, in := range ins {
		if _, err := s.message(in, s.newID(), "u1", "hello"); err != nil {
			t.Fatal(err)
		}
	}
	res := map[string]*loadResult{schenotify.Plugin: {}, takeover.Plugin: {}}
	keys := map[string][][]string{schenotify.Plugin: make([][]string, workers), takeover.Plugin: make([][]string, workers)}
	var acked atomic.Int64
	total := int64(2 * workers * ops)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := range workers {
		for _, plugin := range []string{schenotify.Plugin, takeover.Plugin} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range ops {
					key := fmt.Sprintf("op-%s-%02d-%03d", plugin, w, k)
					if err := s.opWithRetries(plugin, ins[w], key, res[plugin]); err != nil {
						t.Errorf("%s: %v", key, err)
						return
					}
					mu.Lock()
					keys[plugin][w] = append(keys[plugin][w], key)
					mu.Unlock()
					acked.Add(1)
				}
			}()
		}
	}
	progress := func(num int64) {
		bustest.EventuallyWithin(t, 4*time.Minute, "load progress", func() bool { return t.Failed() || acked.Load() >= total*num/5 })
	}
	var stopped []string
	for i, stream := range []string{schenotify.StreamName, "KV_" + bus.Bucket(takeover.Plugin)} {
		progress(int64(2*i + 1))
		leader := c.StreamLeader(t, stream)
		leader.Stop()
		stopped = append(stopped, stream)
		t.Logf("%s: stopped the leader of %s at %d acknowledged", time.Now().Format(time.TimeOnly), stream, acked.Load())
		progress(int64(2*i + 2))
		leader.Restart(t)
		t.Logf("%s: restarted it at %d acknowledged", time.Now().Format(time.TimeOnly), acked.Load())
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// every acknowledged reminder fires once
	want := workers * ops
	sendKeys := map[string]map[string]bool{} // reminder -> idempotency keys
	delivered := func() map[string]int {
		got := map[string]int{}
		for _, c := range s.host.Sends() {
			if !strings.Contains(c.Scope.String(), schenotify.Plugin) {
				continue
			}
			for _, part := range c.SendMessage().MessageChain {
				if i := strings.Index(part.Text, "op-schenotify-"); i >= 0 {
					k := part.Text[i : i+len("op-schenotify-00-000")]
					got[k]++
					if sendKeys[k] == nil {
						sendKeys[k] = map[string]bool{}
					}
					sendKeys[k][c.IdempotencyKey] = true
				}
			}
		}
		return got
	}
	deadline := time.Now().Add(90 * time.Second)
	for len(delivered()) < want {
		if time.Now().After(deadline) {
			got := delivered()
			var missing []string
			for _, ks := range keys[schenotify.Plugin] {
				for _, k := range ks {
					if got[k] == 0 {
						missing = append(missing, k)
					}
				}
			}
			t.Errorf("%d of %d reminders delivered; missing %v; records: %s; schedule stream: %s", len(got), want, missing, s.reminderStates(t, ins, missing), s.schedState(t, ins))
			// the recovery sweep (every 30 min in production) re-arms it
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			sche.svc.(*schenotify.Service).Sweep(ctx)
			cancel()
			bustest.EventuallyWithin(t, 30*time.Second, "the sweep delivers the missing reminders", func() bool { return len(delivered()) >= want })
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.waitConsumerDrained(t, schenotify.StreamName)
	var sendDup int
	for k, n := range delivered() {
		if n > 1 {
			sendDup += n - 1
			t.Errorf("%s delivered %d times, under %d idempotency keys", k, n, len(sendKeys[k]))
		}
	}
	// a delivered one-shot reminder is deleted: its effect is the delivery
	got := delivered()
	var lost, dup int
	for _, ks := range keys[schenotify.Plugin] {
		for _, k := range ks {
			if got[k] == 0 {
				lost++
			}
		}
	}
	dup = sendDup
	l, d, _ := s.countEffects(t, takeover.Plugin, ins, keys[takeover.Plugin])
	lost, dup = lost+l, dup+d
	if acked.Load() != total || lost != 0 || dup != 0 {
		t.Errorf("%d of %d acknowledged, %d lost, %d duplicated", acked.Load(), total, lost, dup)
	}
	notSaved := 0
	s.notSaved.Range(func(any, any) bool { notSaved++; return true })
	t.Logf("FIGURE cluster: leaders stopped %v; %d writes acknowledged (%d host retries, %d unavailable tool results called again, %d replies delivered but reported not saved), %d lost, %d duplicated; %d reminders delivered, %d delivered twice",
		stopped, acked.Load(), res[schenotify.Plugin].retries+res[takeover.Plugin].retries, res[schenotify.Plugin].newIDs, notSaved, lost, dup, len(delivered()), sendDup)
}

// reminderStates describes the stored records of the named reminders.
func (s *stack) reminderStates(t *testing.T, ins []*install, messages []string) string {
	t.Helper()
	want := map[string]bool{}
	for _, m := range messages {
		want[m] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := s.js.KeyValue(ctx, bus.Bucket(schenotify.Plugin))
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, in := range ins {
		l, err := kv.ListKeysFiltered(ctx, in.scope(schenotify.Plugin).String()+".reminder.>")
		if err != nil {
			continue
		}
		for k := range l.Keys() {
			e, err := kv.Get(ctx, k)
			if err != nil {
				continue
			}
			var r schenotify.Record
			if json.Unmarshal(e.Value(), &r) == nil && want[r.Message] {
				fmt.Fprintf(&b, "%s: state %s due %s attempt %d last_error %+v; ", r.Message, r.State, r.NextDue.Format(time.TimeOnly), r.Attempt, r.LastError)
			}
		}
	}
	return b.String()
}

// schedState lists the schedule stream's subjects of the installations.
func (s *stack) schedState(t *testing.T, ins []*install) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := s.js.Stream(ctx, schenotify.StreamName)
	if err != nil {
		return err.Error()
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d messages, subjects %v", info.State.Msgs, info.State.Subjects)
}
