package reallangbot

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
)

// FakeLLM is an OpenAI-compatible chat completions endpoint on loopback
// that answers every request with "fake-llm answer <n>" and records the
// last user message of each, so that "the AI answered" (and "it did not")
// is observable.
type FakeLLM struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []string
}

// NewFakeLLM starts the endpoint; Close stops it.
func NewFakeLLM() *FakeLLM {
	f := &FakeLLM{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// URL is the base URL a provider takes (".../v1").
func (f *FakeLLM) URL() string { return f.srv.URL + "/v1" }

// Close stops the server.
func (f *FakeLLM) Close() { f.srv.Close() }

// Calls returns the last user message of every request so far.
func (f *FakeLLM) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Answer is the text the fake gives to its n-th call (1-based).
func Answer(n int) string { return fmt.Sprintf("fake-llm answer %d", n) }

func (f *FakeLLM) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	last := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			raw, _ := json.Marshal(m.Content)
			last = string(raw)
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, last)
	n := len(f.calls)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": Answer(n)}}},
		"usage": map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
	})
}
