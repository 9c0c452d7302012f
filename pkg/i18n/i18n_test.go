package i18n_test

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/langbot-nats/plugins/pkg/i18n"
)

func TestLoadAndText(t *testing.T) {
	fsys := fstest.MapFS{
		"m/en_US.json":   {Data: []byte(`{"hi":"Hello {name}!","only":"x {a}"}`)},
		"m/zh_Hans.json": {Data: []byte(`{"hi":"你好 {name}！","only":"{a} x"}`)},
	}
	c, err := i18n.Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ lang, key, want string }{
		{i18n.EnUS, "hi", "Hello {x}!"},
		{i18n.ZhHans, "hi", "你好 {x}！"},
		{"fr_FR", "hi", "Hello {x}!"},
		{i18n.EnUS, "missing", "missing"},
	}
	for _, tt := range tests {
		if got := c.Text(tt.lang, tt.key, map[string]string{"name": "{x}"}); got != tt.want {
			t.Errorf("Text(%s,%s) = %q, want %q", tt.lang, tt.key, got, tt.want)
		}
	}
}

func TestLoadRejectsMismatch(t *testing.T) {
	tests := []struct {
		name string
		fs   fstest.MapFS
	}{
		{"missing key", fstest.MapFS{"m/en_US.json": {Data: []byte(`{"a":"x","b":"y"}`)}, "m/zh_Hans.json": {Data: []byte(`{"a":"x"}`)}}},
		{"extra key", fstest.MapFS{"m/en_US.json": {Data: []byte(`{"a":"x"}`)}, "m/zh_Hans.json": {Data: []byte(`{"a":"x","b":"y"}`)}}},
		{"placeholders", fstest.MapFS{"m/en_US.json": {Data: []byte(`{"a":"{n}"}`)}, "m/zh_Hans.json": {Data: []byte(`{"a":"{m}"}`)}}},
		{"no en_US", fstest.MapFS{"m/zh_Hans.json": {Data: []byte(`{"a":"x"}`)}}},
		{"bad json", fstest.MapFS{"m/en_US.json": {Data: []byte(`{"a":`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := i18n.Load(tt.fs, "m"); !errors.Is(err, i18n.ErrCatalog) {
				t.Fatalf("Load = %v, want ErrCatalog", err)
			}
		})
	}
}
