package busbench_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/busbench"
)

func TestPercentile(t *testing.T) {
	d := []time.Duration{9, 1, 8, 2, 7, 3, 6, 4, 5, 10}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{0, 1}, {50, 5}, {99, 9}, {100, 10}} {
		if got := busbench.Percentile(d, tc.p); got != tc.want {
			t.Errorf("Percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := busbench.Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile of nothing = %v, want 0", got)
	}
}

func TestRunCountsEveryOperation(t *testing.T) {
	var calls atomic.Int64
	boom := errors.New("boom")
	lat, rate, err := busbench.Run(100, 8, func() error {
		if calls.Add(1) == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want the operation's", err)
	}
	if calls.Load() != 100 || len(lat) != 100 || rate <= 0 {
		t.Fatalf("%d calls, %d latencies, rate %v; want 100, 100, > 0", calls.Load(), len(lat), rate)
	}
}

func TestMeasureRefusesEmptyRuns(t *testing.T) {
	op := func() error { return nil }
	for _, tc := range []struct{ n, inflight int }{{0, 1}, {1, 0}, {-1, 32}} {
		if _, err := busbench.Measure(tc.n, tc.inflight, op); !errors.Is(err, busbench.ErrBadRun) {
			t.Errorf("Measure(%d, %d): %v, want ErrBadRun", tc.n, tc.inflight, err)
		}
	}
	if _, err := busbench.MeasureFloor(context.Background(), nil, nil, busbench.FloorConfig{}); !errors.Is(err, busbench.ErrBadRun) {
		t.Errorf("MeasureFloor with N 0: %v, want ErrBadRun", err)
	}
}

func TestMeasureReportsWarmUpFailure(t *testing.T) {
	boom := errors.New("boom")
	if _, err := busbench.Measure(10, 1, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the operation's", err)
	}
}

// TestMeasureFloor measures on a real server: every figure is there, and
// the bucket and stream the floor made are gone afterwards.
func TestMeasureFloor(t *testing.T) {
	s := bustest.NewServer(t)
	ctx := context.Background()
	f, err := busbench.MeasureFloor(ctx, s.Conn(t), s.Conn(t), busbench.FloorConfig{N: 20, Inflight: 4, Bucket: "floor_test", Stream: "FLOOR_TEST"})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]busbench.Result{"echo": f.Echo, "kv echo": f.KVEcho, "publish": f.JSPub} {
		if r.P50 <= 0 || r.P99 < r.P50 || r.Rate1 <= 0 || r.P50N <= 0 || r.RateN <= 0 || r.Inflight != 4 {
			t.Errorf("%s: %+v", name, r)
		}
	}
	js := s.JetStream(t)
	if _, err := js.KeyValue(ctx, "floor_test"); err == nil {
		t.Error("the floor's bucket was left behind")
	}
	if _, err := js.Stream(ctx, "FLOOR_TEST"); err == nil {
		t.Error("the floor's stream was left behind")
	}
	f, err = busbench.MeasureFloor(ctx, s.Conn(t), s.Conn(t), busbench.FloorConfig{N: 10})
	if err != nil {
		t.Fatal(err)
	}
	if f.JSPub != (busbench.Result{}) || f.KVEcho.Inflight != 32 {
		t.Errorf("without a stream: publish %+v, in flight %d; want none and 32", f.JSPub, f.KVEcho.Inflight)
	}
}
