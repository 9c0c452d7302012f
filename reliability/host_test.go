package reliability_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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

// TestHostOutageAllServices makes the host refuse send_message (503) and
// then time out (no answer) for all three services at once, while
// reminders fall due, GitHub events arrive and operators reply; then the
// host recovers. Checked: every logical delivery is eventually accepted by
// the host exactly once, and every attempt of one delivery carries the same
// Langbot-Idempotency-Key, which names the installation's scope.
//
// Per service the rules are proven by: schenotify TestN8RetryBackoffDeadLetter
// (retry schedule, dead letter after the bound) and TestO12FailedDeliveryIsRetried;
// githubkit TestAT31AtLeastOnce (cursor kept, resend, drop after 10) and
// TestAT32StaleBinding (403 marks superseded); takeover TestReplyIdempotency
// (timeout = outcome_unknown, retry with the same key) and
// TestDeliveredButNotSaved.
func TestHostOutageAllServices(t *testing.T) {
	t.Parallel() // waits on timers, not the CPU
	srv := bustest.NewServer(t)
	s := newStack(t, srv.Conn(t))
	s.startAll(func() *nats.Conn { return srv.Conn(t) })
	const n = 3
	var ins []*install
	for i := range n {
		in := s.newInstall(fmt.Sprintf("host-%d", i))
		in.cfg[githubkit.Plugin] = s.githubConfig(in.name, 1)
		ins = append(ins, in)
	}
	s.attachAll(ins...)
	var eventID int64 = 7000
	for i, in := range ins {
		repo := fmt.Sprintf("acme/host-%d", i)
		eventID++
		s.repoWithEvent(repo, eventID)
		if _, err := s.ghCmd(in, s.newID(), "sub "+repo); err != nil {
			t.Fatal(err)
		}
		if _, err := s.message(in, s.newID(), "u1", "hello"); err != nil {
			t.Fatal(err)
		}
	}
	// the outage: refusals, then silence
	var mode atomic.Int32 // 0 refuse, 1 drop, 2 accept
	var mu sync.Mutex
	accepted := map[string]int{}
	s.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Action != wire.ActionSendMessage {
			return bustest.HostReply{}
		}
		switch mode.Load() {
		case 0:
			return bustest.HostReply{Err: wire.Errorf(wire.ErrUnavailable, "host down")}
		case 1:
			return bustest.HostReply{Drop: true}
		}
		mu.Lock()
		accepted[c.IdempotencyKey]++
		mu.Unlock()
		return bustest.HostReply{}
	})
	due := time.Now().Add(2 * time.Second)
	for i, in := range ins {
		r, err := s.scheTool(in, s.newID(), schenotify.ToolSchedule, map[string]any{"message": "outage " + in.name,
			"time_str": due.UTC().Format(time.RFC3339)})
		if err != nil || r["status"] != "ok" {
			t.Fatal(r, err)
		}
		eventID++
		s.gh.AddEvents(fmt.Sprintf("acme/host-%d", i), fakegithub.Event("issue_opened", eventID))
	}
	// replies during the refusal fail cleanly and send nothing twice later
	replyKey := func(in *install) string { return "outage-reply-" + in.name }
	reply := func(in *install) (takeover.ReplyResult, error) {
		var res takeover.ReplyResult
		err := s.page(in, "inv-"+replyKey(in), "POST", "/reply", map[string]string{"sid": in.sid("u1"),
			"idempotency_key": replyKey(in), "text": "operator " + in.name}, &res)
		return res, err
	}
	for _, in := range ins {
		if res, err := reply(in); err == nil && res.Delivered {
			t.Fatalf("reply delivered while the host refuses: %+v", res)
		}
	}
	bustest.EventuallyWithin(t, 30*time.Second, "attempts during the refusal", func() bool {
		return len(s.host.Sends()) >= 3*n
	})
	mode.Store(1)
	refusedAt := len(s.host.Sends())
	bustest.EventuallyWithin(t, 30*time.Second, "attempts during the silence", func() bool { return len(s.host.Sends()) >= refusedAt+2*n })
	mode.Store(2)
	// the operator's console retries with the same key (a new invocation
	// each time, as a browser retry is)
	for _, in := range ins {
		bustest.EventuallyWithin(t, 30*time.Second, "reply delivered after recovery", func() bool {
			var res takeover.ReplyResult
			err := s.page(in, s.newID(), "POST", "/reply", map[string]string{"sid": in.sid("u1"),
				"idempotency_key": replyKey(in), "text": "operator " + in.name}, &res)
			return err == nil && res.Delivered
		})
	}
	// every logical delivery accepted: 3 per installation
	logical := func() map[string]map[string]bool { // delivery -> keys used
		out := map[string]map[string]bool{}
		for _, c := range s.host.Sends() {
			var text string
			for _, p := range c.SendMessage().MessageChain {
				text += p.Text
			}
			var what string
			switch {
			case strings.Contains(text, "outage "):
				what = "reminder"
			case strings.Contains(text, "operator "):
				what = "reply"
			case strings.Contains(c.Scope.String(), githubkit.Plugin):
				what = "push"
			default:
				continue
			}
			id := c.Scope.String() + " " + what
			if out[id] == nil {
				out[id] = map[string]bool{}
			}
			out[id][c.IdempotencyKey] = true
			if !strings.Contains(c.IdempotencyKey, c.Scope.String()) {
				t.Errorf("%s: key %q does not name the scope", id, c.IdempotencyKey)
			}
		}
		return out
	}
	bustest.EventuallyWithin(t, 60*time.Second, "every delivery accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) >= 3*n
	})
	s.waitConsumerDrained(t, schenotify.StreamName)
	s.waitConsumerDrained(t, githubkit.StreamName)
	attempts := len(s.host.Sends())
	var keysOK, dup int
	for id, keys := range logical() {
		if len(keys) != 1 {
			t.Errorf("%s: attempts under %d keys %v", id, len(keys), keys)
			continue
		}
		keysOK++
	}
	mu.Lock()
	for k, c := range accepted {
		if c > 1 {
			dup += c - 1
			t.Errorf("%s accepted %d times", k, c)
		}
	}
	nAccepted := len(accepted)
	mu.Unlock()
	if keysOK != 3*n || nAccepted != 3*n {
		t.Errorf("%d deliveries with one stable key, %d accepted; want %d", keysOK, nAccepted, 3*n)
	}
	t.Logf("FIGURE host-outage: %d logical deliveries (reminder, push, reply x %d installations), %d send attempts during refusal+timeouts+recovery, %d accepted, %d accepted twice, one idempotency key per delivery",
		3*n, n, attempts, nAccepted, dup)
}
