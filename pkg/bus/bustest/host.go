package bustest

import (
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// HostCall is one host action the fake host received.
type HostCall struct {
	Action         string
	Scope          binding.Scope
	Request        wire.HostRequest
	IdempotencyKey string
	Header         nats.Header
	At             time.Time
}

// SendMessage decodes the call's data as send_message data.
func (c HostCall) SendMessage() wire.SendMessage {
	var m wire.SendMessage
	_ = json.Unmarshal(c.Request.Data, &m)
	return m
}

// InvokeLLM decodes the call's data as invoke_llm data.
func (c HostCall) InvokeLLM() wire.InvokeLLM {
	var m wire.InvokeLLM
	_ = json.Unmarshal(c.Request.Data, &m)
	return m
}

// LLMModel is the model the fake host's LLM answers as.
const LLMModel = "test-model"

// LLMAnswer is the fake host's default invoke_llm answer to req: "LLM: "
// and the last message's content.
func LLMAnswer(req wire.InvokeLLM) string {
	if len(req.Messages) == 0 {
		return "LLM:"
	}
	return "LLM: " + req.Messages[len(req.Messages)-1].Content
}

// HostReply is how the fake host answers one call.
type HostReply struct {
	Data any         // success body; nil means {}
	Err  *wire.Error // error reply
	Drop bool        // no reply at all: the caller times out
}

// Host is a fake LangBot host: it answers every host action on
// <prefix>.host.> and records what it received. By default send_message
// succeeds and get_bot_info describes a bot named "Test Bot".
type Host struct {
	wg      sync.WaitGroup // calls being answered
	mu      sync.Mutex
	calls   []HostCall
	revokes []binding.Scope
	respond func(HostCall) HostReply
	llm     func(wire.InvokeLLM) HostReply
	changed chan struct{}
}

// By default invoke_llm answers LLMAnswer as LLMModel; AnswerLLM
// scripts it.
//
// NewHost subscribes a fake host on nc until cleanup. Each call is
// answered on its own goroutine, so a responder that blocks (to hold a
// send in flight) does not hold up the others.
func NewHost(t testing.TB, nc *nats.Conn, subjects wire.Subjects) *Host {
	t.Helper()
	h := &Host{changed: make(chan struct{})}
	sub, err := nc.Subscribe(subjects.HostAll(), func(m *nats.Msg) {
		action, sc, err := subjects.ParseHostAction(m.Subject)
		if err != nil {
			return
		}
		if action == wire.ActionGateRevoke {
			// a notice to the package, not an action: kept apart
			h.mu.Lock()
			h.revokes = append(h.revokes, sc)
			h.mu.Unlock()
			return
		}
		call := HostCall{Action: action, Scope: sc, IdempotencyKey: m.Header.Get(wire.HeaderIdempotencyKey), Header: m.Header, At: time.Now()}
		_ = json.Unmarshal(m.Data, &call.Request)
		h.mu.Lock()
		h.calls = append(h.calls, call)
		respond, llm := h.respond, h.llm
		close(h.changed)
		h.changed = make(chan struct{})
		h.mu.Unlock()

		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			reply := defaultReply(call)
			switch {
			case respond != nil:
				reply = respond(call)
			case llm != nil && call.Action == wire.ActionInvokeLLM:
				reply = llm(call.InvokeLLM())
			}
			if reply.Drop {
				return
			}
			if reply.Err != nil {
				_ = m.RespondMsg(ErrorMsg(reply.Err))
				return
			}
			data := reply.Data
			if data == nil {
				data = struct{}{}
			}
			b, _ := json.Marshal(data)
			_ = m.Respond(b)
		}()
	})
	if err != nil {
		t.Fatalf("bustest: host subscribe: %v", err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sub.Unsubscribe()
		done := make(chan struct{})
		go func() { h.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Log("bustest: a host responder is still blocked at cleanup")
		}
	})
	return h
}

// Revokes returns the scopes of the event-gate revocations received
// (wire.ActionGateRevoke), in order; they are not calls.
func (h *Host) Revokes() []binding.Scope {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]binding.Scope(nil), h.revokes...)
}

func defaultReply(c HostCall) HostReply {
	switch c.Action {
	case wire.ActionGetBotInfo:
		var d struct {
			BotUUID string `json:"bot_uuid"`
		}
		_ = json.Unmarshal(c.Request.Data, &d)
		return HostReply{Data: map[string]any{"bot": wire.BotInfo{UUID: d.BotUUID, Name: "Test Bot", Adapter: "test"}}}
	case wire.ActionGetBots:
		return HostReply{Data: map[string]any{"bots": []wire.BotInfo{}}}
	case wire.ActionInvokeLLM:
		return HostReply{Data: wire.LLMAnswer{Text: LLMAnswer(c.InvokeLLM()), Model: LLMModel}}
	}
	return HostReply{}
}

// ErrorMsg returns a reply message carrying e, as a peer following the
// protocol would send it.
func ErrorMsg(e *wire.Error) *nats.Msg {
	h := nats.Header{}
	h.Set(wire.HeaderServiceError, e.Word)
	h.Set(wire.HeaderServiceCode, strconv.Itoa(e.Code))
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": e.Word, "message": e.Message, "reason": e.Reason}})
	return &nats.Msg{Header: h, Data: body}
}

// Respond sets how later calls are answered (nil: the defaults).
func (h *Host) Respond(f func(HostCall) HostReply) {
	h.mu.Lock()
	h.respond = f
	h.mu.Unlock()
}

// AnswerLLM sets how later invoke_llm calls are answered (nil: the
// default answer), unless Respond has taken over every action.
func (h *Host) AnswerLLM(f func(wire.InvokeLLM) HostReply) {
	h.mu.Lock()
	h.llm = f
	h.mu.Unlock()
}

// NoLLMModel is the reply of a host whose workspace has no LLM model.
func NoLLMModel(wire.InvokeLLM) HostReply {
	return HostReply{Err: wire.ErrNoLLMModel}
}

// Calls returns the calls received so far.
func (h *Host) Calls() []HostCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HostCall(nil), h.calls...)
}

// Sends returns the send_message calls received so far.
func (h *Host) Sends() []HostCall {
	var out []HostCall
	for _, c := range h.Calls() {
		if c.Action == wire.ActionSendMessage {
			out = append(out, c)
		}
	}
	return out
}

// LLMCalls returns the invoke_llm calls received so far.
func (h *Host) LLMCalls() []HostCall {
	var out []HostCall
	for _, c := range h.Calls() {
		if c.Action == wire.ActionInvokeLLM {
			out = append(out, c)
		}
	}
	return out
}

// Reset forgets the calls received so far.
func (h *Host) Reset() {
	h.mu.Lock()
	h.calls = nil
	h.mu.Unlock()
}

// WaitSends waits until at least n send_message calls arrived, failing the
// test after timeout, and returns them.
func (h *Host) WaitSends(t testing.TB, n int, timeout time.Duration) []HostCall {
	t.Helper()
	deadline := time.After(timeout)
	for {
		h.mu.Lock()
		ch := h.changed
		h.mu.Unlock()
		if s := h.Sends(); len(s) >= n {
			return s
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("bustest: want %d send_message calls, got %d", n, len(h.Sends()))
			return nil
		}
	}
}
