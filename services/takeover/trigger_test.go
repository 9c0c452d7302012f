package takeover_test

import (
	"testing"

	"github.com/langbot-nats/plugins/services/takeover"
)

func TestTriggerMatching(t *testing.T) {
	set := func(mode string, cs bool, words ...string) takeover.Settings {
		s := takeover.DefaultSettings()
		s.TriggerMatch, s.TriggerCaseSensitive, s.TriggerWords = mode, cs, words
		return s
	}
	texts := []string{"help", "helpful", "Help", "HELP!", "_help"}
	want := map[string][]bool{ // per text, in the order above
		"substring/insensitive": {true, true, true, true, true},
		"substring/sensitive":   {true, true, false, false, true},
		"word/insensitive":      {true, false, true, true, false},
		"word/sensitive":        {true, false, false, false, false},
	}
	for _, mode := range []string{takeover.MatchSubstring, takeover.MatchWord} {
		for _, cs := range []bool{false, true} {
			name := mode + "/insensitive"
			if cs {
				name = mode + "/sensitive"
			}
			for i, text := range texts {
				t.Run(name+"/"+text, func(t *testing.T) {
					w, ok := takeover.MatchTrigger(text, set(mode, cs, "help"))
					if ok != want[name][i] || (ok && w != "help") {
						t.Errorf("MatchTrigger(%q) = %q, %v; want %v", text, w, ok, want[name][i])
					}
				})
			}
		}
	}
	cases := []struct {
		name, text string
		s          takeover.Settings
		word       string
		ok         bool
	}{
		{"cjk word mode", "我要退款了", set(takeover.MatchWord, false, "退款"), "退款", true},
		{"kana word mode", "すみません返品したい", set(takeover.MatchWord, false, "返品"), "返品", true},
		{"latin after cjk", "退款refund", set(takeover.MatchWord, false, "refund"), "refund", true},
		{"first word in config order", "refund and help", set(takeover.MatchSubstring, false, "help", "refund"), "help", true},
		{"second occurrence qualifies", "helpful, help", set(takeover.MatchWord, false, "help"), "help", true},
		{"empty text", "", set(takeover.MatchSubstring, false, "help"), "", false},
		{"blank text", "   ", set(takeover.MatchSubstring, false, " "), "", false},
		{"no words", "help", set(takeover.MatchSubstring, false), "", false},
		{"unicode folding", "STRASSE ΣΊΣΥΦΟΣ", set(takeover.MatchSubstring, false, "σίσυφος"), "σίσυφος", true},
		{"kelvin sign folds", "5 \u212a", set(takeover.MatchWord, false, "k"), "k", true},
		{"digits are word chars", "help2", set(takeover.MatchWord, false, "help"), "", false},
		{"word with punctuation", "need a hand!", set(takeover.MatchWord, false, "hand!"), "hand!", true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			w, ok := takeover.MatchTrigger(tt.text, tt.s)
			if w != tt.word || ok != tt.ok {
				t.Errorf("MatchTrigger(%q) = %q, %v; want %q, %v", tt.text, w, ok, tt.word, tt.ok)
			}
		})
	}
}

func TestTriggerIgnoresMentionText(t *testing.T) {
	s := takeover.DefaultSettings()
	s.TriggerWords = []string{"refund"}
	c := takeover.ExtractContent([]byte(`[{"type":"At","target":7,"display":"RefundBot"},{"type":"Plain","text":" hello"}]`))
	if _, ok := takeover.MatchTrigger(c.TriggerText, s); ok {
		t.Fatalf("trigger text %q matched a mention", c.TriggerText)
	}
	if c.Parts[0].Text != "@RefundBot  hello" {
		t.Fatalf("text part %q", c.Parts[0].Text)
	}
}

// FuzzTriggerMatch checks word mode against substring mode (a word match is
// always a substring match) and case folding against strings.EqualFold on
// equal-length texts.
func FuzzTriggerMatch(f *testing.F) {
	f.Add("help me", "help", false)
	f.Add("HELP!", "help", true)
	f.Add("我要退款", "退款", false)
	f.Fuzz(func(t *testing.T, text, word string, cs bool) {
		s := takeover.DefaultSettings()
		s.TriggerWords, s.TriggerCaseSensitive = []string{word}, cs
		_, sub := takeover.MatchTrigger(text, s)
		s.TriggerMatch = takeover.MatchWord
		_, w := takeover.MatchTrigger(text, s)
		if w && !sub {
			t.Fatalf("word match without substring match: %q in %q", word, text)
		}
	})
}
