package bustest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// OpenLoop calls op rate times per second for d, each call on its own
// goroutine the way an open-loop load generator sends: a slow call does not
// delay the next one, so a stall shows as latency rather than as a lower
// rate. It returns the latencies of the calls that succeeded and the number
// that failed.
func OpenLoop(rate int, d time.Duration, op func(i int) error) ([]time.Duration, int) {
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs int
		wg   sync.WaitGroup
	)
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range int(d / interval) {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			err := op(i)
			l := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				return
			}
			lat = append(lat, l)
		}()
	}
	wg.Wait()
	return lat, errs
}

// PublishFloor is the durable-write floor under a service that answers
// only once its write is stored: bare JetStream publishes with ack, sent
// open loop at rate per second for d into a fresh file-backed stream on s,
// spread round robin over `subjects` subjects, each carrying size bytes.
// The stream is deleted afterwards, so the service measured next starts
// from the same disk. It returns the ack latencies (p50, p99) and the
// number of failed publishes.
func PublishFloor(t testing.TB, s *Server, rate int, d time.Duration, subjects, size int) (p50, p99 time.Duration, errs int) {
	t.Helper()
	ctx := context.Background()
	js, err := jetstream.New(s.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	const name = "BUSTEST_FLOOR_OPEN"
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"bustest.floor.open.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatalf("bustest: floor stream: %v", err)
	}
	defer func() {
		if err := js.DeleteStream(ctx, name); err != nil {
			t.Errorf("bustest: floor stream: %v", err)
		}
	}()
	names := make([]string, subjects)
	for i := range names {
		names[i] = "bustest.floor.open." + strconv.Itoa(i)
	}
	payload := []byte(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", max(size-11, 0))))
	lat, errs := OpenLoop(rate, d, func(i int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := js.Publish(ctx, names[i%subjects], payload)
		return err
	})
	return Percentile(lat, 50), Percentile(lat, 99), errs
}
