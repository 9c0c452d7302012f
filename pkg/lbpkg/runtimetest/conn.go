package runtimetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"
)

// Wire facts (research 3.2 and the recorded frames): one JSON envelope per
// line; a message longer than chunkSize bytes travels as a chunk_start line
// with its total size, chunk_data lines carrying consecutive UTF-8 pieces
// with their byte offset, and a chunk_end line. Success is code 0; an error
// is code 1 with "<Exception>: <text>" in message. A streamed answer ends
// with an extra empty frame whose chunk_status is "end".
const (
	chunkSize       = 16 * 1024
	maxMessageBytes = 16 * 1024 * 1024
	statusContinue  = "continue"
	statusEnd       = "end"
)

// request is an action call in either direction.
type request struct {
	SeqID   int64           `json:"seq_id"`
	Action  string          `json:"action"`
	Data    json.RawMessage `json:"data"`
	Context json.RawMessage `json:"context,omitempty"`
}

// response answers one request (several, for a stream).
type response struct {
	SeqID       int64           `json:"seq_id"`
	Code        int             `json:"code"`
	Message     string          `json:"message"`
	Data        json.RawMessage `json:"data"`
	ChunkStatus string          `json:"chunk_status"`

	// Arrived is when the frame's last line was read, before it was
	// decoded: what LangBot would see of the runtime's answer, without
	// this fake's JSON decoding (Go's encoding/json reads a 15 KB answer
	// several times slower than LangBot's json.loads).
	Arrived time.Time `json:"-"`
}

// envelope decodes any line in one pass: a request has an action, a
// response a code, a chunk marker a type. Data is a request's or a
// response's data, or a chunk_data's string.
type envelope struct {
	Type        string          `json:"type"`
	TotalSize   int             `json:"total_size"`
	Data        json.RawMessage `json:"data"`
	Offset      int             `json:"offset"`
	SeqID       *int64          `json:"seq_id"`
	Action      string          `json:"action"`
	Code        int             `json:"code"`
	Message     string          `json:"message"`
	ChunkStatus string          `json:"chunk_status"`
	Context     json.RawMessage `json:"context"`
}

// ActionError is an error answer (code != 0) from the runtime.
type ActionError struct {
	Action  string
	Code    int
	Message string
}

func (e *ActionError) Error() string {
	return fmt.Sprintf("runtimetest: %s: code %d: %s", e.Action, e.Code, e.Message)
}

// errClosed reports a call on a connection whose runtime has gone.
var errClosed = errors.New("runtimetest: runtime connection closed")

// conn multiplexes calls over the runtime's stdin and stdout.
type conn struct {
	w   io.Writer
	wmu sync.Mutex

	mu      sync.Mutex
	next    int64
	pending map[int64]chan response
	err     error // set once reading stopped

	// serve answers a request of the runtime; it runs on its own goroutine,
	// tracked by wg (get_bot_uuid, a lookup, on the reading one: read).
	serve func(req request) response
	wg    sync.WaitGroup
	done  chan struct{}
}

func newConn(w io.Writer, serve func(request) response) *conn {
	return &conn{w: w, next: 1000, pending: map[int64]chan response{}, serve: serve, done: make(chan struct{})}
}

// send writes one message, chunked when long.
func (c *conn) send(v any) error {
	msg, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(msg) > maxMessageBytes {
		return fmt.Errorf("runtimetest: message of %d bytes exceeds the runtime's limit", len(msg))
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(msg) <= chunkSize {
		_, err = c.w.Write(append(msg, '\n'))
		return err
	}
	parts := []any{map[string]any{"type": "chunk_start", "total_size": len(msg)}}
	for off := 0; off < len(msg); {
		end := min(off+chunkSize, len(msg))
		for end < len(msg) && !utf8.RuneStart(msg[end]) {
			end--
		}
		parts = append(parts, map[string]any{"type": "chunk_data", "data": string(msg[off:end]), "offset": off})
		off = end
	}
	parts = append(parts, map[string]any{"type": "chunk_end"})
	var out []byte
	for _, p := range parts {
		line, err := json.Marshal(p)
		if err != nil {
			return err
		}
		out = append(append(out, line...), '\n')
	}
	_, err = c.w.Write(out)
	return err
}

// read dispatches every message from r until it ends; it closes done.
func (c *conn) read(r io.Reader) {
	defer close(c.done)
	br := bufio.NewReaderSize(r, 64*1024)
	var chunks []byte
	inChunk := false
	for {
		line, err := br.ReadBytes('\n')
		arrived := time.Now()
		if err != nil {
			c.stop(fmt.Errorf("%w: %v", errClosed, err))
			return
		}
		var env envelope
		if json.Unmarshal(line, &env) != nil {
			continue // the runtime's stdout carries nothing else, but a stray line is not fatal
		}
		switch env.Type {
		case "chunk_start":
			chunks, inChunk = make([]byte, 0, min(env.TotalSize, maxMessageBytes)), true
			continue
		case "chunk_data":
			var piece string
			if inChunk && env.Offset == len(chunks) && json.Unmarshal(env.Data, &piece) == nil {
				chunks = append(chunks, piece...)
			}
			continue
		case "chunk_end":
			if !inChunk {
				continue
			}
			line, inChunk = chunks, false
			env = envelope{}
			if json.Unmarshal(line, &env) != nil {
				continue
			}
		}
		if env.SeqID == nil {
			continue
		}
		if env.Action != "" {
			req := request{SeqID: *env.SeqID, Action: env.Action, Data: env.Data, Context: env.Context}
			var resp *response
			if req.Action == "get_bot_uuid" {
				// A lookup answered in arrival order, as LangBot finds the
				// query before it goes on with an answer read after the
				// request: Emit ends its query once answered.
				r := c.serve(req)
				resp = &r
			}
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				if resp == nil {
					r := c.serve(req)
					resp = &r
				}
				resp.SeqID = req.SeqID
				_ = c.send(*resp)
			}()
			continue
		}
		resp := response{SeqID: *env.SeqID, Code: env.Code, Message: env.Message, Data: env.Data, ChunkStatus: env.ChunkStatus, Arrived: arrived}
		c.mu.Lock()
		ch := c.pending[resp.SeqID]
		c.mu.Unlock()
		if ch != nil {
			select {
			case ch <- resp:
			default: // a caller that stopped listening
			}
		}
	}
}

func (c *conn) stop(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// call sends action and hands every answer frame to each until each
// returns false, the connection ends or ctx is done. The caller's ctx
// carries LangBot's timeout for the action.
func (c *conn) call(ctx context.Context, action string, data any, bind json.RawMessage, each func(response) bool) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	ch := make(chan response, 256)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return c.err
	}
	c.next++
	seq := c.next
	c.pending[seq] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, seq)
		c.mu.Unlock()
	}()
	if err := c.send(request{SeqID: seq, Action: action, Data: raw, Context: bind}); err != nil {
		return err
	}
	for {
		select {
		case resp := <-ch:
			if resp.Code != 0 {
				return &ActionError{Action: action, Code: resp.Code, Message: resp.Message}
			}
			if !each(resp) {
				return nil
			}
		case <-c.done:
			c.mu.Lock()
			err := c.err
			c.mu.Unlock()
			return fmt.Errorf("%s: %w", action, err)
		case <-ctx.Done():
			return fmt.Errorf("runtimetest: %s: %w", action, ctx.Err())
		}
	}
}
