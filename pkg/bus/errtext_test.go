package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// TestEnvelopeErrorsNameNoValue sends malformed bodies to a runner over real
// NATS: every refusal is a fixed text, with no Go error chain ("json: cannot
// unmarshal ...", "binding: invalid scope: ...") and none of the values sent;
// a JSON array body is named as such. Before, the wrong-kind id passed
// through as "bus: malformed request: bus: id must be ...", a scope token
// with a '*' echoed the character and its position, and an array body said
// `field "" has the wrong type`.
func TestEnvelopeErrorsNameNoValue(t *testing.T) {
	var calls atomic.Int64
	h := newHarness(t, bus.RunnerConfig{Handlers: countingHandlers(&calls)}, bus.Deps{})
	h.install(bindingFor("i", "w", "n", 1, 1))
	const subj = "langbot.plugin.echo.command.i.w.n"
	b := `"binding":{"instance_uuid":"i","workspace_uuid":"w","installation_uuid":"n","placement_generation":1,"runtime_revision":1,"artifact_digest":"d"}`
	for _, tc := range []struct {
		name, body string
		sent       []string
		want       string
	}{
		{"array body", `["secretvalue1"]`, []string{"secretvalue1"}, "body is a JSON array, expected an object"},
		{"array body after space", " \n[1,2]", nil, "JSON array"},
		{"string body", `"secretvalue2"`, []string{"secretvalue2"}, "JSON object"},
		{"truncated", `{` + b + `,"command":{"name":"secretval`, []string{"secretval"}, "malformed JSON"},
		{"garbage", "secretvalue3 nope", []string{"secretvalue3"}, "malformed JSON"},
		{"wrong kind of id", `{` + b + `,"command":{"name":"echo","session":{"launcher_id":{"secretvalue4":1}}}}`, []string{"secretvalue4"}, ""},
		{"bad scope token", `{"binding":{"instance_uuid":"i","workspace_uuid":"w*secretvalue5","installation_uuid":"n","placement_generation":1,"runtime_revision":1,"artifact_digest":"d"},"command":{"name":"echo"}}`, []string{"secretvalue5", "'*'"}, "binding"},
		{"digest control char", `{"binding":{"instance_uuid":"i","workspace_uuid":"w","installation_uuid":"n","placement_generation":1,"runtime_revision":1,"artifact_digest":"d\u0001secretvalue6"},"command":{"name":"echo"}}`, []string{"secretvalue6"}, "binding"},
		{"config array", `{` + b + `,"config":["secretvalue7"],"command":{"name":"echo"}}`, []string{"secretvalue7"}, "config"},
		{"params wrong type", `{` + b + `,"command":{"name":"echo","params":"secretvalue8"}}`, []string{"secretvalue8"}, "wrong type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.invoker.InvokeRaw(context.Background(), subj, "inv-"+tc.name, []byte(tc.body))
			var e *wire.Error
			if !errors.As(err, &e) || e.Code != 400 {
				t.Fatalf("got %v, want 400", err)
			}
			bustest.CheckErrorText(t, tc.name, e.Message, tc.sent...)
			if !strings.Contains(e.Message, tc.want) {
				t.Errorf("message %q, want it to contain %q", e.Message, tc.want)
			}
		})
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("handler ran %d times", n)
	}
}
