package bus_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/langbot-nats/plugins/pkg/bus"
)

type fired struct {
	subject string
	ids     []string
	at      time.Time
	data    string
	linked  bool
}

func scheduleHarness(t *testing.T) (*harness, *tracetest.SpanRecorder, chan fired) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(rec))
	h := newHarness(t, bus.RunnerConfig{Handlers: echoHandlers()}, bus.RunnerDeps{TracerProvider: tp})
	subj := h.runner.Subjects()
	ctx := context.Background()
	if _, err := bus.EnsureStream(ctx, h.js, bus.StreamSpec{
		Name: "ECHO_TIMERS", Schedules: true, MaxMsgsPerSubject: 1,
		Subjects: []string{subj.InternalAll(plugin, bus.KindSched), subj.InternalAll(plugin, bus.KindDue)},
	}); err != nil {
		t.Fatal(err)
	}
	got := make(chan fired, 16)
	err := h.runner.ConsumeFired(ctx, bus.FiredConfig{Stream: "ECHO_TIMERS", Durable: "echo-due", Filter: subj.InternalAll(plugin, bus.KindDue)},
		func(ctx context.Context, f *bus.Fired) {
			got <- fired{subject: f.Subject, ids: f.IDs, at: time.Now(), data: string(f.Data), linked: f.Origin.IsValid()}
			_ = f.Ack(ctx)
		})
	if err != nil {
		t.Fatal(err)
	}
	return h, rec, got
}

func TestScheduleFiresAtDueSecond(t *testing.T) {
	h, _, got := scheduleHarness(t)
	subj := h.runner.Subjects()
	sc := bus.ScopeOf(bindingFor("i1", "w1", "n1", 1, 1))
	sched, _ := subj.Internal(plugin, bus.KindSched, sc, "r1")
	due, _ := subj.Internal(plugin, bus.KindDue, sc, "r1")
	at := time.Now().Add(2 * time.Second).Truncate(time.Second)
	if err := bus.ScheduleAt(context.Background(), h.js, sched, due, at, []byte(`{"id":"r1"}`), true); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-got:
		if f.subject != due || f.data != `{"id":"r1"}` || len(f.ids) != 1 || f.ids[0] != "r1" {
			t.Fatalf("fired %+v", f)
		}
		if f.at.Before(at) {
			t.Fatalf("fired at %v, before its due second %v", f.at, at)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("schedule did not fire")
	}
}
