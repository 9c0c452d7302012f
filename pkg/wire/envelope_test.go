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
