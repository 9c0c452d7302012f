package model_test

import (
	"testing"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

func TestTriggerMatching(t *testing.T) {
	set := func(mode string, cs bool, words ...string) model.Settings {
		s := model.DefaultSettings()
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
	for _, mode := range []string{model.MatchSubstring, model.MatchWord} {
		for _, cs := range []bool{false, true} {
			name := mode + "/insensitive"
			if cs {
				name = mode + "/sensitive"
			}
			for i, text := range texts {
				t.Run(name+"/"+text, func(t *testing.T) {
					w, ok := model.MatchTrigger(text, set(mode, cs, "help"))
					if ok != want[name][i] || (ok && w != "help") {
						t.Errorf("MatchTrigger(%q) = %q, %v; want %v", text, w, ok, want[name][i])
					}
				})
			}
		}
	}
	cases := []struct {
		name, text string
		s          model.Settings
		word       string
		ok         bool
	}{
		{"cjk word mode", "我要退款了", set(model.MatchWord, false, "退款"), "退款", true},
		{"kana word mode", "すみません返品したい", set(model.MatchWord, false, "返品"), "返品", true},
		{"latin after cjk", "退款refund", set(model.MatchWord, false, "refund"), "refund", true},
		{"first word in config order", "refund and help", set(model.MatchSubstring, false, "help", "refund"), "help", true},
		{"second occurrence qualifies", "helpful, help", set(model.MatchWord, false, "help"), "help", true},
		{"empty text", "", set(model.MatchSubstring, false, "help"), "", false},
		{"blank text", "   ", set(model.MatchSubstring, false, " "), "", false},
		{"no words", "help", set(model.MatchSubstring, false), "", false},
		{"unicode folding", "STRASSE ΣΊΣΥΦΟΣ", set(model.MatchSubstring, false, "σίσυφος"), "σίσυφος", true},
		{"kelvin sign folds", "5 \u212a", set(model.MatchWord, false, "k"), "k", true},
		{"digits are word chars", "help2", set(model.MatchWord, false, "help"), "", false},
		{"word with punctuation", "need a hand!", set(model.MatchWord, false, "hand!"), "hand!", true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			w, ok := model.MatchTrigger(tt.text, tt.s)
			if w != tt.word || ok != tt.ok {
				t.Errorf("MatchTrigger(%q) = %q, %v; want %q, %v", tt.text, w, ok, tt.word, tt.ok)
			}
		})
	}
}

func TestTriggerIgnoresMentionText(t *testing.T) {
	s := model.DefaultSettings()
	s.TriggerWords = []string{"refund"}
	c := model.ExtractContent([]byte(`[{"type":"At","target":7,"display":"RefundBot"},{"type":"Plain","text":" hello"}]`))
	if _, ok := model.MatchTrigger(c.TriggerText, s); ok {
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
		s := model.DefaultSettings()
		s.TriggerWords, s.TriggerCaseSensitive = []string{word}, cs
		_, sub := model.MatchTrigger(text, s)
		s.TriggerMatch = model.MatchWord
		_, w := model.MatchTrigger(text, s)
		if w && !sub {
			t.Fatalf("word match without substring match: %q in %q", word, text)
		}
	})
}
