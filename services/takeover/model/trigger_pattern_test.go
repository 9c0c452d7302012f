package model_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"testing"

	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// pySearch is the forwarding core's match (re.search of the pattern),
// run by python3 over every case at once.
const pySearch = `import json, re, sys
print(json.dumps([re.search(p, t) is not None for p, t in json.load(sys.stdin)]))`

// TestTriggerPatternMatchesAsGoInPython: the event gate's pattern, run by
// Python's re as the package runs it, finds a word exactly where
// MatchTrigger does in substring mode, for words and texts full of case
// folding's odd cases (Kelvin sign, long s, titlecase digraphs, final
// sigma, dotted I, astral runes, regex metacharacters), each way of case,
// plus random texts over those runes. A miss would let a trigger word
// reach the AI.
func TestTriggerPatternMatchesAsGoInPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		runtimetest.Unavailable(t, "no python3 on PATH")
	}
	words := []string{"Help", "ſtop", "k", "straße", "ǅ", "σ", "İ", "i", "人工", "😀x", "a-b", "[x]", `\d`, "Ω", "$^.*+?(){}|", "ΐ", "ﬀ"}
	texts := []string{"HELP me", "please help", "STOP", "ſtop", "Kelvin \u212a", "STRASSE", "straße", "STRAßE", "ǆ", "Ǆ", "ǅ", "Σ", "ς", "σ",
		"i̇", "İ", "ı", "I", "人工客服", "😀X", "😀x", "a-b", "ab", "[x]", "x", `\d`, "5", "ω", "\u2126", "$^.*+?(){}|", "ΐ", "ΐ", "ﬀ", "ff", ""}
	alphabet := []rune("aAkKſsSσςΣıIiİǅǄǆ人工😀x-\u212a\u2126ωΩß")
	r := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		b := make([]rune, 1+r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		texts = append(texts, string(b))
		if r.IntN(4) == 0 {
			words = append(words, string(b[:1+r.IntN(min(3, len(b)))]))
		}
	}
	type check struct {
		word, text string
		sensitive  bool
		want       bool
	}
	var cases [][2]string
	var checks []check
	for _, sensitive := range []bool{false, true} {
		for _, w := range words {
			set := model.DefaultSettings()
			set.TriggerWords, set.TriggerCaseSensitive, set.TriggerMatch = []string{w}, sensitive, model.MatchSubstring
			pattern := model.TriggerPattern(set)
			for _, text := range texts {
				_, hit := model.MatchTrigger(text, set)
				cases = append(cases, [2]string{pattern, text})
				checks = append(checks, check{w, text, sensitive, hit})
			}
		}
	}
	in, _ := json.Marshal(cases)
	cmd := exec.Command(python, "-c", pySearch)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v: %s", err, stderr.String())
	}
	var got []bool
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(checks) {
		t.Fatalf("python3 answered %d results (%v), want %d", len(got), err, len(checks))
	}
	for i, c := range checks {
		// Go never matches a blank text and Python may, which only costs
		// the wait for a decision
		blank := len(bytes.TrimSpace([]byte(c.text))) == 0
		if got[i] != c.want && !(blank && got[i]) {
			t.Errorf("word %q in %q (case sensitive %v): Python %v, Go %v", c.word, c.text, c.sensitive, got[i], c.want)
		}
	}
}
