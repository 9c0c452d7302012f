package i18n_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/langbot-nats/plugins/pkg/i18n"
)

// TestCommandMentions: a prefix rune right before a whole command word is
// a mention; paths, longer words and words inside others are not.
func TestCommandMentions(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []i18n.CommandMention
	}{
		{"send !ho list", []i18n.CommandMention{{"!", "ho"}}},
		{"/sche add, then ！dsche 1", []i18n.CommandMention{{"/", "sche"}, {"！", "dsche"}}},
		{"!GH repo", []i18n.CommandMention{{"!", "gh"}}},
		{"(!ho)", []i18n.CommandMention{{"!", "ho"}}},
		{"owner/sche and a/ho/x, https://x/gh", nil},
		{"!house !schedule ho sche", nil},
		{"x!ho", nil},
		{"//ho", nil},
		{"", nil},
	} {
		if got := i18n.CommandMentions(tc.text, "ho", "sche", "dsche", "gh"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.text, got, tc.want)
		}
	}
}

// TestCheckCommandPrefix: a catalogue naming commands through {prefix}
// passes; a hard-coded !, ！ or / before a command word fails in either
// language, including "!{command}" with the word in a placeholder.
func TestCheckCommandPrefix(t *testing.T) {
	load := func(en, zh string) *i18n.Catalog {
		t.Helper()
		c, err := i18n.Load(fstest.MapFS{
			"m/en_US.json":   {Data: []byte(en)},
			"m/zh_Hans.json": {Data: []byte(zh)},
		}, "m")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	good := load(`{"a":"Send {prefix}ho list; {prefix}sche {n} for page {n}","b":"owner/ho"}`, `{"a":"发送 {prefix}ho list；{prefix}sche {n}","b":"owner/ho"}`)
	if err := good.CheckCommandPrefix("ho", "sche"); err != nil {
		t.Fatalf("a clean catalogue: %v", err)
	}
	if got := good.PrefixedText(i18n.ZhHans, "a", "/", map[string]string{"n": "2", "prefix": "!"}); got != "发送 /ho list；/sche 2" {
		t.Errorf("PrefixedText = %q", got)
	}
	for name, c := range map[string]*i18n.Catalog{
		"bang in en":       load(`{"a":"Send !ho list {prefix}"}`, `{"a":"发送 {prefix}ho list"}`),
		"full-width in zh": load(`{"a":"Send {prefix}ho"}`, `{"a":"发送 ！ho {prefix}"}`),
		"slash":            load(`{"a":"Send /sche"}`, `{"a":"发送 sche"}`),
		"bang placeholder": load(`{"a":"Send !{command} list"}`, `{"a":"发送 !{command} list"}`),
	} {
		err := c.CheckCommandPrefix("ho", "sche")
		if !errors.Is(err, i18n.ErrCatalog) || !strings.Contains(err.Error(), `"a"`) {
			t.Errorf("%s: %v, want ErrCatalog naming key a", name, err)
		}
	}
}
