package schenotify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The AI keyword is "ai:" at the start of the text, in any case, with an
// ASCII or a full-width colon; anything else is fixed text, unchanged.
func TestCutAIKeyword(t *testing.T) {
	for _, c := range []struct {
		in, prompt string
		ai         bool
	}{
		{"ai: today's weather", "today's weather", true},
		{"AI：总结本周群里讨论的问题", "总结本周群里讨论的问题", true},
		{"Ai:haiku", "haiku", true},
		{"  aI :x", "  aI :x", false},
		{"\u3000AI： 早安", "早安", true},
		{"ai:", "", true},
		{"ai", "ai", false},
		{"aim: high", "aim: high", false},
		{"ai is a word", "ai is a word", false},
		{"say ai: hi", "say ai: hi", false},
		{"", "", false},
	} {
		prompt, ai := cutAIKeyword(c.in)
		if prompt != c.prompt || ai != c.ai {
			t.Errorf("cutAIKeyword(%q) = %q, %v; want %q, %v", c.in, prompt, ai, c.prompt, c.ai)
		}
	}
}

// A record stored before kinds existed has no kind: it reads as fixed
// text, and a fixed-text record is stored without the field.
func TestRecordKindDefault(t *testing.T) {
	var r Record
	if err := json.Unmarshal([]byte(`{"v":1,"id":"abc123","message":"stretch","state":"scheduled"}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.Kind != kindText {
		t.Fatalf("old record kind %q", r.Kind)
	}
	b, _ := json.Marshal(&r)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if _, ok := m["kind"]; ok {
		t.Errorf("fixed text stored with a kind: %s", b)
	}
}

// FuzzCutAIKeyword checks the keyword against an independent oracle (the
// text, spaces trimmed on the left, lower-cased, begins with "ai:" or
// "ai："), that fixed text comes back unchanged, and a round trip: "ai: "
// before any request gives the request back, trimmed.
func FuzzCutAIKeyword(f *testing.F) {
	for _, s := range []string{"ai: x", "AI：总结", "aim", "ai", " ai:", "\u3000Ai：y", "ai\u00a0: z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		prompt, ai := cutAIKeyword(s)
		low := strings.ToLower(strings.TrimLeft(s, " \t\u3000"))
		want := strings.HasPrefix(low, "ai:") || strings.HasPrefix(low, "ai：")
		if ai != want {
			t.Fatalf("cutAIKeyword(%q) = %v, oracle %v", s, ai, want)
		}
		if !ai && prompt != s {
			t.Fatalf("fixed text changed: %q -> %q", s, prompt)
		}
		if ai && prompt != strings.TrimSpace(prompt) {
			t.Fatalf("prompt %q not trimmed", prompt)
		}
		if p, ok := cutAIKeyword("ai: " + s); !ok || p != strings.TrimSpace(s) {
			t.Fatalf("round trip of %q: %q, %v", s, p, ok)
		}
	})
}

// The kept answer belongs to one occurrence of an AI-written reminder:
// another occurrence (the next of a series, a snoozed one) asks again, and
// fixed text never has one.
func TestStoredAnswerIsPerOccurrence(t *testing.T) {
	occ := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	r := Record{Kind: kindAI, AIAnswer: &aiAnswer{Occurrence: occ, Text: "sunny"}}
	if got, ok := r.storedAnswer(occ); !ok || got != "sunny" {
		t.Fatalf("same occurrence: %q, %v", got, ok)
	}
	if _, ok := r.storedAnswer(occ.Add(24 * time.Hour)); ok {
		t.Fatal("the next occurrence reused the answer")
	}
	r.Kind = kindText
	if _, ok := r.storedAnswer(occ); ok {
		t.Fatal("fixed text has no kept answer")
	}
}
