package takeover_test

import (
	"context"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
)

func TestRestartReadsEachInstallationBack(t *testing.T) {
	h := newHarness(t)
	a, b := newBinding("iso2a"), newBinding("iso2b")
	h.attach(a, `{}`, true)
	h.attach(b, `{}`, true)
	sidA := h.takeOver(a, `{}`, "bot-1", 1)
	h.mustEvent(b, `{}`, takeover.EventGroupMessage, "bot-1", msgData("group", "g", 3, plain("in B")))
	sidB := sidOf("bot-1", "group", "g")
	bustest.Eventually(t, "metadata", func() bool { return h.record(b, sidB).HistoryCount == 1 })
	var la, lb takeover.SessionList
	h.mustPage(a, `{}`, "GET", "/sessions", nil, &la)
	h.mustPage(b, `{}`, "GET", "/sessions", nil, &lb)
	h.stop()
	h.svc = h.startReplica(h.srv.Conn(t))
	h.attach(a, `{}`, true) // the new replica's view is loaded once it sees the authority
	var la2, lb2 takeover.SessionList
	h.mustPage(a, `{}`, "GET", "/sessions", nil, &la2)
	h.mustPage(b, `{}`, "GET", "/sessions", nil, &lb2)
	if len(la2.Sessions) != 1 || len(lb2.Sessions) != 1 || la2.Sessions[0].SID != sidA || !la2.Sessions[0].Takeover.Active || lb2.Sessions[0].SID != sidB {
		t.Fatalf("after restart: %+v %+v", la2.Sessions, lb2.Sessions)
	}
	if r := h.mustEvent(a, `{}`, takeover.EventPersonMessage, "bot-1", msgData("person", 1, 1, plain("x"))); !r.PreventDefault {
		t.Fatal("takeover lost on restart")
	}
	if p := h.messages(b, `{}`, sidB); len(p.Messages) != 1 || p.Messages[0].Parts[0].Text != "in B" {
		t.Fatal("history lost on restart")
	}
}

func TestFailureInOneInstallationLeavesOthers(t *testing.T) {
	h := newHarness(t)
	a, b := newBinding("iso6a"), newBinding("iso6b")
	h.attach(a, `{}`, true)
	h.attach(b, `{}`, true)
	h.mustEvent(a, `{}`, takeover.EventPersonMessage, "bot-1", msgData("person", 1, 1, plain("x")))
	sid := sidOf("bot-1", "person", 1)
	scA, _ := a.Scope()
	before := snapshotScope(h, a)
	takeover.SetFault(h.svc, func(op string, sc binding.Scope) error {
		if sc == scA {
			return errFault
		}
		return nil
	})
	if err := h.page(a, `{}`, "POST", "/takeover", map[string]string{"sid": sid}, nil); !isCode(err, 503, "") {
		t.Fatalf("A's action: %v", err)
	}
	for i := range 5 {
		h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-1", msgData("person", 1, 1, plain(string(rune('a'+i)))))
	}
	if n := h.historyCount(b, sid); n != 5 {
		t.Fatalf("B recorded %d of 5", n)
	}
	if snapshotScope(h, a) != before {
		t.Fatal("A holds a partial write")
	}
	takeover.SetFault(h.svc, nil)
	h.mustPage(a, `{}`, "POST", "/takeover", map[string]string{"sid": sid}, nil)
}

func TestClearAndDeleteRetryable(t *testing.T) {
	h := newHarness(t)
	b := newBinding("st9")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-1", 1)
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-1", msgData("person", 2, 2, plain("y")))
	takeover.SetFault(h.svc, func(op string, _ binding.Scope) error {
		if op == "blob.delete" {
			return errFault
		}
		return nil
	})
	if err := h.page(b, `{}`, "DELETE", "/session", map[string]string{"sid": sid}, nil); err == nil {
		t.Fatal("a fault partway did not fail the delete")
	}
	takeover.SetFault(h.svc, nil)
	h.mustPage(b, `{}`, "DELETE", "/session", map[string]string{"sid": sid}, nil)
	if h.record(b, sid) != nil || h.historyCount(b, sid) != 0 {
		t.Fatal("delete retry left data")
	}
	takeover.SetFault(h.svc, func(op string, _ binding.Scope) error {
		if op == "blob.delete" {
			return errFault
		}
		return nil
	})
	if err := h.page(b, `{}`, "DELETE", "/clear", map[string]any{"confirm": true}, nil); err == nil {
		t.Fatal("a fault partway did not fail the clear")
	}
	takeover.SetFault(h.svc, nil)
	h.mustPage(b, `{}`, "DELETE", "/clear", map[string]any{"confirm": true}, nil)
	sid2 := sidOf("bot-1", "person", 2)
	if h.record(b, sid2) != nil || h.historyCount(b, sid2) != 0 {
		t.Fatal("clear retry left data")
	}
}

func TestClearWithoutResurrection(t *testing.T) {
	h := newHarness(t)
	a, b := newBinding("st8a"), newBinding("st8b")
	h.attach(a, `{}`, true)
	h.attach(b, `{}`, true)
	for i := range 3 {
		h.mustEvent(a, `{}`, takeover.EventPersonMessage, "bot-1", msgData("person", i, i, plain("x")))
	}
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-1", msgData("person", 1, 1, plain("b")))
	beforeB := snapshotScope(h, b)
	h.mustPage(a, `{}`, "DELETE", "/clear", map[string]any{"confirm": true}, nil)
	h.stop()
	h.svc = h.startReplica(h.srv.Conn(t))
	h.attach(a, `{}`, true)
	var list takeover.SessionList
	h.mustPage(a, `{}`, "GET", "/sessions", nil, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("%d sessions back after restart", len(list.Sessions))
	}
	if snapshotScope(h, b) != beforeB {
		t.Fatal("clear touched the other scope")
	}
	h.mustEvent(a, `{}`, takeover.EventPersonMessage, "bot-1", msgData("person", 1, 1, plain("fresh")))
	if p := h.messages(a, `{}`, sidOf("bot-1", "person", 1)); len(p.Messages) != 1 || p.Messages[0].Parts[0].Text != "fresh" {
		t.Fatalf("after clear: %+v", p.Messages)
	}
}

func TestAmbiguousWriteResolvedByReread(t *testing.T) {
	h := newHarness(t)
	b := newBinding("st4")
	h.attach(b, `{}`, true)
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("first")))
	sid := sidOf("bot-a", "person", 1)

	// a committed CAS whose acknowledgement is lost: re-read, and it counts once
	takeover.SetFault(h.svc, func(op string, _ binding.Scope) error {
		if op == "kv.update.ack" {
			return context.DeadlineExceeded
		}
		return nil
	})
	var tv takeover.TakeoverView
	h.mustPage(b, `{}`, "POST", "/takeover", map[string]string{"sid": sid}, &tv)
	takeover.SetFault(h.svc, nil)
	if !tv.Active || !h.record(b, sid).Takeover.Active {
		t.Fatal("the ambiguous takeover was not resolved as written")
	}

	// a committed append whose acknowledgement is lost: a retry of the same
	// invocation appends nothing twice
	takeover.SetFault(h.svc, func(op string, _ binding.Scope) error {
		if op == "history.append.ack" {
			return context.DeadlineExceeded
		}
		return nil
	})
	id := bus.NewInvocationID()
	data := msgData("person", 1, 1, plain("second"))
	if _, err := h.eventID(b, `{}`, takeover.EventPersonMessage, "bot-a", data, id); err != nil {
		t.Fatal(err)
	}
	takeover.SetFault(h.svc, nil)
	if _, err := h.eventID(b, `{}`, takeover.EventPersonMessage, "bot-a", data, id); err != nil {
		t.Fatal(err)
	}
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 1, 1, plain("third")))
	p := h.messages(b, `{}`, sid)
	var texts []string
	for _, m := range p.Messages {
		texts = append(texts, m.Parts[0].Text)
	}
	if strings.Join(texts, ",") != "third,second,first" {
		t.Fatalf("history %v", texts)
	}
}
