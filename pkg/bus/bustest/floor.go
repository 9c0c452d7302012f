package bustest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Floor is the bus floor of one run (DESIGN 9): what bare NATS and
// JetStream cost on this machine, measured against the same server the
// benchmark uses, so figures are reported as ratios rather than absolutes.
type Floor struct {
	EchoP50, EchoP99     time.Duration // request/reply echo, one in flight
	EchoRate32           float64       // echo requests/s at 32 in flight
	KVEchoP50, KVEchoP99 time.Duration // echo whose responder reads one KV key
	KVEchoRate32         float64
	JSPubP50, JSPubP99   time.Duration // JetStream publish with ack (durable storage)
	JSPubRate32          float64
}

// MeasureFloor measures the floor with n operations of each kind.
func MeasureFloor(t testing.TB, s *Server, n int) Floor {
	t.Helper()
	ctx := context.Background()
	srvConn := s.Conn(t)
	cli := s.Conn(t)
	js, err := jetstream.New(srvConn)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "bustest_floor", Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte(`{"state":"active"}`)); err != nil {
		t.Fatal(err)
	}
	echo, _ := srvConn.QueueSubscribe("bustest.floor.echo", "q", func(m *nats.Msg) { _ = m.Respond(m.Data) })
	kvEcho, _ := srvConn.QueueSubscribe("bustest.floor.kv", "q", func(m *nats.Msg) {
		e, err := kv.Get(ctx, "k")
		if err != nil {
			_ = m.Respond(nil)
			return
		}
		_ = m.Respond(e.Value())
	})
	defer echo.Unsubscribe()
	defer kvEcho.Unsubscribe()
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BUSTEST_FLOOR", Subjects: []string{"bustest.floor.js"}, Storage: jetstream.FileStorage, MaxMsgs: 100000}); err != nil {
		t.Fatal(err)
	}
	cjs, _ := jetstream.New(cli)
	payload := []byte(`{"binding":{},"command":{"name":"x"}}`)
	req := func(subject string) func() error {
		return func() error { _, err := cli.Request(subject, payload, 5*time.Second); return err }
	}
	pub := func() error { _, err := cjs.Publish(ctx, "bustest.floor.js", payload); return err }

	var f Floor
	f.EchoP50, f.EchoP99 = latencies(t, n, req("bustest.floor.echo"))
	f.EchoRate32 = Throughput(t, n, 32, req("bustest.floor.echo"))
	f.KVEchoP50, f.KVEchoP99 = latencies(t, n, req("bustest.floor.kv"))
	f.KVEchoRate32 = Throughput(t, n, 32, req("bustest.floor.kv"))
	f.JSPubP50, f.JSPubP99 = latencies(t, n, pub)
	f.JSPubRate32 = Throughput(t, n, 32, pub)
	return f
}

func latencies(t testing.TB, n int, op func() error) (p50, p99 time.Duration) {
	d := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := op(); err != nil {
			t.Fatalf("bustest: floor: %v", err)
		}
		d = append(d, time.Since(start))
	}
	return Percentile(d, 50), Percentile(d, 99)
}

// Throughput runs n operations with `inflight` of them at once and returns
// operations per second.
func Throughput(t testing.TB, n, inflight int, op func() error) float64 {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	start := time.Now()
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				if err := op(); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("bustest: throughput: %v", firstErr)
	}
	return float64(n) / time.Since(start).Seconds()
}

// Percentile returns the p-th percentile (0-100) of d; it sorts d.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(float64(len(d)-1) * p / 100)
	return d[i]
}

// Report adds the floor to a benchmark's metrics (microseconds and ops/s).
func (f Floor) Report(b *testing.B) {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(f.EchoP50), "floor-echo-p50-us")
	b.ReportMetric(us(f.KVEchoP50), "floor-kv-p50-us")
	b.ReportMetric(us(f.JSPubP50), "floor-jspub-p50-us")
	b.ReportMetric(f.EchoRate32, "floor-echo32-ops/s")
	b.ReportMetric(f.KVEchoRate32, "floor-kv32-ops/s")
	b.ReportMetric(f.JSPubRate32, "floor-jspub32-ops/s")
}

// String formats the floor for logs and docs.
func (f Floor) String() string {
	return fmt.Sprintf("echo p50 %v p99 %v, %.0f/s@32; echo+KV p50 %v p99 %v, %.0f/s@32; JS publish p50 %v p99 %v, %.0f/s@32",
		f.EchoP50, f.EchoP99, f.EchoRate32, f.KVEchoP50, f.KVEchoP99, f.KVEchoRate32, f.JSPubP50, f.JSPubP99, f.JSPubRate32)
}
