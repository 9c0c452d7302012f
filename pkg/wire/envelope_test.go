package wire_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/wire"
)

func TestDecodeRequestRefusesMalformedBodies(t *testing.T) {
	const bnd = `"binding":{"instance_uuid":"i","workspace_uuid":"w","installation_uuid":"n","placement_generation":1,"runtime_revision":1,"artifact_digest":"d"}`
	const event = `{` + bnd + `,"event":{"name":"PersonMessageReceived","bot_uuid":"b","data":{"launcher_id":12345678901234567890}}}`
	if req, err := wire.DecodeRequest(wire.EndpointEvent, []byte(event)); err != nil {
		t.Fatalf("a well-formed event was refused: %v", err)
	} else if string(req.Config) != "{}" || string(req.Event.Data) != `{"launcher_id":12345678901234567890}` {
		t.Fatalf("config %s, data %s: want {} and the data as sent", req.Config, req.Event.Data)
	}
	for name, body := range map[string]string{
		"trailing object":    event + `{}`,
		"trailing garbage":   event + ` x`,
		"two objects":        event + event,
		"not an object":      `[1]`,
		"invalid utf-8":      "{" + bnd + `,"event":{"name":"\xff","data":{}}}`,
		"config not object":  `{` + bnd + `,"config":[1],"event":{"name":"e"}}`,
		"no event":           `{` + bnd + `}`,
		"unnamed event":      `{` + bnd + `,"event":{"name":" "}}`,
		"incomplete binding": `{"binding":{"instance_uuid":"i"},"event":{"name":"e"}}`,
		"truncated":          event[:len(event)-1],
	} {
		_, err := wire.DecodeRequest(wire.EndpointEvent, []byte(body))
		if !errors.Is(err, wire.ErrEnvelope) {
			t.Errorf("%s: error %v, want ErrEnvelope", name, err)
		}
	}
}

// TestIDErrorEchoesNothing: a session or sender id of the wrong JSON kind is
// refused by its kind, without echoing the value (it echoed up to 20 bytes).
func TestIDErrorEchoesNothing(t *testing.T) {
	for raw, kind := range map[string]string{`{"secret-token-value":1}`: "an object", `["secret-token-value"]`: "an array", `true`: "a boolean"} {
		var id wire.ID
		err := json.Unmarshal([]byte(raw), &id)
		if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "true") || !strings.Contains(err.Error(), kind) {
			t.Errorf("%s: %v, want an error naming %s and echoing nothing", raw, err, kind)
		}
	}
}

// TestDecodeRequestRefusalsAreTyped: every refusal is an *EnvelopeError
// naming the part at fault, and its Reason (what the caller reads) names
// fields, kinds and byte positions, never a value sent.
func TestDecodeRequestRefusalsAreTyped(t *testing.T) {
	const bnd = `"binding":{"instance_uuid":"i","workspace_uuid":"w","installation_uuid":"n","placement_generation":1,"runtime_revision":1,"artifact_digest":"d"}`
	long := `{` + bnd + `,"config":{"notice":"` + strings.Repeat("s", 40<<10) + `"},"command":{"name":"c"}}`
	for _, c := range []struct {
		name, body, field, reason string
	}{
		{"invalid utf-8", "{\xff}", "body", "body is not valid UTF-8"},
		{"array", `["secret"]`, "body", "body is a JSON array, expected an object"},
		{"string", `"secret"`, "body", "the body must be a JSON object"},
		{"truncated", `{"binding":{"instance_uuid":"secret`, "body", "malformed JSON at byte 35"},
		{"wrong type", `{` + bnd + `,"command":{"name":"c","params":"secret"}}`, "command.params", `field "command.params" has the wrong type`},
		{"id of an object", `{` + bnd + `,"command":{"name":"c","session":{"launcher_id":{"secret":1}}}}`, "id", "id must be a string or a number, not an object"},
		{"bad scope token", `{"binding":{"instance_uuid":"i","workspace_uuid":"w*secret","installation_uuid":"n","placement_generation":1,"runtime_revision":1,"artifact_digest":"d"},"command":{"name":"c"}}`,
			"binding", "the binding's instance, workspace or installation id is not a valid token"},
		{"generation 0", `{"binding":{"instance_uuid":"i","workspace_uuid":"w","installation_uuid":"n","placement_generation":0,"runtime_revision":1,"artifact_digest":"d"},"command":{"name":"c"}}`,
			"binding", "the binding is invalid (generation and revision must be >= 1, the digest printable)"},
		{"config array", `{` + bnd + `,"config":["secret"],"command":{"name":"c"}}`, "config", "config must be an object"},
		{"config string too long", long, "config", "config field notice has a string longer than 32768 bytes"},
		{"no command", `{` + bnd + `}`, "command", "missing command"},
		{"unnamed command", `{` + bnd + `,"command":{"name":" "}}`, "command", "command has no name"},
	} {
		_, err := wire.DecodeRequest(wire.EndpointCommand, []byte(c.body))
		var env *wire.EnvelopeError
		if !errors.As(err, &env) {
			t.Errorf("%s: %v, want an *EnvelopeError", c.name, err)
			continue
		}
		if env.Field != c.field || env.Reason != c.reason || !errors.Is(err, wire.ErrEnvelope) {
			t.Errorf("%s: Field %q Reason %q, want %q %q (and ErrEnvelope)", c.name, env.Field, env.Reason, c.field, c.reason)
		}
		if strings.Contains(env.Reason, "secret") || strings.Contains(env.Reason, "sss") {
			t.Errorf("%s: Reason %q echoes the body", c.name, env.Reason)
		}
	}
}
