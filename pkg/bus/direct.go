package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// ErrTooManySubjects is returned by LastPerSubject when more subjects
// match than one request answers (the server's limit, 1024).
var ErrTooManySubjects = errors.New("bus: more subjects than one batched read returns")

// headerNumPending carries, on each message of a batched direct get, how
// many matching messages follow it.
const headerNumPending = "Nats-Num-Pending"

// maxMultiLast is the server's limit of subjects per multi_last request.
const maxMultiLast = 1024

// DirectReader reads a stream by batched direct gets (the stream needs
// AllowDirect; nats-server 2.11+): many messages in one request, answered
// at one point of the stream, with no consumer to create. Its replies
// arrive on one wildcard subscription, taken on first use and released by
// Close.
type DirectReader struct {
	nc     *nats.Conn
	stream string

	mu     sync.Mutex
	sub    *nats.Subscription
	prefix string // "<inbox>." while subscribed
	calls  map[string]chan *nats.Msg
}

// NewDirectReader reads stream through nc.
func NewDirectReader(nc *nats.Conn, stream string) *DirectReader {
	return &DirectReader{nc: nc, stream: stream}
}

// StoredMsg is a message as a direct get returns it.
type StoredMsg struct {
	Subject  string
	Sequence uint64
	Header   nats.Header
	Data     []byte
	// Pending counts, for First, the messages on the subject after this
	// one when the read was made (all of them, not only those returned).
	Pending uint64
}

// LastPerSubject returns the last message of each subject matching filter,
// in stream order.
func (d *DirectReader) LastPerSubject(ctx context.Context, filter string) ([]StoredMsg, error) {
	return d.batch(ctx, struct {
		MultiLast []string `json:"multi_last"`
	}{[]string{filter}}, maxMultiLast)
}

// First returns the n oldest messages on subject, oldest first (fewer
// when the subject holds fewer). The read is one point of the stream: the
// first message's Pending + 1 is how many the subject held then.
func (d *DirectReader) First(ctx context.Context, subject string, n int) ([]StoredMsg, error) {
	if n <= 0 {
		return nil, nil
	}
	return d.batch(ctx, struct {
		Seq   uint64 `json:"seq"`
		Next  string `json:"next_by_subj"`
		Batch int    `json:"batch"`
	}{Seq: 1, Next: subject, Batch: n}, n)
}

// Close releases the subscription; a later read takes it again.
func (d *DirectReader) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sub == nil {
		return nil
	}
	err := d.sub.Unsubscribe()
	d.sub, d.prefix, d.calls = nil, "", nil
	if errors.Is(err, nats.ErrConnectionClosed) {
		return nil
	}
	return err
}

// batch sends one batched direct get and collects its messages up to the
// end-of-batch marker; max bounds what the request can return.
func (d *DirectReader) batch(ctx context.Context, req any, max int) ([]StoredMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	replies, reply, done, err := d.open(max + 2)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := d.nc.PublishRequest(directGetSubject(d.stream), reply, body); err != nil {
		return nil, err
	}
	var out []StoredMsg
	for {
		var m *nats.Msg
		select {
		case m = <-replies:
		case <-ctx.Done():
			return nil, fmt.Errorf("bus: direct get %s: %w", d.stream, ctx.Err())
		}
		if status := m.Header.Get("Status"); status != "" && len(m.Data) == 0 {
			switch status {
			case "204": // end of batch
				return out, nil
			case "404": // nothing matched
				return nil, nil
			case "413":
				return nil, ErrTooManySubjects
			default:
				return nil, fmt.Errorf("bus: direct get %s: status %s %s", d.stream, status, m.Header.Get("Description"))
			}
		}
		subject := m.Header.Get(jetstream.SubjectHeader)
		seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if subject == "" || err != nil {
			return nil, fmt.Errorf("bus: direct get %s: a reply without subject or sequence", d.stream)
		}
		pending, _ := strconv.ParseUint(m.Header.Get(headerNumPending), 10, 64)
		out = append(out, StoredMsg{Subject: subject, Sequence: seq, Header: m.Header, Data: m.Data, Pending: pending})
		if len(out) > max {
			return nil, fmt.Errorf("bus: direct get %s: more than %d messages", d.stream, max)
		}
	}
}

// open registers a call and returns its reply channel (buffered for n
// messages), its reply subject and the function that ends it.
func (d *DirectReader) open(n int) (<-chan *nats.Msg, string, func(), error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sub == nil {
		prefix := d.nc.NewInbox() + "."
		sub, err := d.nc.Subscribe(prefix+"*", d.deliver)
		if err != nil {
			return nil, "", nil, err
		}
		d.sub, d.prefix, d.calls = sub, prefix, map[string]chan *nats.Msg{}
	}
	token := nuid.Next()
	ch := make(chan *nats.Msg, n)
	calls := d.calls
	calls[token] = ch
	done := func() {
		d.mu.Lock()
		delete(calls, token)
		d.mu.Unlock()
	}
	return ch, d.prefix + token, done, nil
}

func (d *DirectReader) deliver(m *nats.Msg) {
	d.mu.Lock()
	var ch chan *nats.Msg
	if d.sub != nil && strings.HasPrefix(m.Subject, d.prefix) {
		ch = d.calls[m.Subject[len(d.prefix):]]
	}
	d.mu.Unlock()
	if ch == nil {
		return // the call ended
	}
	select {
	case ch <- m:
	default: // not reached: a call buffers a whole batch and its end
	}
}
