package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// BenchmarkRunnerInvoke measures a command through the runner (binding
// check, authority view, worker pool, reply) and a deduplicated command
// (one KV create and one KV put more), next to the bus floor of the same
// run. The ratios are the figures to read: the runner's cost over bare NATS.
func BenchmarkRunnerInvoke(b *testing.B) {
	srv := bustest.NewBenchServer(b)
	nc := srv.Conn(b)
	var n atomic.Int64
	r, err := bus.NewRunner(bus.RunnerConfig{Plugin: plugin, Handlers: bus.Handlers{
		Command: func(ctx context.Context, inv *bus.Invocation) (any, error) {
			n.Add(1)
			return wire.CommandReply{Returns: []wire.Return{{Text: "ok"}}}, nil
		},
		Dedupe: func(inv *bus.Invocation) bool { return inv.Command.Name == "write" },
	}}, bus.Deps{Conn: nc})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer r.Shutdown(context.Background())
	inv := bus.NewInvoker(srv.Conn(b), wire.Subjects{}, nil)
	bd := bindingFor("i", "w", "n", 1, 1)
	bustest.Attach(b, srv.JetStream(b), plugin, bd, json.RawMessage(`{}`), true)
	var seq atomic.Int64
	op := func(name string) func() error {
		req := &wire.Request{Binding: bd, Config: json.RawMessage(`{}`), Command: &wire.Command{Name: name, Params: []string{"x"}}}
		return func() error {
			_, err := inv.Invoke(context.Background(), plugin, wire.EndpointCommand, fmt.Sprintf("b-%d", seq.Add(1)), req)
			return err
		}
	}
	if err := op("read")(); err != nil { // warms the view and the connection
		b.Fatal(err)
	}
	const count = 2000
	floor := bustest.MeasureFloor(b, srv, count)
	lat := func(f func() error) (time.Duration, time.Duration) {
		d := make([]time.Duration, 0, count)
		for range count {
			start := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			d = append(d, time.Since(start))
		}
		return bustest.Percentile(d, 50), bustest.Percentile(d, 99)
	}
	b.ResetTimer()
	for range b.N {
		rp50, rp99 := lat(op("read"))
		rrate := bustest.Throughput(b, count, 32, op("read"))
		wp50, wp99 := lat(op("write"))
		wrate := bustest.Throughput(b, count, 32, op("write"))
		us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
		b.ReportMetric(us(rp50), "read-p50-us")
		b.ReportMetric(us(rp99), "read-p99-us")
		b.ReportMetric(rrate, "read32-ops/s")
		b.ReportMetric(us(wp50), "dedupe-p50-us")
		b.ReportMetric(us(wp99), "dedupe-p99-us")
		b.ReportMetric(wrate, "dedupe32-ops/s")
		b.ReportMetric(float64(rp50)/float64(floor.KVEcho.P50), "read-p50/kv-floor")
		b.ReportMetric(rrate/floor.KVEcho.RateN, "read32/kv-floor32")
		floor.Report(b)
		b.Logf("floor: %s", floor)
	}
}

// BenchmarkHistoryTrimFloor measures what bounding per-subject histories
// costs the writes of a stream that interleaves them, with no service in
// the way: 3,000 durable publishes/s open loop over 1,000 subjects that
// already hold 290 messages each, bounded at 300 either by purges below
// the 300th newest once a subject holds 330 (how takeover trims, spec
// §5.3 rule 6) or by the stream's own MaxMsgsPerSubject. A purge by subject
// walks every message of the stream in the purged range, holding the
// store's lock, so its cost grows with the interleaving; the server's
// per-subject limit removes one known message per write.
// TRIM_FLOOR_SECONDS sets the measured phase (default 20).
func BenchmarkHistoryTrimFloor(b *testing.B) {
	secs := 20
	if v, err := strconv.Atoi(os.Getenv("TRIM_FLOOR_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	const subjects, size, limit, rate = 1000, 440, 300, 3000
	for _, mode := range []struct {
		name   string
		server bool
		shards int
		read   bool
	}{{"purge", false, 1, false}, {"purge-16-streams", false, 16, false}, {"read-purge-16-streams", false, 16, true}, {"server-limit", true, 1, false}} {
		if only := os.Getenv("TRIM_FLOOR_MODE"); only != "" && only != mode.name {
			continue
		}
		b.StopTimer()
		srv := bustest.NewBenchServer(b)
		f := bustest.NewWriteFloor(b, srv, bustest.WriteFloorConfig{Subjects: subjects, Size: size, Limit: limit, Slack: limit / 10, ServerLimit: mode.server, Shards: mode.shards, Read: mode.read})
		// 290 messages per subject, as fast as the server takes them
		if _, _, errs, _ := f.Run(5000, 290*subjects*time.Second/5000); errs > 0 {
			b.Fatalf("%s: prefill: %d errors", mode.name, errs)
		}
		b.StartTimer()
		p50, p99, errs, trims := f.Run(rate, time.Duration(secs)*time.Second)
		b.Logf("%s: %d/s for %d s: publish p50 %v p99 %v, %d errors, %d purges", mode.name, rate, secs, p50, p99, errs, trims)
		b.ReportMetric(float64(p99.Microseconds()), "p99-us-"+mode.name)
		b.ReportMetric(float64(p50.Microseconds()), "p50-us-"+mode.name)
	}
}
