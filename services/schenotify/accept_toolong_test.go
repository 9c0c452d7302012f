package schenotify_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// Issue 19 (stored sizes): a 980 KB cron expression, given to !sche add
// or schedule_notify (as recurrence or time_str), is refused with
// too_long; the reply names the field and the cap, echoes none of the
// value, and the plugin bucket does not change.
func TestOverlongTimeParametersRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	e.schedule(t, b, cfgEN, s, map[string]any{"message": "kept", "recurrence": "0 9 * * *"})
	// 980 KB: "0 9 * * 1,1,…,1", a valid cron expression once the list
	// is read; the marker shows whether any of it comes back.
	big := "0 9 * * " + strings.Repeat("1,", 490_000) + "1"
	const marker = "1,1,1,1"
	before := e.bucket(t, scopeOf(b))

	// The command: the when of "!sche add cron" (the request carries the
	// text twice, as params and full text, so 490 KB stays under the
	// envelope's 1 MiB; the tool below sends the full 980 KB).
	half := "0 9 * * " + strings.Repeat("1,", 245_000) + "1"
	text := e.cmd(t, b, cfgEN, s, `!sche add cron "`+half+`" hello`)
	if !strings.Contains(text, "too long") || strings.Contains(text, marker) || len(text) > 200 {
		t.Errorf("!sche add: reply %.120q (%d bytes), want too long without the value", text, len(text))
	}
	for _, field := range []string{"recurrence", "time_str", "delay", "until"} {
		params := map[string]any{"message": "hello", "recurrence": "@daily", field: big}
		if field == "time_str" || field == "delay" {
			params = map[string]any{"message": "hello", field: big}
		}
		r := e.tool(t, b, cfgEN, s, schenotify.ToolSchedule, params)
		text, _ := r["text"].(string)
		if r["status"] != "error" || r["code"] != "too_long" || r["field"] != field || strings.Contains(text, marker) || len(text) > 200 {
			t.Errorf("schedule_notify %s: %.200v, want error too_long naming %s without the value", field, r, field)
		}
	}
	if after := e.bucket(t, scopeOf(b)); !reflect.DeepEqual(before, after) {
		t.Errorf("bucket changed: %d keys before, %d after", len(before), len(after))
	}
	if list := e.cmd(t, b, cfgEN, s, "!sche"); len(list) > 2000 || strings.Contains(list, marker) {
		t.Errorf("list is %d bytes", len(list))
	}
}

// bucket reads every value of the scope's keys in the plugin bucket.
func (e *env) bucket(t testing.TB, sc binding.Scope) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := e.js.KeyValue(ctx, bus.Bucket(schenotify.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range e.keys(t, bus.Bucket(schenotify.Plugin), sc) {
		entry, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[k] = string(entry.Value())
	}
	return out
}
