package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Headers of JetStream atomic batch publishing (nats-server 2.12+).
const (
	headerBatchID     = "Nats-Batch-Id"
	headerBatchSeq    = "Nats-Batch-Sequence"
	headerBatchCommit = "Nats-Batch-Commit"
)

// Batcher defaults, measured with the takeover benchmark
// (docs/benchmarks.md): an atomic batch costs about 4 ms whatever its size
// (a single-replica server stages it in a store of its own, with its own
// files and syncs, then writes it with one sync), a single append with
// sync_interval always one fsync (0.2-0.3 ms). Batching from 16 waiting
// messages on let a short disk stall tip a steady load into batch mode,
// where each round then waited for those syncs; from 64 on, batches only
// relieve a real overload.
const (
	DefaultMin   = 64
	DefaultMax   = 256
	batchTimeout = 10 * time.Second
)

// ErrClosed is returned by Publish after Close.
var ErrClosed = errors.New("batch: batcher closed")

// Config configures a Batcher.
type Config struct {
	// Atomic allows atomic batches; the stream must have
	// AllowAtomicPublish. Without it every message is published on its
	// own (pipelined).
	Atomic bool
	// Min is the most single publishes in flight at once, and the fewest
	// waiting messages sent as one atomic batch; fewer are published on
	// their own, pipelined. Default DefaultMin.
	Min int
	// Max bounds a batch (the server's limit is 1000). Default
	// DefaultMax.
	Max int
}

// Batcher publishes messages to one JetStream stream with group commit.
// At low load every message goes out at once on its own, pipelined, and
// its caller waits only for its own acknowledgement. Up to Min of them are
// in flight; when that many are, later messages wait, and once the stream
// catches up, all that waited go together: Min or more as one atomic
// batch. With sync_interval always, a single-replica file store syncs each
// message on its own, which bounds a stream to one fsync per message; an
// atomic batch is synced once at its commit. So under overload the fsyncs
// per message fall with the load. Messages published concurrently are
// stored in no particular order; a caller that needs an order waits for
// one Publish before the next.
//
// Every message carries a Nats-Msg-Id. That makes the fallback safe: when
// a batch fails for any reason, including a lost commit acknowledgement,
// its messages are published again on their own and the stream's
// duplicate window answers those already stored with their sequence.
type Batcher struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg Config

	in    chan *batchItem
	slots chan struct{} // one per single publish in flight
	stopc chan struct{}
	wg    sync.WaitGroup // the loop
	acks  sync.WaitGroup // single publishes awaiting their acks

	mu     sync.RWMutex // held for reading while enqueueing
	closed bool

	batches, fallbacks atomic.Uint64
	lastErr            atomic.Pointer[error]
}

// Stats counts a batcher's atomic batches since New: those stored and
// those that failed and went again one by one, with the last failure's
// error (nil if none), for metrics and for tests.
type Stats struct {
	Batches, Fallbacks uint64
	LastError          error
}

// Stats returns the batcher's counts so far.
func (b *Batcher) Stats() Stats {
	s := Stats{Batches: b.batches.Load(), Fallbacks: b.fallbacks.Load()}
	if e := b.lastErr.Load(); e != nil {
		s.LastError = *e
	}
	return s
}

type batchItem struct {
	ctx  context.Context
	msg  *nats.Msg
	id   string
	seq  uint64
	err  error
	done chan struct{}
}

// New starts a batcher publishing through nc and js. Close stops it.
func New(nc *nats.Conn, js jetstream.JetStream, cfg Config) *Batcher {
	if cfg.Min <= 1 {
		cfg.Min = DefaultMin
	}
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax
	}
	cfg.Max = max(cfg.Max, cfg.Min)
	b := &Batcher{nc: nc, js: js, cfg: cfg, in: make(chan *batchItem, cfg.Max),
		slots: make(chan struct{}, cfg.Min), stopc: make(chan struct{})}
	b.wg.Add(1)
	go b.loop()
	return b
}

// Publish stores msg under the message id msgID (required, unique per
// content) and returns its stream sequence. The batcher owns msg from
// here on. If ctx ends before the batcher takes msg, msg is not written;
// if it ends later, the error is ctx's and the message may be stored.
func (b *Batcher) Publish(ctx context.Context, msg *nats.Msg, msgID string) (uint64, error) {
	if msgID == "" {
		return 0, errors.New("bus: batcher: a message id is required")
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	it := &batchItem{ctx: ctx, msg: msg, id: msgID, done: make(chan struct{})}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return 0, ErrClosed
	}
	select {
	case b.in <- it:
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		return 0, ctx.Err()
	}
	// the loop answers every queued item, also after Close
	select {
	case <-it.done:
		return it.seq, it.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Close stops the batcher once the messages it holds are written; later
// Publish calls fail with ErrClosed.
func (b *Batcher) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.stopc)
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *Batcher) loop() {
	defer b.wg.Done()
	defer b.acks.Wait()
	var held []*batchItem // duplicates of an id already in the batch
	for {
		items := held
		held = nil
		if len(items) == 0 {
			select {
			case it := <-b.in:
				items = append(items, it)
			case <-b.stopc:
				// nothing can be queued any more: write what is
				select {
				case it := <-b.in:
					items = append(items, it)
				default:
					return
				}
			}
		}
	fill:
		for len(items) < b.cfg.Max {
			select {
			case it := <-b.in:
				items = append(items, it)
			default:
				break fill
			}
		}
		batch := items[:0:0]
		ids := make(map[string]bool, len(items))
		for _, it := range items {
			switch {
			case it.ctx.Err() != nil:
				it.finish(0, it.ctx.Err())
			case ids[it.id]:
				held = append(held, it)
			default:
				ids[it.id] = true
				batch = append(batch, it)
			}
		}
		b.write(batch)
	}
}

func (it *batchItem) finish(seq uint64, err error) {
	it.seq, it.err = seq, err
	close(it.done)
}

func (b *Batcher) write(items []*batchItem) {
	if len(items) == 0 {
		return
	}
	if b.cfg.Atomic && len(items) >= b.cfg.Min {
		first, err := b.atomic(items)
		if err == nil {
			b.batches.Add(1)
			for i, it := range items {
				it.finish(first+uint64(i), nil)
			}
			return
		}
		b.fallbacks.Add(1)
		b.lastErr.Store(&err)
	}
	b.singles(items)
}

// singles publishes each message on its own, pipelined. It returns once
// all are sent, waiting only while Min are already in flight; their acks
// are awaited apart, so the next messages go out meanwhile.
func (b *Batcher) singles(items []*batchItem) {
	sent := make(chan pending, len(items))
	b.acks.Add(1)
	go b.await(sent)
	defer close(sent)
	for _, it := range items {
		b.slots <- struct{}{}
		f, err := b.js.PublishMsgAsync(it.msg)
		if err != nil {
			<-b.slots
			it.finish(0, fmt.Errorf("bus: publish: %w", err))
			continue
		}
		sent <- pending{it, f}
	}
}

// pending is a single publish awaiting its ack.
type pending struct {
	it *batchItem
	f  jetstream.PubAckFuture
}

// await answers each single publish with its ack, in the order they were
// sent, and frees its slot.
func (b *Batcher) await(sent <-chan pending) {
	defer b.acks.Done()
	for p := range sent {
		t := time.NewTimer(batchTimeout)
		select {
		case ack := <-p.f.Ok():
			p.it.finish(ack.Sequence, nil)
		case err := <-p.f.Err():
			p.it.finish(0, fmt.Errorf("bus: publish: %w", err))
		case <-t.C:
			p.it.finish(0, fmt.Errorf("bus: publish: no ack in %v", batchTimeout))
		}
		t.Stop()
		<-b.slots
	}
}

// batchAck is the reply to an atomic batch's commit.
type batchAck struct {
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	Count  int    `json:"count"`
	Error  *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// atomic sends items as one atomic batch and returns the sequence of the
// first; the server stores a committed batch at consecutive sequences.
func (b *Batcher) atomic(items []*batchItem) (uint64, error) {
	id := nuid.Next()
	n := len(items)
	for i, it := range items {
		h := it.msg.Header
		h.Set(headerBatchID, id)
		h.Set(headerBatchSeq, strconv.Itoa(i+1))
		if i < n-1 {
			if err := b.nc.PublishMsg(it.msg); err != nil {
				b.strip(items)
				return 0, err
			}
		}
	}
	last := items[n-1].msg
	last.Header.Set(headerBatchCommit, "1")
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	resp, err := b.nc.RequestMsgWithContext(ctx, last)
	b.strip(items)
	if err != nil {
		return 0, err
	}
	var ack batchAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return 0, fmt.Errorf("bus: batch ack: %w", err)
	}
	if ack.Error != nil {
		return 0, fmt.Errorf("bus: batch: %s (%d)", ack.Error.Description, ack.Error.ErrCode)
	}
	if ack.Count != n || ack.Seq < uint64(n) {
		return 0, fmt.Errorf("bus: batch: %d of %d messages acknowledged", ack.Count, n)
	}
	return ack.Seq - uint64(n-1), nil
}

// strip removes the batch headers, so a fallback publishes plain messages.
func (b *Batcher) strip(items []*batchItem) {
	for _, it := range items {
		it.msg.Header.Del(headerBatchID)
		it.msg.Header.Del(headerBatchSeq)
		it.msg.Header.Del(headerBatchCommit)
	}
}
