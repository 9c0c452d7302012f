package schenotify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// BenchmarkScheNotifyDelivery is the scale test of issue 3: 10,000
// reminders across 1,000 installations, 1,000 of them due in the same
// second, on one embedded server with durable storage (SyncAlways). It
// reports p50/p99 lateness (due second to the host receiving send_message),
// lost (created and not delivered within a minute) and duplicated
// deliveries, the adds refused (each also an error), the JetStream writes
// the service issued per delivery, and the bus floor of the same server.
//
//	go test -run '^$' -bench BenchmarkScheNotifyDelivery -benchtime 1x ./services/schenotify/
func BenchmarkScheNotifyDelivery(b *testing.B) {
	const (
		dueCount = 1000
		creators = 64
	)
	// SCHENOTIFY_BENCH_INSTALLS spreads the reminders over fewer
	// installations: 1 puts the whole due second in one installation (its
	// max_reminders is 1000, so there are no others), which the fired
	// pool's per-installation bound then partly defers.
	installations := 1000
	if v, err := strconv.Atoi(os.Getenv("SCHENOTIFY_BENCH_INSTALLS")); err == nil && v > 0 {
		installations = v
	}
	total := min(10000, installations*1000)
	for range b.N {
		srv := bustest.NewBenchServer(b)
		floor := bustest.MeasureFloor(b, srv, 500)
		fireP50, fireP99 := measureFireFloor(b, srv, dueCount)

		// A host that answers at once and records arrivals by key.
		hostConn := srv.Conn(b)
		var mu sync.Mutex
		arrivals := map[string][]time.Time{}
		var sends atomic.Int64
		sub, err := hostConn.Subscribe(wire.Subjects{}.HostActionAll(wire.ActionSendMessage), func(m *nats.Msg) {
			at := time.Now()
			sends.Add(1)
			mu.Lock()
			key := m.Header.Get(wire.HeaderIdempotencyKey)
			arrivals[key] = append(arrivals[key], at)
			mu.Unlock()
			_ = m.Respond([]byte(`{}`))
		})
		if err != nil {
			b.Fatal(err)
		}
		svc, err := schenotify.New(schenotify.Config{DefaultZone: "UTC", SweepDelay: -1},
			bus.Deps{Conn: srv.Conn(b), Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		var fmu sync.Mutex
		var published, fetched []time.Time
		svc.SetOnFired(func(p, f time.Time) {
			fmu.Lock()
			published, fetched = append(published, p), append(fetched, f)
			fmu.Unlock()
		})
		svcRun := bustest.Start(b, svc)
		cfg := json.RawMessage(`{"language":"en_US","max_reminders":1000}`)
		// An invocation never creates an installation (not_attached):
		// without its attach every add would be refused.
		attachAll(b, srv, svc, installations, cfg)
		inv := bus.NewInvoker(srv.Conn(b), wire.Subjects{}, nil)
		// created counts the due reminders whose add succeeded: a refused
		// add (an error above) is not a lost delivery
		var created atomic.Int64
		add := func(i int, due time.Time) error {
			bd := bind(fmt.Sprintf("bench-%04d", i%installations), 1)
			p, _ := json.Marshal(map[string]any{"message": fmt.Sprintf("reminder %d", i), "time_str": rfc(due)})
			raw, err := inv.Invoke(context.Background(), schenotify.Plugin, wire.EndpointTool, bus.NewInvocationID(), &wire.Request{
				Binding: bd, Config: cfg,
				Tool: &wire.Tool{Name: schenotify.ToolSchedule, Parameters: p, Session: sess("bot", "group", fmt.Sprint(i))}})
			if err != nil {
				return err
			}
			var r struct {
				Result struct{ Status, Code string }
			}
			if err := json.Unmarshal(raw, &r); err != nil || r.Result.Status != "ok" {
				return fmt.Errorf("add %d: %s %v", i, r.Result.Code, err)
			}
			if i < dueCount {
				created.Add(1)
			}
			return nil
		}
		run := func(from, to int, due func() time.Time) time.Duration {
			start := time.Now()
			var wg sync.WaitGroup
			next := atomic.Int64{}
			next.Store(int64(from))
			for range creators {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1) - 1)
						if i >= to {
							return
						}
						if err := add(i, due()); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			return time.Since(start)
		}
		b.ResetTimer()
		// 9,000 reminders due in an hour: stored schedules the server holds.
		far := time.Now().Add(time.Hour).Truncate(time.Second)
		tFar := run(dueCount, total, func() time.Time { return far })
		// 1,000 due in one second, after they are all created.
		ahead := tFar/9*2 + 3*time.Second
		// one installation takes its adds one at a time (its index is one
		// record): SCHENOTIFY_BENCH_AHEAD sets how far ahead they are due
		if v, err := time.ParseDuration(os.Getenv("SCHENOTIFY_BENCH_AHEAD")); err == nil && v > 0 {
			ahead = v
		}
		due := time.Now().Add(ahead).Truncate(time.Second)
		tDue := run(0, dueCount, func() time.Time { return due })
		if time.Now().After(due) {
			b.Fatalf("creation overran the due second")
		}
		writesBefore := svc.Writes()
		deadline := time.Now().Add(time.Until(due) + 60*time.Second)
		for sends.Load() < created.Load() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(3 * time.Second) // late duplicates would arrive here
		b.StopTimer()
		writes := svc.Writes() - writesBefore

		mu.Lock()
		var late []time.Duration
		dups := 0
		for _, at := range arrivals {
			late = append(late, at[0].Sub(due))
			dups += len(at) - 1
		}
		lost := int(created.Load()) - len(arrivals)
		refused := dueCount - int(created.Load())
		mu.Unlock()
		sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		fmu.Lock()
		var pubLate, fetchLate []time.Duration
		for i := range published {
			pubLate = append(pubLate, published[i].Sub(due))
			fetchLate = append(fetchLate, fetched[i].Sub(due))
		}
		fmu.Unlock()
		sort.Slice(pubLate, func(i, j int) bool { return pubLate[i] < pubLate[j] })
		sort.Slice(fetchLate, func(i, j int) bool { return fetchLate[i] < fetchLate[j] })
		b.ReportMetric(ms(bustest.Percentile(pubLate, 99)), "fired-p99-ms")
		b.ReportMetric(ms(fireP50), "floor-fire-p50-ms")
		b.ReportMetric(ms(fireP99), "floor-fire-p99-ms")
		b.Logf("fire floor (%d bare @at schedules due in one second, no consumer): p50 %v p99 %v", dueCount, fireP50, fireP99)
		b.Logf("server fired: p50 %v p99 %v; handler fetched: p50 %v p99 %v", bustest.Percentile(pubLate, 50), bustest.Percentile(pubLate, 99),
			bustest.Percentile(fetchLate, 50), bustest.Percentile(fetchLate, 99))
		b.ReportMetric(ms(bustest.Percentile(late, 50)), "late-p50-ms")
		b.ReportMetric(ms(bustest.Percentile(late, 99)), "late-p99-ms")
		b.ReportMetric(float64(lost), "lost")
		b.ReportMetric(float64(dups), "duplicated")
		b.ReportMetric(float64(refused), "refused-adds")
		b.ReportMetric(float64(writes)/float64(max(1, len(arrivals))), "js-writes/delivery")
		b.ReportMetric(float64(total)/(tFar+tDue).Seconds(), "adds/s")
		floor.Report(b)
		b.Logf("created %d reminders in %v (%d installations); 1000 due at %s; lateness min %v p50 %v p99 %v max %v; lost %d, duplicated %d, adds refused %d; %d service writes for %d deliveries; floor: %s",
			total, tFar+tDue, installations, due.Format(time.TimeOnly), late[0], bustest.Percentile(late, 50),
			bustest.Percentile(late, 99), late[len(late)-1], lost, dups, refused, writes, len(arrivals), floor)
		svcRun.Stop()
		_ = sub.Unsubscribe()
	}
}

// measureFireFloor is the server's own share of the lateness: n bare @at
// schedules due in the same second on a schedule stream of the same server,
// with nobody consuming, and the lag of the fired messages' timestamps.
func measureFireFloor(b *testing.B, srv *bustest.Server, n int) (p50, p99 time.Duration) {
	b.Helper()
	ctx := context.Background()
	js := srv.JetStream(b)
	st, err := bus.EnsureStream(ctx, js, bus.StreamSpec{Name: "BENCH_FIRE", Subjects: []string{"benchfire.>"}, Schedules: true, MaxMsgsPerSubject: 1})
	if err != nil {
		b.Fatal(err)
	}
	due := time.Now().Add(3*time.Second + time.Duration(n)*2*time.Millisecond).Truncate(time.Second).Add(time.Second)
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if err := bus.ScheduleAt(ctx, js, fmt.Sprintf("benchfire.sched.%d", i), fmt.Sprintf("benchfire.due.%d", i), due, []byte("x")); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if time.Now().After(due) {
		b.Fatalf("fire floor: arming overran the due second")
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"benchfire.due.>"}})
	if err != nil {
		b.Fatal(err)
	}
	var lags []time.Duration
	deadline := time.Now().Add(time.Until(due) + 60*time.Second)
	for len(lags) < n && time.Now().Before(deadline) {
		batch, err := cons.Fetch(n-len(lags), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		for m := range batch.Messages() {
			if meta, err := m.Metadata(); err == nil {
				lags = append(lags, meta.Timestamp.Sub(due))
			}
		}
	}
	if err := js.DeleteStream(ctx, "BENCH_FIRE"); err != nil {
		b.Fatal(err)
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	return bustest.Percentile(lags, 50), bustest.Percentile(lags, 99)
}

// BenchmarkScheNotifyAIDelivery is issue 29's lateness of the AI-written
// kind next to fixed text, on one embedded server with durable storage
// (SyncAlways): 1,000 reminders across 1,000 installations due in one
// second, first fixed text, then the AI-written kind, whose host LLM
// answers at once. It reports p50/p99 from the due second to the host
// receiving send_message for fixed text, and for the AI kind from the due
// second to the host receiving the invoke_llm request and send_message;
// the ratio of the AI kind's invoke_llm p99 to the fixed text's p99; lost
// and duplicated deliveries and LLM requests of both rounds.
//
//	go test -run '^$' -bench BenchmarkScheNotifyAIDelivery -benchtime 1x ./services/schenotify/
func BenchmarkScheNotifyAIDelivery(b *testing.B) {
	const (
		dueCount = 1000
		creators = 64
	)
	ahead := 20 * time.Second
	if v, err := time.ParseDuration(os.Getenv("SCHENOTIFY_BENCH_AHEAD")); err == nil && v > 0 {
		ahead = v
	}
	for range b.N {
		srv := bustest.NewBenchServer(b)
		hostConn := srv.Conn(b)
		var mu sync.Mutex
		sends := map[string][]time.Time{} // by idempotency key
		asks := map[string][]time.Time{}  // invoke_llm requests by prompt
		var sent atomic.Int64
		subSend, err := hostConn.Subscribe(wire.Subjects{}.HostActionAll(wire.ActionSendMessage), func(m *nats.Msg) {
			at := time.Now()
			mu.Lock()
			key := m.Header.Get(wire.HeaderIdempotencyKey)
			sends[key] = append(sends[key], at)
			mu.Unlock()
			sent.Add(1)
			_ = m.Respond([]byte(`{}`))
		})
		if err != nil {
			b.Fatal(err)
		}
		// The subscription's callbacks run one after another: the arrival
		// is taken first and the decoding done beside it, so the host's own
		// work is not counted as the next request's lateness.
		var answering sync.WaitGroup
		subLLM, err := hostConn.Subscribe(wire.Subjects{}.HostActionAll(wire.ActionInvokeLLM), func(m *nats.Msg) {
			at := time.Now()
			answering.Add(1)
			go func() {
				defer answering.Done()
				var req wire.HostRequest
				var q wire.InvokeLLM
				if json.Unmarshal(m.Data, &req) != nil || json.Unmarshal(req.Data, &q) != nil || len(q.Messages) == 0 {
					return
				}
				prompt := q.Messages[len(q.Messages)-1].Content
				mu.Lock()
				asks[prompt] = append(asks[prompt], at)
				mu.Unlock()
				out, _ := json.Marshal(wire.LLMAnswer{Text: "answer to " + prompt, Model: "bench"})
				_ = m.Respond(out)
			}()
		})
		if err != nil {
			b.Fatal(err)
		}
		svc, err := schenotify.New(schenotify.Config{DefaultZone: "UTC", SweepDelay: -1},
			bus.Deps{Conn: srv.Conn(b), Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		svcRun := bustest.Start(b, svc)
		cfg := json.RawMessage(`{"language":"en_US","max_reminders":1000}`)
		attachAll(b, srv, svc, dueCount, cfg)
		inv := bus.NewInvoker(srv.Conn(b), wire.Subjects{}, nil)
		// round creates dueCount reminders of one kind due in the same
		// second, waits for their deliveries (and 3 s for duplicates), and
		// returns the due second and what the host received.
		round := func(kind string) (time.Time, map[string][]time.Time, map[string][]time.Time, int) {
			due := time.Now().Add(ahead).Truncate(time.Second)
			var created atomic.Int64
			var wg sync.WaitGroup
			next := atomic.Int64{}
			for range creators {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1) - 1)
						if i >= dueCount {
							return
						}
						p, _ := json.Marshal(map[string]any{"message": fmt.Sprintf("%s %d", kind, i), "time_str": rfc(due), "ai": kind == "ai"})
						raw, err := inv.Invoke(context.Background(), schenotify.Plugin, wire.EndpointTool, bus.NewInvocationID(), &wire.Request{
							Binding: bind(fmt.Sprintf("bench-%04d", i), 1), Config: cfg,
							Tool: &wire.Tool{Name: schenotify.ToolSchedule, Parameters: p, Session: sess("bot", "group", fmt.Sprint(i))}})
						var r struct {
							Result struct{ Status, Code string }
						}
						if err != nil || json.Unmarshal(raw, &r) != nil || r.Result.Status != "ok" {
							b.Errorf("add %s %d: %s %v", kind, i, r.Result.Code, err)
							return
						}
						created.Add(1)
					}
				}()
			}
			wg.Wait()
			if time.Now().After(due) {
				b.Fatalf("%s: creation overran the due second (set SCHENOTIFY_BENCH_AHEAD)", kind)
			}
			deadline := time.Now().Add(time.Until(due) + 60*time.Second)
			for sent.Load() < created.Load() && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(3 * time.Second) // late duplicates would arrive here
			mu.Lock()
			s, a := sends, asks
			sends, asks = map[string][]time.Time{}, map[string][]time.Time{}
			mu.Unlock()
			sent.Store(0)
			return due, s, a, int(created.Load())
		}
		lateness := func(due time.Time, got map[string][]time.Time) (late []time.Duration, dups int) {
			for _, at := range got {
				late = append(late, at[0].Sub(due))
				dups += len(at) - 1
			}
			sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
			return late, dups
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

		b.ResetTimer()
		fixedDue, fixedSends, _, fixedCreated := round("fixed")
		aiDue, aiSends, aiAsks, aiCreated := round("ai")
		b.StopTimer()

		fixedLate, fixedDups := lateness(fixedDue, fixedSends)
		aiLate, aiDups := lateness(aiDue, aiSends)
		askLate, askDups := lateness(aiDue, aiAsks)
		if len(fixedLate) == 0 || len(aiLate) == 0 || len(askLate) == 0 {
			b.Fatalf("nothing delivered: %d fixed, %d AI sends, %d invoke_llm", len(fixedLate), len(aiLate), len(askLate))
		}
		fixedP99, askP99 := bustest.Percentile(fixedLate, 99), bustest.Percentile(askLate, 99)
		b.ReportMetric(ms(bustest.Percentile(fixedLate, 50)), "fixed-late-p50-ms")
		b.ReportMetric(ms(fixedP99), "fixed-late-p99-ms")
		b.ReportMetric(ms(bustest.Percentile(askLate, 50)), "ai-llm-p50-ms")
		b.ReportMetric(ms(askP99), "ai-llm-p99-ms")
		b.ReportMetric(ms(bustest.Percentile(aiLate, 50)), "ai-late-p50-ms")
		b.ReportMetric(ms(bustest.Percentile(aiLate, 99)), "ai-late-p99-ms")
		b.ReportMetric(float64(askP99)/float64(max(fixedP99, time.Millisecond)), "ai-llm-p99/fixed-p99")
		b.ReportMetric(float64(fixedCreated-len(fixedSends)+aiCreated-len(aiSends)), "lost")
		b.ReportMetric(float64(fixedDups+aiDups), "duplicated")
		b.ReportMetric(float64(askDups), "llm-asked-twice")
		b.Logf("fixed text: %d due at %s, lateness min %v p50 %v p99 %v max %v, %d lost, %d duplicated",
			fixedCreated, fixedDue.Format(time.TimeOnly), fixedLate[0], bustest.Percentile(fixedLate, 50), fixedP99, fixedLate[len(fixedLate)-1],
			fixedCreated-len(fixedSends), fixedDups)
		b.Logf("AI-written: %d due at %s; invoke_llm min %v p50 %v p99 %v max %v; send p50 %v p99 %v max %v; %d lost, %d duplicated, %d prompts asked twice",
			aiCreated, aiDue.Format(time.TimeOnly), askLate[0], bustest.Percentile(askLate, 50), askP99, askLate[len(askLate)-1],
			bustest.Percentile(aiLate, 50), bustest.Percentile(aiLate, 99), aiLate[len(aiLate)-1], aiCreated-len(aiSends), aiDups, askDups)
		svcRun.Stop()
		_ = subSend.Unsubscribe()
		_ = subLLM.Unsubscribe()
		answering.Wait()
	}
}

// attachAll attaches installations bench-0000 ... bench-<n-1> (binding
// revision 1) with cfg and waits until svc's view has them all active, as
// their host would have before any invocation: an invocation on a scope
// without an attach is refused (not_attached).
func attachAll(b *testing.B, srv *bustest.Server, svc *schenotify.Service, n int, cfg json.RawMessage) {
	b.Helper()
	js := srv.JetStream(b)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := bus.PublishAttach(ctx, js, wire.Subjects{}, schenotify.Plugin,
				wire.Attach{Binding: bind(fmt.Sprintf("bench-%04d", i), 1), Config: cfg, Enabled: true}, ""); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	bustest.WaitLifecycle(b, js, wire.Subjects{}, schenotify.Plugin, time.Minute)
	for i := range n {
		bustest.WaitAuthority(b, svc.Runner(), bus.ScopeOf(bind(fmt.Sprintf("bench-%04d", i), 1)), nil)
	}
}
