package takeover_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
)

// Issue 19 (stored sizes): a config whose trigger word, notice or
// operator chat is a 980 KB string is refused (400 bad_request naming the
// field and the cap, none of the value), and the bucket does not change:
// neither the authority record (which keeps the config) nor a chat record.
func TestOverlongSettingRefused(t *testing.T) {
	h := newHarness(t)
	b := newBinding("sizes")
	h.attach(b, cfgTrigger, true)
	h.mustEvent(b, cfgTrigger, takeover.EventPersonMessage, "bot-a", msgData("person", 42, 42, plain("hello")))
	before := h.bucketValues()
	big := strings.Repeat("z", 980_000)
	for field, cfg := range map[string]string{
		"trigger_words":           `{"trigger_words":["` + big + `"]}`,
		"user_notice_on_takeover": `{"user_notice_on_takeover":"` + big + `"}`,
		"operator_chats":          `{"trigger_words":["human"],"operator_chats":["bot-a:group:` + big + `"]}`,
	} {
		_, err := h.event(b, cfg, takeover.EventPersonMessage, "bot-a", msgData("person", 43, 43, plain("human please")))
		var e *wire.Error
		if !errors.As(err, &e) || e.Code != 400 || !strings.Contains(e.Message, field) || strings.Contains(e.Message, "zzz") {
			t.Errorf("%s: %v, want 400 naming the field without the value", field, err)
		}
		if e != nil {
			bustest.CheckErrorText(t, field, e.Message, big)
		}
	}
	if after := h.bucketValues(); !reflect.DeepEqual(before, after) {
		t.Errorf("bucket changed: %d keys before, %d after", len(before), len(after))
	}
	// an attach with such a config is refused as malformed (terminated,
	// counted); the authority keeps the old config
	bigCfg := `{"trigger_words":["` + big + `"]}`
	b2 := b
	b2.RuntimeRevision++
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := bus.PublishAttach(ctx, h.js, wire.Subjects{}, takeover.Plugin, wire.Attach{Binding: b2, Config: []byte(bigCfg), Enabled: true}, ""); err != nil {
		t.Fatal(err)
	}
	malformed := map[string]string{"kind": wire.LifecycleAttach, "result": "malformed"}
	bustest.Eventually(t, "attach refused", func() bool { return h.metric("langbot_lifecycle_messages_total", malformed) == 1 })
	for k, v := range h.bucketValues() {
		if len(v) > settings.MaxStringBytes {
			t.Errorf("key %s holds %d bytes", k, len(v))
		}
	}
}

// bucketValues reads every key and value of the plugin bucket.
func (h *harness) bucketValues() map[string]string {
	h.t.Helper()
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range h.keys(bus.Bucket(takeover.Plugin)) {
		e, err := kv.Get(context.Background(), k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			h.t.Fatal(err)
		}
		out[k] = string(e.Value())
	}
	return out
}
