package bustest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
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

// WriteFloor is the durable-write floor under a service that answers only
// once its write is stored: bare JetStream publishes with ack, sent open
// loop into a file-backed stream of its own, spread round robin over a
// number of subjects, optionally kept bounded per subject. The stream
// lives until the test ends, so successive runs grow it as a service's
// stream grows over the same runs.
type WriteFloor struct {
	t       testing.TB
	cfg     WriteFloorConfig
	js      jetstream.JetStream
	sts     []jetstream.Stream  // subject i is in sts[i % len(sts)]
	readers []*bus.DirectReader // with Read, one per stream
	names   []string
	payload []byte

	mu   sync.Mutex
	seqs [][]uint64 // per subject, the stored sequences not yet trimmed
}

// WriteFloorConfig shapes a WriteFloor.
type WriteFloorConfig struct {
	Subjects int // messages go round robin over this many subjects
	Size     int // bytes per message
	// Limit, when not 0, bounds each subject the way a history with a trim
	// slack is: once a subject holds Limit+Slack messages, everything
	// below its newest Limit is purged by sequence, off the publishing
	// path.
	Limit, Slack int
	// ServerLimit leaves the bound to the server instead: the stream's
	// MaxMsgsPerSubject is Limit, and nothing is purged.
	ServerLimit bool
	// Shards spreads the subjects over this many streams (default 1), so
	// fewer of them interleave in each.
	Shards int
	// Read makes each trim first read the messages it drops and the first
	// one it keeps, with one batched direct get by subject, as the takeover
	// service does to note the attachments of the entries it drops.
	Read bool
}

// NewWriteFloor creates the floor's stream on s.
func NewWriteFloor(t testing.TB, s *Server, cfg WriteFloorConfig) *WriteFloor {
	t.Helper()
	js, err := jetstream.New(s.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Shards = max(cfg.Shards, 1)
	f := &WriteFloor{t: t, cfg: cfg, js: js, names: make([]string, cfg.Subjects), seqs: make([][]uint64, cfg.Subjects),
		payload: []byte(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", max(cfg.Size-11, 0))))}
	for k := range cfg.Shards {
		name := "BUSTEST_WRITE_FLOOR_" + strconv.Itoa(k)
		sc := jetstream.StreamConfig{Name: name, Subjects: []string{"bustest.floor.write." + strconv.Itoa(k) + ".>"}, Storage: jetstream.FileStorage, AllowDirect: cfg.Read}
		if cfg.ServerLimit {
			sc.MaxMsgsPerSubject = int64(cfg.Limit)
		}
		st, err := js.CreateStream(context.Background(), sc)
		if err != nil {
			t.Fatalf("bustest: floor stream: %v", err)
		}
		f.sts = append(f.sts, st)
		if cfg.Read {
			d := bus.NewDirectReader(js.Conn(), name)
			t.Cleanup(func() { _ = d.Close() })
			f.readers = append(f.readers, d)
		}
	}
	for i := range f.names {
		f.names[i] = "bustest.floor.write." + strconv.Itoa(i%cfg.Shards) + "." + strconv.Itoa(i)
	}
	return f
}

// Run publishes open loop at rate per second for d and returns the ack
// latencies (p50, p99), the number of failed publishes and the number of
// trims done.
func (f *WriteFloor) Run(rate int, d time.Duration) (p50, p99 time.Duration, errs, trims int) {
	ctx := context.Background()
	trim := make(chan int, len(f.names))
	var twg sync.WaitGroup
	var tmu sync.Mutex
	for range 4 {
		twg.Add(1)
		go func() {
			defer twg.Done()
			for i := range trim {
				err := f.trim(ctx, i)
				tmu.Lock()
				if err != nil {
					f.t.Errorf("bustest: floor trim: %v", err)
				} else {
					trims++
				}
				tmu.Unlock()
			}
		}()
	}
	lat, errs := OpenLoop(rate, d, func(i int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		subj := i % len(f.names)
		ack, err := f.js.Publish(ctx, f.names[subj], f.payload)
		if err != nil || f.cfg.Limit == 0 || f.cfg.ServerLimit {
			return err
		}
		f.mu.Lock()
		f.seqs[subj] = append(f.seqs[subj], ack.Sequence)
		full := len(f.seqs[subj]) == f.cfg.Limit+f.cfg.Slack
		f.mu.Unlock()
		if full {
			trim <- subj
		}
		return nil
	})
	close(trim)
	twg.Wait()
	return Percentile(lat, 50), Percentile(lat, 99), errs, trims
}

// trim purges subject i below its newest limit messages.
func (f *WriteFloor) trim(ctx context.Context, i int) error {
	f.mu.Lock()
	seqs := f.seqs[i]
	slices.Sort(seqs)
	keep := seqs[len(seqs)-f.cfg.Limit]
	f.seqs[i] = slices.Clone(seqs[len(seqs)-f.cfg.Limit:])
	f.mu.Unlock()
	if f.cfg.Read {
		drop := len(seqs) - f.cfg.Limit
		msgs, err := f.readers[i%len(f.readers)].First(ctx, f.names[i], drop+1)
		if err != nil {
			return err
		}
		if len(msgs) != drop+1 || msgs[drop].Sequence != keep {
			return fmt.Errorf("read %d messages before the purge, want %d up to sequence %d", len(msgs), drop+1, keep)
		}
	}
	return f.sts[i%len(f.sts)].Purge(ctx, jetstream.WithPurgeSubject(f.names[i]), jetstream.WithPurgeSequence(keep))
}
