// Package busbench measures the bus floor (DESIGN 9): what bare NATS and
// JetStream cost on this machine against a given server, so that
// benchmarks report their figures as ratios to a floor measured in the
// same run rather than as absolutes. It also has the measuring loops the
// floor uses (latencies one at a time, throughput with many in flight,
// percentiles), for the figures that are compared with it.
//
// It does not depend on package testing, so that a command (lbctl bench
// invoke) measures the same floor the benchmarks do; pkg/bus/bustest wraps
// it for tests. It may import the standard library and the NATS client,
// nothing of this module.
package busbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrBadRun reports a measurement asked for with too few operations or
// nothing in flight.
var ErrBadRun = errors.New("busbench: need at least one operation and one in flight")

// Result is what Measure found for one operation.
type Result struct {
	P50, P99   time.Duration // latency, one in flight
	Rate1      float64       // operations per second, one in flight
	P50N, P99N time.Duration // latency, Inflight in flight
	RateN      float64       // operations per second, Inflight in flight
	Inflight   int
}

// Measure warms up with a tenth of n operations (at least 10), then runs
// op n times one at a time and n times with inflight of them at once.
func Measure(n, inflight int, op func() error) (Result, error) {
	r := Result{Inflight: inflight}
	if n < 1 || inflight < 1 {
		return r, ErrBadRun
	}
	for range max(n/10, 10) {
		if err := op(); err != nil {
			return r, fmt.Errorf("warm-up: %w", err)
		}
	}
	lat, rate, err := Run(n, 1, op)
	if err != nil {
		return r, err
	}
	r.P50, r.P99, r.Rate1 = Percentile(lat, 50), Percentile(lat, 99), rate
	if lat, rate, err = Run(n, inflight, op); err != nil {
		return r, err
	}
	r.P50N, r.P99N, r.RateN = Percentile(lat, 50), Percentile(lat, 99), rate
	return r, nil
}

// Run runs op n times with inflight of them at once. It returns every
// operation's latency, the operations per second, and the first error
// (the run goes on after one, so the rate covers n operations).
func Run(n, inflight int, op func() error) ([]time.Duration, float64, error) {
	if n < 1 || inflight < 1 {
		return nil, 0, ErrBadRun
	}
	lat := make([]time.Duration, n)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range inflight {
		wg.Go(func() {
			for i := range next {
				t := time.Now()
				err := op()
				lat[i] = time.Since(t)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return lat, float64(n) / time.Since(start).Seconds(), firstErr
}

// Throughput runs op n times with inflight of them at once and returns the
// operations per second.
func Throughput(n, inflight int, op func() error) (float64, error) {
	_, rate, err := Run(n, inflight, op)
	return rate, err
}

// Percentile returns the p-th percentile (0-100) of d; it sorts d.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[int(float64(len(d)-1)*p/100)]
}

// FloorConfig says how to measure the floor. Zero values are defaults.
type FloorConfig struct {
	N        int // operations per measurement (required)
	Inflight int // in flight for the throughput runs; default 32
	// Bucket is the KV bucket the KV echo reads (created, removed after);
	// default "busbench_floor".
	Bucket   string
	Replicas int // of the bucket and the stream; default 1
	// Prefix starts the floor's subjects, which end in a token unique to
	// the call; default "busbench".
	Prefix string
	// Stream, when set, also measures a JetStream publish with ack into a
	// file-stored stream of that name (created, removed after).
	Stream string
}

// Floor is the bus floor of one run.
type Floor struct {
	Echo   Result // request/reply echo
	KVEcho Result // echo whose responder reads one KV key
	JSPub  Result // JetStream publish with ack (durable storage); zero without FloorConfig.Stream
}

// floorPayload is about the size of a small invocation.
var floorPayload = []byte(`{"binding":{},"command":{"name":"x"}}`)

// MeasureFloor measures the floor on the server cli and srv are connected
// to: cli sends, srv responds, as a host and a service would. Its subjects
// are unique to the call, and it removes the bucket and stream it made.
func MeasureFloor(ctx context.Context, cli, srv *nats.Conn, cfg FloorConfig) (Floor, error) {
	var f Floor
	if cfg.N < 1 {
		return f, ErrBadRun
	}
	if cfg.Inflight == 0 {
		cfg.Inflight = 32
	}
	if cfg.Bucket == "" {
		cfg.Bucket = "busbench_floor"
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "busbench"
	}
	js, err := jetstream.New(srv)
	if err != nil {
		return f, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: cfg.Bucket, Storage: jetstream.FileStorage, Replicas: cfg.Replicas})
	if err != nil {
		return f, fmt.Errorf("floor bucket: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = js.DeleteKeyValue(dctx, cfg.Bucket)
	}()
	if _, err := kv.Put(ctx, "k", []byte(`{"state":"active"}`)); err != nil {
		return f, fmt.Errorf("floor bucket: %w", err)
	}
	base := cfg.Prefix + "." + strings.TrimPrefix(nats.NewInbox(), nats.InboxPrefix)
	echo, err := srv.Subscribe(base+".echo", func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		return f, err
	}
	defer echo.Unsubscribe()
	kvEcho, err := srv.Subscribe(base+".kv", func(m *nats.Msg) {
		e, err := kv.Get(ctx, "k")
		if err != nil {
			_ = m.Respond(nil) // an empty reply fails the request
			return
		}
		_ = m.Respond(e.Value())
	})
	if err != nil {
		return f, err
	}
	defer kvEcho.Unsubscribe()
	if err := srv.Flush(); err != nil {
		return f, err
	}
	req := func(subject string) func() error {
		return func() error {
			m, err := cli.Request(subject, floorPayload, 5*time.Second)
			if err == nil && len(m.Data) == 0 {
				err = errors.New("empty reply")
			}
			return err
		}
	}
	if f.Echo, err = Measure(cfg.N, cfg.Inflight, req(base+".echo")); err != nil {
		return f, fmt.Errorf("floor echo: %w", err)
	}
	if f.KVEcho, err = Measure(cfg.N, cfg.Inflight, req(base+".kv")); err != nil {
		return f, fmt.Errorf("floor echo with KV read: %w", err)
	}
	if cfg.Stream == "" {
		return f, nil
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: cfg.Stream, Subjects: []string{base + ".js"},
		Storage: jetstream.FileStorage, Replicas: cfg.Replicas, MaxMsgs: 100000}); err != nil {
		return f, fmt.Errorf("floor stream: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(dctx, cfg.Stream)
	}()
	cjs, err := jetstream.New(cli)
	if err != nil {
		return f, err
	}
	pub := func() error { _, err := cjs.Publish(ctx, base+".js", floorPayload); return err }
	if f.JSPub, err = Measure(cfg.N, cfg.Inflight, pub); err != nil {
		return f, fmt.Errorf("floor publish: %w", err)
	}
	return f, nil
}

// String formats the floor for logs and docs.
func (f Floor) String() string {
	s := fmt.Sprintf("echo p50 %v p99 %v, %.0f/s@%d; echo+KV p50 %v p99 %v, %.0f/s@%d",
		f.Echo.P50, f.Echo.P99, f.Echo.RateN, f.Echo.Inflight, f.KVEcho.P50, f.KVEcho.P99, f.KVEcho.RateN, f.KVEcho.Inflight)
	if f.JSPub.Inflight != 0 {
		s += fmt.Sprintf("; JS publish p50 %v p99 %v, %.0f/s@%d", f.JSPub.P50, f.JSPub.P99, f.JSPub.RateN, f.JSPub.Inflight)
	}
	return s
}
