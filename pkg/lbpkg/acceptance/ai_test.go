package acceptance_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// fakeLLMModel is the one LLM model of the fake LangBot.
const fakeLLMModel = "fake-llm"

// TestAIReminderThroughPackage is issue 29's AI-written reminder through
// LangBot's real runtime and the ScheNotify package, with a fake LLM on
// LangBot's side: the prompt goes out (invoke_llm, through the SDK) at the
// due second, the answer is delivered once; a failing LLM, and a
// workspace without a model, deliver the fallback.
func TestAIReminderThroughPackage(t *testing.T) {
	e := newEnv(t, schenotify.Plugin)
	ctx := ctxT(t, 3*time.Minute)
	sn := e.ins[schenotify.Plugin]
	sendText := func(c runtimetest.HostCall) string {
		var d struct {
			Chain []struct {
				Type, Text string
			} `json:"message_chain"`
		}
		if err := json.Unmarshal(c.Data, &d); err != nil {
			t.Fatalf("send_message %s: %v", c.Data, err)
		}
		var b strings.Builder
		for _, p := range d.Chain {
			b.WriteString(p.Text)
		}
		return strings.TrimSpace(b.String())
	}
	add := func(prompt string) time.Time {
		t.Helper()
		// Due a few seconds ahead: the command's way through the runtime
		// takes a moment on a loaded machine.
		due := time.Now().Truncate(time.Second).Add(6 * time.Second)
		rets, err := e.rt.Command(ctx, sn, "!sche add "+due.UTC().Format("2006-01-02 15:04:05")+" ai: "+prompt, group, 1)
		if err != nil || len(rets) != 1 || !strings.Contains(strings.Join(runtimetest.Texts(rets), "\n"), "the AI writes this reminder") {
			t.Fatalf("add = %+v, %v", rets, err)
		}
		if time.Now().After(due) {
			t.Skipf("the add took until after the due second %s; nothing to measure", due.Format(time.StampMilli))
		}
		return due
	}

	// The answer, delivered once.
	due := add("today's weather and a motivational line")
	sends := e.rt.WaitSends(t, 1, 30*time.Second)
	llm := e.rt.LLMCalls()
	if len(llm) != 1 {
		t.Fatalf("%d invoke_llm calls, want 1", len(llm))
	}
	q := llm[0].LLMRequest()
	if q.Model != fakeLLMModel || q.Prompt() != "today's weather and a motivational line" || llm[0].Binding != sn.Binding {
		t.Fatalf("invoke_llm %+v with binding %+v", q, llm[0].Binding)
	}
	if llm[0].At.Before(due) || llm[0].At.After(due.Add(3*time.Second)) {
		t.Errorf("the prompt reached LangBot at %s, due %s", llm[0].At.Format(time.StampMilli), due.Format(time.StampMilli))
	}
	if got := sendText(sends[0]); got != "[Notify] fake LLM: today's weather and a motivational line" {
		t.Fatalf("delivered %q", got)
	}
	if sends[0].Binding != sn.Binding {
		t.Fatalf("send binding %+v", sends[0].Binding)
	}

	// A failing LLM: the fallback, naming the reminder.
	e.rt.SetHostReply("invoke_llm", func(runtimetest.HostCall) (any, error) {
		return nil, errors.New("RuntimeError: the provider answered 500")
	})
	add("a haiku about Friday")
	sends = e.rt.WaitSends(t, 2, 30*time.Second)
	if got := sendText(sends[1]); !strings.Contains(got, "the AI did not answer this time") || !strings.Contains(got, "a haiku about Friday") {
		t.Fatalf("fallback %q", got)
	}

	// No model in the workspace: the fallback says so.
	e.rt.SetHostReply("invoke_llm", nil)
	e.rt.SetHostReply("get_llm_models", func(runtimetest.HostCall) (any, error) {
		return map[string]any{"llm_models": []string{}}, nil
	})
	add("the week's summary")
	sends = e.rt.WaitSends(t, 3, 30*time.Second)
	if got := sendText(sends[2]); !strings.Contains(got, "no AI model is set up") {
		t.Fatalf("fallback without a model %q", got)
	}
	if n := len(e.rt.LLMCalls()); n != 2 {
		t.Errorf("%d invoke_llm calls, want 2 (none without a model)", n)
	}
	// Each delivered once: nothing more arrives.
	time.Sleep(2 * time.Second)
	if n := len(e.rt.Sends()); n != 3 {
		t.Fatalf("%d sends, want 3", n)
	}
}
