package schenotify_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// message sends the chat's next incoming message as a LangBot event and
// checks that the reply never blocks it.
func (e *env) message(t testing.TB, b binding.Binding, typ, id string) {
	t.Helper()
	name := schenotify.EventPersonMessage
	if typ == "group" {
		name = schenotify.EventGroupMessage
	}
	data, _ := json.Marshal(map[string]any{"launcher_type": typ, "launcher_id": id, "sender_id": "sender-" + id,
		"message_chain": []map[string]string{{"type": "Plain", "text": "hello"}}})
	raw, err := e.call(t, wire.EndpointEvent, "", &wire.Request{Binding: b, Config: json.RawMessage(cfgEN),
		Event: &wire.Event{Name: name, BotUUID: "bot", Data: data}})
	if err != nil {
		t.Fatalf("event: %v", err)
	}
	var r wire.EventReply
	if err := json.Unmarshal(raw, &r); err != nil || r.PreventDefault || r.PreventPostorder || len(r.ReplyMessageChain) != 0 {
		t.Fatalf("event reply %s (%v): it must not block the message", raw, err)
	}
}

// Issue 22: a host that refuses a proactive message for good, with each
// permanent reason: no retry; the chat and its later reminders wait; the
// chat's next message gets them, each once and with the refused attempt's
// key; then the chat's reminders go out proactively again.
func TestRefusedChatGetsRemindersOnNextMessage(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{schenotify.ReasonNotPermitted, schenotify.ReasonOutsideReplyWindow, schenotify.ReasonUnsupportedTarget} {
		t.Run(reason, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			in := e.start(t, testConfig(), nil, nil, nil)
			var refuse atomic.Bool
			refuse.Store(true)
			e.host.respond(func(bustest.HostCall) hostAction {
				if refuse.Load() {
					return hostAction{Err: &wire.Error{Code: 400, Word: "bad_request", Reason: reason, Message: "the platform refused"}}
				}
				return hostAction{}
			})
			b := bind("installation-a", 1)
			s := sess("bot", "person", "1")
			other := sess("bot", "person", "2")
			due := nextSecond().Add(2 * time.Second)
			id := e.schedule(t, b, cfgEN, s, map[string]any{"message": "first", "time_str": rfc(due)})
			first := e.host.wait(t, 1, 10*time.Second)[0]
			bustest.EventuallyWithin(t, 5*time.Second, "waiting state", func() bool {
				r := e.record(t, scopeOf(b), id)
				return r != nil && r.State == schenotify.StateWaiting && r.LastError != nil && r.LastError.Detail == reason
			})
			if list := e.cmd(t, b, cfgEN, s, "!sche"); !strings.Contains(list, "waiting for the next message in this chat") {
				t.Errorf("list does not say it waits: %q", list)
			}
			// A later reminder of the chat waits without a proactive try; another
			// chat of the installation is not affected.
			due2 := nextSecond().Add(time.Second)
			id2 := e.schedule(t, b, cfgEN, s, map[string]any{"message": "second", "time_str": rfc(due2)})
			refuse.Store(false)
			e.schedule(t, b, cfgEN, other, map[string]any{"message": "elsewhere", "time_str": rfc(due2)})
			e.host.wait(t, 2, 10*time.Second)
			bustest.EventuallyWithin(t, 5*time.Second, "second waits", func() bool {
				r := e.record(t, scopeOf(b), id2)
				return r != nil && r.State == schenotify.StateWaiting
			})
			time.Sleep(1500 * time.Millisecond) // a proactive retry would arrive here
			if n := len(e.host.sends()); n != 2 {
				t.Fatalf("%d sends before the next message, want the refused one and the other chat's: %q", n, e.host.texts())
			}
			if in.counter(t, "schenotify_deliveries_total", "outcome", "retry") != 0 {
				t.Errorf("a permanent refusal was retried")
			}
			e.message(t, b, "person", "1")
			calls := e.host.wait(t, 4, 10*time.Second)
			got := map[string]string{}
			for _, c := range calls[2:] {
				got[sentText(c)] = c.IdempotencyKey
			}
			if got["[Notify] first"] != first.IdempotencyKey || got["[Notify] second"] == "" {
				t.Fatalf("next-message sends %v (first key %q)", got, first.IdempotencyKey)
			}
			bustest.EventuallyWithin(t, 5*time.Second, "records gone", func() bool {
				return e.record(t, scopeOf(b), id) == nil && e.record(t, scopeOf(b), id2) == nil
			})
			bustest.EventuallyWithin(t, 5*time.Second, "chat mark removed after a send succeeded", func() bool {
				for _, k := range e.keys(t, bus.Bucket(schenotify.Plugin), scopeOf(b)) {
					if strings.Contains(k, ".waiting.") {
						return false
					}
				}
				return true
			})
			e.message(t, b, "person", "1") // once: nothing is sent again
			// The mark is gone: the chat's next reminder goes out proactively.
			e.schedule(t, b, cfgEN, s, map[string]any{"message": "third", "time_str": rfc(nextSecond().Add(time.Second))})
			e.host.wait(t, 5, 10*time.Second)
			time.Sleep(time.Second)
			if texts := e.host.texts(); len(texts) != 5 || texts[4] != "[Notify] third" {
				t.Fatalf("sends %q", texts)
			}
		})
	}
}

// Issue 22: transient failures (a 503, a 500 without a reason, a 400 with
// another reason) are still retried as before, and no chat is marked.
func TestTransientFailureStillRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := testConfig()
	e.start(t, cfg, nil, nil, nil)
	errs := []*wire.Error{
		{Code: 503, Word: "unavailable", Message: "not connected"},
		{Code: 500, Word: "internal", Message: "host action failed"},
		{Code: 400, Word: "bad_request", Reason: "something_else", Message: "?"},
	}
	var n atomic.Int32
	e.host.respond(func(bustest.HostCall) hostAction {
		if i := int(n.Add(1)) - 1; i < len(errs) {
			return hostAction{Err: errs[i]}
		}
		return hostAction{}
	})
	b := bind("installation-a", 1)
	id := e.schedule(t, b, cfgEN, sess("bot", "group", "9"), map[string]any{"message": "retried", "time_str": rfc(nextSecond().Add(time.Second))})
	calls := e.host.wait(t, 4, 30*time.Second)
	for _, c := range calls {
		if c.IdempotencyKey != calls[0].IdempotencyKey {
			t.Fatalf("retry with another key: %q vs %q", c.IdempotencyKey, calls[0].IdempotencyKey)
		}
	}
	bustest.EventuallyWithin(t, 5*time.Second, "record gone", func() bool { return e.record(t, scopeOf(b), id) == nil })
	for _, k := range e.keys(t, bus.Bucket(schenotify.Plugin), scopeOf(b)) {
		if strings.Contains(k, ".waiting.") {
			t.Errorf("a transient failure marked the chat: %s", k)
		}
	}
}

// Issue 22: the classification of send failures.
func TestRefusalClassification(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&wire.Error{Code: 400, Word: "bad_request", Reason: schenotify.ReasonNotPermitted}, schenotify.ReasonNotPermitted},
		{&wire.Error{Code: 409, Word: "conflict", Reason: schenotify.ReasonOutsideReplyWindow}, schenotify.ReasonOutsideReplyWindow},
		{&wire.Error{Code: 404, Word: "not_found", Reason: schenotify.ReasonUnsupportedTarget}, schenotify.ReasonUnsupportedTarget},
		{&wire.Error{Code: 403, Word: "binding_refused", Reason: schenotify.ReasonNotPermitted}, ""}, // 403 is the binding
		{&wire.Error{Code: 429, Word: "rate_limited", Reason: schenotify.ReasonOutsideReplyWindow}, ""},
		{&wire.Error{Code: 503, Word: "unavailable", Reason: schenotify.ReasonNotPermitted}, ""},
		{&wire.Error{Code: 500, Word: "internal"}, ""},
		{&wire.Error{Code: 404, Word: "not_found"}, ""}, // a bot that is not running
		{&wire.Error{Code: 400, Word: "bad_request", Reason: "in_progress"}, ""},
		{bus.ErrHostTimeout, ""},
	}
	for _, c := range cases {
		if got := schenotify.Refusal(c.err); got != c.want {
			t.Errorf("Refusal(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
