package bustest

import (
	"context"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/busbench"
)

// Floor is the bus floor of one run (DESIGN 9), measured by
// busbench.MeasureFloor against the same server the benchmark uses, so
// figures are reported as ratios rather than absolutes: the echo, the echo
// whose responder reads one KV key, and a JetStream publish with ack.
type Floor struct {
	busbench.Floor
}

// MeasureFloor measures the floor on s with n operations of each kind, 32
// in flight for the rates.
func MeasureFloor(t testing.TB, s *Server, n int) Floor {
	t.Helper()
	f, err := busbench.MeasureFloor(context.Background(), s.Conn(t), s.Conn(t),
		busbench.FloorConfig{N: n, Inflight: 32, Bucket: "bustest_floor", Stream: "BUSTEST_FLOOR"})
	if err != nil {
		t.Fatalf("bustest: floor: %v", err)
	}
	return Floor{f}
}

// Throughput runs n operations with `inflight` of them at once and returns
// operations per second; an operation's error fails t.
func Throughput(t testing.TB, n, inflight int, op func() error) float64 {
	t.Helper()
	rate, err := busbench.Throughput(n, inflight, op)
	if err != nil {
		t.Fatalf("bustest: throughput: %v", err)
	}
	return rate
}

// Percentile returns the p-th percentile (0-100) of d; it sorts d.
func Percentile(d []time.Duration, p float64) time.Duration { return busbench.Percentile(d, p) }

// Report adds the floor to a benchmark's metrics (microseconds and ops/s).
func (f Floor) Report(b *testing.B) {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(f.Echo.P50), "floor-echo-p50-us")
	b.ReportMetric(us(f.KVEcho.P50), "floor-kv-p50-us")
	b.ReportMetric(us(f.JSPub.P50), "floor-jspub-p50-us")
	b.ReportMetric(f.Echo.RateN, "floor-echo32-ops/s")
	b.ReportMetric(f.KVEcho.RateN, "floor-kv32-ops/s")
	b.ReportMetric(f.JSPub.RateN, "floor-jspub32-ops/s")
}
