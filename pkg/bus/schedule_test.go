package bus_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/langbot-nats/plugins/pkg/bus"
)

// The kinds of the test plugin's schedules and the subjects they fire on,
// as a service declares its own.
const (
	kindSched = "sched"
	kindDue   = "due"
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
	h := newHarness(t, bus.RunnerConfig{Handlers: echoHandlers()}, bus.Deps{TracerProvider: tp})
	subj := h.runner.Subjects()
	ctx := context.Background()
	if _, err := bus.EnsureStream(ctx, h.js, bus.StreamSpec{
		Name: "ECHO_TIMERS", Schedules: true, MaxMsgsPerSubject: 1,
		Subjects: []string{subj.InternalAll(plugin, kindSched), subj.InternalAll(plugin, kindDue)},
	}); err != nil {
		t.Fatal(err)
	}
	got := make(chan fired, 16)
	err := h.runner.ConsumeFired(ctx, bus.FiredConfig{Stream: "ECHO_TIMERS", Durable: "echo-due", Filter: subj.InternalAll(plugin, kindDue)},
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
	sched, _ := subj.Internal(plugin, kindSched, sc, "r1")
	due, _ := subj.Internal(plugin, kindDue, sc, "r1")
	at := time.Now().Add(2 * time.Second).Truncate(time.Second)
	if err := bus.ScheduleAt(context.Background(), h.js, sched, due, at, []byte(`{"id":"r1"}`), bus.KeepLastFired); err != nil {
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

func TestScheduleReplacedCancelledAndSurvivesRestart(t *testing.T) {
	h, _, got := scheduleHarness(t)
	subj := h.runner.Subjects()
	sc := bus.ScopeOf(bindingFor("i1", "w1", "n1", 1, 1))
	arm := func(id string, at time.Time, body string) {
		t.Helper()
		sched, _ := subj.Internal(plugin, kindSched, sc, id)
		due, _ := subj.Internal(plugin, kindDue, sc, id)
		if err := bus.ScheduleAt(context.Background(), h.js, sched, due, at, []byte(body), bus.KeepLastFired); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Now().Truncate(time.Second)
	// replaced: armed far away, then re-armed soon with another body
	arm("rep", base.Add(time.Hour), `"old"`)
	arm("rep", base.Add(2*time.Second), `"new"`)
	// cancelled: armed, then its schedule subject purged
	arm("can", base.Add(2*time.Second), `"cancelled"`)
	stream, err := h.js.Stream(context.Background(), "ECHO_TIMERS")
	if err != nil {
		t.Fatal(err)
	}
	canSched, _ := subj.Internal(plugin, kindSched, sc, "can")
	if err := bus.PurgeSubjects(context.Background(), stream, canSched); err != nil {
		t.Fatal(err)
	}
	// survives a restart: armed, server restarted before it is due
	arm("rst", base.Add(4*time.Second), `"restart"`)
	h.srv.Restart(t)

	seen := map[string]string{}
	timeout := time.After(15 * time.Second)
	for len(seen) < 2 {
		select {
		case f := <-got:
			seen[f.ids[0]] = f.data
		case <-timeout:
			t.Fatalf("fired so far: %v", seen)
		}
	}
	if seen["rep"] != `"new"` || seen["rst"] != `"restart"` {
		t.Fatalf("fired %v", seen)
	}
	select {
	case f := <-got:
		t.Fatalf("unexpected fire %+v (a cancelled or replaced schedule fired)", f)
	case <-time.After(1500 * time.Millisecond):
	}
}

func TestFiredSpanLinksToScheduler(t *testing.T) {
	h, rec, got := scheduleHarness(t)
	subj := h.runner.Subjects()
	sc := bus.ScopeOf(bindingFor("i1", "w1", "n1", 1, 1))
	tp := trace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "schedule")
	sched, _ := subj.Internal(plugin, kindSched, sc, "l1")
	due, _ := subj.Internal(plugin, kindDue, sc, "l1")
	if err := bus.ScheduleAt(ctx, h.js, sched, due, time.Now(), nil, bus.KeepLastFired); err != nil {
		t.Fatal(err)
	}
	span.End()
	select {
	case f := <-got:
		if !f.linked {
			t.Fatal("fired message carries no traceparent")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no fire")
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range rec.Ended() {
			if len(s.Links()) == 1 && s.Links()[0].SpanContext.TraceID() == span.SpanContext().TraceID() {
				if s.Parent().IsValid() {
					t.Fatal("fired span is a child, want a new trace with a link")
				}
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no fired span links to the scheduling trace")
}
