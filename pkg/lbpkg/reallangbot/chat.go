package reallangbot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/websocket"
)

// Chat is one user's conversation in LangBot's embed web chat: what the
// user sends, and every assistant message LangBot delivers on the
// WebSocket (pipeline answers and plugin-pushed messages alike).
type Chat struct {
	// SessionID is the chat's session (a random UUID, as the widget makes).
	SessionID string

	ws   *websocket.Conn
	done chan struct{}

	mu       sync.Mutex
	received []Received
	err      error
}

// Received is one assistant message of the chat.
type Received struct {
	Content string
	At      time.Time
}

// OpenChat connects a new person chat to the web chat bot and
// authenticates as the widget does without a Turnstile secret.
func (lb *LangBot) OpenChat(ctx context.Context, bot string) (*Chat, error) {
	session := newUUID()
	url := "ws" + strings.TrimPrefix(lb.URL, "http") + "/api/v1/embed/" + bot + "/ws/connect?session_type=person&session_id=" + session
	cfg, err := websocket.NewConfig(url, lb.URL)
	if err != nil {
		return nil, err
	}
	ws, err := cfg.DialContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("reallangbot: web chat: %w", err)
	}
	if err := websocket.JSON.Send(ws, map[string]string{"type": "authenticate", "token": ""}); err != nil {
		ws.Close()
		return nil, err
	}
	c := &Chat{SessionID: session, ws: ws, done: make(chan struct{})}
	connected := make(chan error, 1)
	go c.read(connected)
	select {
	case err := <-connected:
		if err != nil {
			ws.Close()
			<-c.done
			return nil, err
		}
	case <-ctx.Done():
		ws.Close()
		<-c.done
		return nil, ctx.Err()
	}
	return c, nil
}

func (c *Chat) read(connected chan<- error) {
	defer close(c.done)
	first := true
	for {
		var frame struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Data    struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"data"`
		}
		var raw string
		if err := websocket.Message.Receive(c.ws, &raw); err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			if first {
				connected <- fmt.Errorf("reallangbot: web chat closed before it connected: %w", err)
			}
			return
		}
		if err := json.Unmarshal([]byte(raw), &frame); err != nil {
			continue
		}
		switch {
		case first && frame.Type == "connected":
			first = false
			connected <- nil
		case first && frame.Type == "error":
			first = false
			connected <- fmt.Errorf("reallangbot: web chat refused: %s", frame.Message)
		case frame.Type == "response" && frame.Data.Role == "assistant":
			c.mu.Lock()
			c.received = append(c.received, Received{Content: frame.Data.Content, At: time.Now()})
			c.mu.Unlock()
		}
	}
}

// Send sends text as the user.
func (c *Chat) Send(text string) error {
	return websocket.JSON.Send(c.ws, map[string]any{"type": "message", "stream": false,
		"message": []map[string]string{{"type": "Plain", "text": text}}})
}

// Received returns every assistant message so far.
func (c *Chat) Received() []Received {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Received(nil), c.received...)
}

// Count returns how many assistant messages so far contain substr.
func (c *Chat) Count(substr string) int {
	n := 0
	for _, r := range c.Received() {
		if strings.Contains(r.Content, substr) {
			n++
		}
	}
	return n
}

// WaitFor waits until an assistant message after the first `after`
// messages contains substr, and returns it.
func (c *Chat) WaitFor(ctx context.Context, after int, substr string) (Received, error) {
	for {
		got := c.Received()
		for i := after; i < len(got); i++ {
			if strings.Contains(got[i].Content, substr) {
				return got[i], nil
			}
		}
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return Received{}, fmt.Errorf("reallangbot: web chat closed waiting for %q: %w", substr, err)
		}
		select {
		case <-ctx.Done():
			var all []string
			for _, r := range got {
				all = append(all, r.Content)
			}
			return Received{}, fmt.Errorf("reallangbot: no message with %q in the web chat (got %q): %w", substr, all, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close closes the chat's WebSocket and waits for its reader.
func (c *Chat) Close() {
	c.ws.Close()
	<-c.done
}
