package reallangbot_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/lbpkg/builtin"
)

// TestRealLangBot installs the three packages into a real LangBot through
// its HTTP API, configures them through it and chats through its embed
// web chat. One LangBot serves every scenario, in order (booting one
// takes several seconds).
func TestRealLangBot(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// A package installs with the config LangBot really gives a new
	// installation ({}), is listed, and its form is reachable.
	t.Run("install", func(t *testing.T) {
		for _, name := range builtin.Names() {
			task := w.install(ctx, name)
			if task.Runtime.Exception != "" {
				t.Fatalf("install %s: LangBot's task failed: %s", name, task.Runtime.Exception)
			}
		}
		list, err := w.lb.Plugins(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range list {
			ids = append(ids, p.ID())
		}
		for _, name := range builtin.Names() {
			if !slices.Contains(ids, w.ids[name]) {
				t.Fatalf("%s not in LangBot's plugin list %v", w.ids[name], ids)
			}
			cfg, err := w.lb.Config(ctx, w.ids[name])
			if err != nil {
				t.Fatalf("%s: the form's config: %v", name, err)
			}
			t.Logf("%s: config LangBot shows right after upload: %v", w.ids[name], cfg)
			if err := w.lb.SetConfig(ctx, w.ids[name], w.config(name, nil)); err != nil {
				t.Fatalf("%s: saving the form: %v", name, err)
			}
		}
	})
	if t.Failed() {
		return
	}

	c := w.chat(ctx)
	t.Run("ai answers", func(t *testing.T) {
		say(t, ctx, c, "hello there", "fake-llm answer")
	})
	t.Run("sche help", func(t *testing.T) {
		say(t, ctx, c, "!sche help", "!sche")
	})
}
