package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// errTooManyStreams: the token, the scope or the replica already has its
// share of live streams.
var errTooManyStreams = errors.New("console: too many live streams")

// streamBuffer is how many live messages a slow client may lag behind
// before its stream is closed (it then reconnects and resyncs).
const streamBuffer = 256

// hub shares one live-subject subscription per scope among that scope's
// streams on this replica (spec §7.5 rule 3).
type hub struct {
	ops      Operations
	mu       sync.Mutex
	feeds    map[string]*feed
	perToken map[limitKey]int // open streams by token, while it has some
	total    int
}

type feed struct {
	stop    func()
	clients map[*stream]struct{}
}

// stream is one client's queue of live messages.
type stream struct {
	ch       chan []byte
	overflow chan struct{}
	once     sync.Once
}

func newHub(ops Operations) *hub {
	return &hub{ops: ops, feeds: make(map[string]*feed), perToken: make(map[limitKey]int)}
}

// join adds a stream to the scope's feed, subscribing on first use; leave
// removes it and unsubscribes after the last one.
func (hb *hub) join(sc binding.Scope, tok limitKey) (*stream, func(), error) {
	key := sc.String()
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.perToken[tok] >= maxStreamsPerToken || hb.total >= maxStreams {
		return nil, nil, errTooManyStreams
	}
	f := hb.feeds[key]
	if f == nil {
		f = &feed{clients: make(map[*stream]struct{})}
		stop, err := hb.ops.ConsoleSubscribe(sc, func(data []byte) { hb.deliver(key, data) })
		if err != nil {
			return nil, nil, err
		}
		f.stop = stop
		hb.feeds[key] = f
	}
	if len(f.clients) >= maxStreamsPerScp {
		return nil, nil, errTooManyStreams
	}
	st := &stream{ch: make(chan []byte, streamBuffer), overflow: make(chan struct{})}
	f.clients[st] = struct{}{}
	hb.perToken[tok]++
	hb.total++
	leave := func() {
		hb.mu.Lock()
		defer hb.mu.Unlock()
		if hb.perToken[tok]--; hb.perToken[tok] <= 0 {
			delete(hb.perToken, tok)
		}
		hb.total--
		delete(f.clients, st)
		if len(f.clients) == 0 && hb.feeds[key] == f {
			delete(hb.feeds, key)
			f.stop()
		}
	}
	return st, leave, nil
}

func (hb *hub) deliver(key string, data []byte) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	f := hb.feeds[key]
	if f == nil {
		return
	}
	for st := range f.clients {
		select {
		case st.ch <- data:
		default:
			st.once.Do(func() { close(st.overflow) })
		}
	}
}

var liveTypeRE = regexp.MustCompile(`^[a-z_]{1,32}$`)

// serveEvents streams the scope's live messages as Server-Sent Events until
// the client leaves, the token expires, the scope is removed ("revoked") or
// the handler is closed.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request, c Claims, sc binding.Scope, tokID string) {
	if err := h.ops.ConsoleCheck(sc); err != nil {
		writeOpError(w, err)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "", "streaming is not supported here")
		return
	}
	st, leave, err := h.hub.join(sc, httpserve.LimitKeyOf(tokID))
	if errors.Is(err, errTooManyStreams) {
		writeError(w, http.StatusTooManyRequests, "rate_limited", "", "too many live streams for this token or installation")
		return
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "", "the live feed is unavailable")
		return
	}
	defer leave()
	// the stream outlives the server's read and write timeouts; each
	// write renews its deadline, so a client that stops reading is cut off
	renew := httpserve.Stream(w, r)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	hello, _ := json.Marshal(map[string]any{"now": h.now().UnixMilli(), "operator": c.Operator})
	if writeEvent(w, "hello", hello) != nil {
		return
	}
	fl.Flush()

	exp := time.NewTimer(time.Unix(c.Exp, 0).Sub(h.now()))
	defer exp.Stop()
	beat := time.NewTicker(h.cfg.Heartbeat)
	defer beat.Stop()
	check := time.NewTicker(h.cfg.CheckEvery)
	defer check.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.closed:
			return
		case <-exp.C:
			return
		case <-st.overflow:
			return
		case <-beat.C:
			renew()
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
		case <-check.C:
			if err := h.ops.ConsoleCheck(sc); err != nil {
				if be, ok := wire.AsError(err); ok && be.Code == http.StatusForbidden {
					renew()
					_ = writeEvent(w, "revoked", []byte("{}"))
					fl.Flush()
				}
				return
			}
			continue
		case data := <-st.ch:
			var m struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(data, &m) != nil || !liveTypeRE.MatchString(m.Type) {
				continue
			}
			renew()
			if writeEvent(w, m.Type, data) != nil {
				return
			}
		}
		fl.Flush()
	}
}

// writeEvent writes one SSE event; data is one line of JSON.
func writeEvent(w http.ResponseWriter, event string, data []byte) error {
	_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, compact(data))
	return err
}

// compact makes JSON a single line (json.Compact drops insignificant
// whitespace; string contents never hold raw newlines).
func compact(data []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return []byte("{}")
	}
	return buf.Bytes()
}
