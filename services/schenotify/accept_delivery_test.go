package schenotify_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// O12: a failed send keeps the reminder queued; the retry carries the same
// key and succeeds.
func TestO12FailedDeliveryIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	var mu sync.Mutex
	failed := false
	e.host.respond(func(bustest.HostCall) hostAction {
		mu.Lock()
		defer mu.Unlock()
		if !failed {
			failed = true
			return hostAction{Err: wire.Errorf(wire.ErrInternal, "boom")}
		}
		return hostAction{}
	})
	T := nextSecond()
	id := e.schedule(t, b, cfgEN, s, map[string]any{"message": "A reminder", "time_str": rfc(T.Add(time.Second))})
	e.host.wait(t, 1, 5*time.Second)
	bustest.EventuallyWithin(t, 3*time.Second, "retrying record", func() bool {
		r := e.record(t, scopeOf(b), id)
		return r != nil && r.State == schenotify.StateRetrying
	})
	r := e.record(t, scopeOf(b), id)
	if r.Attempt != 1 || r.LastError == nil || r.LastError.Code != "host_error" || strings.Contains(r.LastError.Detail, "A reminder") {
		t.Fatalf("record after failure: attempt %d, last_error %+v", r.Attempt, r.LastError)
	}
	calls := e.host.wait(t, 2, 5*time.Second)
	if calls[0].IdempotencyKey != calls[1].IdempotencyKey {
		t.Fatalf("keys differ: %q %q", calls[0].IdempotencyKey, calls[1].IdempotencyKey)
	}
	if d := calls[1].At.Sub(calls[0].At); d < 500*time.Millisecond || d > 2500*time.Millisecond {
		t.Errorf("retry after %v, want about 1 s", d)
	}
	bustest.EventuallyWithin(t, 3*time.Second, "record gone", func() bool { return e.record(t, scopeOf(b), id) == nil })
	if texts := e.host.texts(); len(texts) != 2 || texts[1] != "[Notify] A reminder" {
		t.Fatalf("sends %q", texts)
	}
}

// O13: a delete while the send hangs reports note.in_flight; every text
// arrives exactly once and nothing more is sent.
func TestO13DeleteDuringSend(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	release := make(chan struct{})
	e.host.respond(func(c bustest.HostCall) hostAction {
		if strings.HasSuffix(sentText(c), "two") {
			return hostAction{Hang: release}
		}
		return hostAction{}
	})
	T := nextSecond()
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "one", "time_str": rfc(T.Add(time.Second))})
	idTwo := e.schedule(t, b, cfgEN, s, map[string]any{"message": "two", "time_str": rfc(T.Add(time.Second))})
	e.host.wait(t, 2, 5*time.Second)
	text := e.cmd(t, b, cfgEN, s, "!dsche "+idTwo)
	if !strings.Contains(text, "Deleted reminder "+idTwo) || !strings.Contains(text, "may still arrive once") {
		t.Fatalf("delete reply %q", text)
	}
	close(release)
	bustest.EventuallyWithin(t, 5*time.Second, "no records", func() bool { return len(e.reminderKeys(t, scopeOf(b))) == 0 })
	time.Sleep(5 * time.Second) // nothing more may arrive in this window
	texts := e.host.texts()
	if len(texts) != 2 {
		t.Fatalf("sends %q", texts)
	}
	if e.streamMsgs(t, scopeOf(b)) != 0 {
		t.Errorf("stream messages left")
	}
}

// N7: a delete committed before the claim prevents the send.
func TestN7DeleteBeforeClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	held := make(chan string, 1)
	release := make(chan struct{})
	in.svc.SetBeforeClaim(func(_ context.Context, _ binding.Scope, id string) {
		held <- id
		<-release
	})
	T := nextSecond()
	id := e.schedule(t, b, cfgEN, s, map[string]any{"message": "held", "time_str": rfc(T.Add(time.Second))})
	select {
	case got := <-held:
		if got != id {
			t.Fatalf("held %s", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler never reached the claim")
	}
	text := e.cmd(t, b, cfgEN, s, "!dsche "+id)
	if !strings.Contains(text, "Deleted") || strings.Contains(text, "may still arrive") {
		t.Fatalf("delete reply %q", text)
	}
	close(release)
	bustest.EventuallyWithin(t, 5*time.Second, "subjects purged", func() bool { return e.streamMsgs(t, scopeOf(b)) == 0 })
	time.Sleep(500 * time.Millisecond)
	if n := len(e.host.sends()); n != 0 {
		t.Fatalf("%d sends after a delete before the claim", n)
	}
}

// N7 without the hook: across runs, either no note and no send, or the note
// and exactly one send.
func TestN7DeleteRaceConcurrentSafe(t *testing.T) {
	t.Parallel()
	b := bind("installation-race", 1)
	const runs = 30
	type run struct {
		id, session string
		note, gone  bool
	}
	var rs []run
	oneReplica := func() *env {
		e := newEnv(t)
		e.start(t, testConfig(), nil, nil, nil)
		return e
	}
	e, T := dueAfterSetup(t, 3*time.Second, oneReplica, func(e *env, T time.Time) bool {
		rs = rs[:0]
		for i := range runs {
			s := sess("bot", "person", "r"+strconv.Itoa(i))
			id, ok := e.scheduleDue(t, b, cfgEN, s, "race "+strconv.Itoa(i), T)
			if !ok {
				return false
			}
			rs = append(rs, run{id: id, session: "r" + strconv.Itoa(i)})
		}
		return true
	})
	time.Sleep(time.Until(T))
	var wg sync.WaitGroup
	for i := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := e.cmd(t, b, cfgEN, sess("bot", "person", rs[i].session), "!dsche "+rs[i].id)
			rs[i].note = strings.Contains(text, "may still arrive")
			rs[i].gone = strings.Contains(text, "no reminder with id") // delivered before the delete
		}()
	}
	wg.Wait()
	time.Sleep(2 * time.Second)
	sent := map[string]int{}
	for _, c := range e.host.sends() {
		sent[c.SendMessage().TargetID]++
	}
	for _, r := range rs {
		n := sent[r.session]
		if n > 1 || (r.note && n != 1) || (!r.note && !r.gone && n != 0) || (r.gone && n != 1) {
			t.Errorf("run %s: note %v, %d sends", r.session, r.note, n)
		}
	}
}

// O14: caps, truncation, and no reminder text in logs or span attributes.
func TestO14QueueIsBoundedAndTextNotLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := tracetest.NewSpanRecorder()
	in := e.start(t, testConfig(), nil, nil, trace.NewTracerProvider(trace.WithSpanProcessor(rec)))
	b := bind("installation-a", 1)
	far := rfc(time.Now().Add(time.Hour))
	s1, s2, s3 := sess("bot", "person", "1"), sess("bot", "person", "2"), sess("bot", "person", "3")
	var first string
	for i := range 50 {
		id := e.schedule(t, b, cfgEN, s1, map[string]any{"message": "a", "time_str": far})
		e.schedule(t, b, cfgEN, s2, map[string]any{"message": "b", "time_str": far})
		if i == 0 {
			first = id
		}
	}
	r := e.tool(t, b, cfgEN, s3, schenotify.ToolSchedule, map[string]any{"message": "c", "time_str": far})
	if r["code"] != "too_many" {
		t.Fatalf("101st: %v", r)
	}
	if n := len(e.reminderKeys(t, scopeOf(b))); n != 100 {
		t.Fatalf("%d reminders", n)
	}
	e.cmd(t, b, cfgEN, s1, "!dsche "+first)
	long := strings.Repeat("x", 2500)
	r = e.tool(t, b, cfgEN, s3, schenotify.ToolSchedule, map[string]any{"message": long, "delay": "1h"})
	if r["status"] != "ok" || r["truncated"] != true || r["original_length"] != float64(2500) || len(r["message"].(string)) != 2000 {
		t.Fatalf("long add: status %v truncated %v length %v", r["status"], r["truncated"], r["original_length"])
	}
	if rec := e.record(t, scopeOf(b), r["id"].(string)); len([]rune(rec.Message)) != 2000 {
		t.Fatalf("stored %d code points", len([]rune(rec.Message)))
	}
	e.cmd(t, b, cfgEN, s2, "!dsche 1")
	secret := "secret-reminder-text-7f3a"
	T := nextSecond()
	id := e.schedule(t, b, cfgEN, s3, map[string]any{"message": secret, "time_str": rfc(T.Add(time.Second))})
	e.host.wait(t, 1, 5*time.Second)
	bustest.EventuallyWithin(t, 3*time.Second, "delivered", func() bool { return e.record(t, scopeOf(b), id) == nil })
	logs := in.logs.String()
	if strings.Contains(logs, secret) {
		t.Fatalf("reminder text in logs")
	}
	if !strings.Contains(logs, id) {
		t.Fatalf("no log line carries the id %s", id)
	}
	for _, sp := range rec.Ended() {
		for _, a := range sp.Attributes() {
			if strings.Contains(a.Value.String(), secret) {
				t.Fatalf("span %s attribute %s holds the text", sp.Name(), a.Key)
			}
		}
	}
}

// O15: an upgrade carries reminders over; a late revoke of the old
// revision is a no-op; both are delivered under the new binding.
func TestO15UpgradeKeepsReminders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b1, b2 := bind("installation-a", 1), bind("installation-a", 2)
	s := sess("bot", "person", "1")
	T := nextSecond()
	e.schedule(t, b1, cfgEN, s, map[string]any{"message": "R1", "time_str": rfc(T.Add(6 * time.Second))})
	e.schedule(t, b2, cfgEN, s, map[string]any{"message": "R2", "time_str": rfc(T.Add(3 * time.Second))})
	if _, err := bus.PublishRevoke(t.Context(), e.js, wire.Subjects{}, schenotify.Plugin, wire.Revoke{Binding: b1, Reason: wire.ReasonUpgrade}, ""); err != nil {
		t.Fatal(err)
	}
	calls := e.host.wait(t, 2, 10*time.Second)
	if sentText(calls[0]) != "[Notify] R2" || sentText(calls[1]) != "[Notify] R1" {
		t.Fatalf("sends %q", e.host.texts())
	}
	checkOnTime(t, calls[0], T.Add(3*time.Second))
	checkOnTime(t, calls[1], T.Add(6*time.Second))
	for _, c := range calls {
		if c.Request.Binding != b2 {
			t.Errorf("%q sent under revision %d", sentText(c), c.Request.Binding.RuntimeRevision)
		}
	}
}
