package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// invoke_llm: the answer comes back decoded, timeout_ms is filled from
// the caller's deadline (so the host gives up first), and a host without
// a model answers ErrNoLLMModel, which errors.Is tells apart from any
// other 404.
func TestHostInvokeLLM(t *testing.T) {
	srv := bustest.NewServer(t)
	fake := bustest.NewHost(t, srv.Conn(t), wire.Subjects{})
	host := bus.NewHost(srv.Conn(t), wire.Subjects{}, "schenotify", nil)
	b := bindingFor("i", "w", "n", 1, 1)
	req := wire.InvokeLLM{Messages: []wire.LLMMessage{{Role: wire.RoleUser, Content: "hello"}}}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ans, err := host.InvokeLLM(ctx, b, req)
	if err != nil || ans.Text != "LLM: hello" || ans.Model != bustest.LLMModel {
		t.Fatalf("InvokeLLM = %+v, %v", ans, err)
	}
	calls := fake.LLMCalls()
	if len(calls) != 1 || calls[0].IdempotencyKey != "" || calls[0].Request.Plugin != "schenotify" || calls[0].Request.Binding != b {
		t.Fatalf("calls %+v", calls)
	}
	if ms := calls[0].InvokeLLM().TimeoutMS; ms <= 0 || ms > 10000 {
		t.Errorf("timeout_ms %d, want within the caller's 10 s", ms)
	}

	fake.AnswerLLM(bustest.NoLLMModel)
	_, err = host.InvokeLLM(ctx, b, req)
	if !errors.Is(err, wire.ErrNoLLMModel) || !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("no model: %v", err)
	}
	fake.AnswerLLM(func(wire.InvokeLLM) bustest.HostReply { return bustest.HostReply{Err: wire.ErrNotFound} })
	if _, err = host.InvokeLLM(ctx, b, req); errors.Is(err, wire.ErrNoLLMModel) || !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("another 404: %v", err)
	}
}
