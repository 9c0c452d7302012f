package schenotify_test

import (
	"errors"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// TestUnknownNamesNotEchoed: a command or tool name the service does not
// have is refused with 404 over real NATS, without echoing the name (it
// echoed up to 64 characters of it) and without a Go error chain.
func TestUnknownNamesNotEchoed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(t, testConfig(), nil, nil, nil)
	b := bind("installation-errtext", 1)
	s := sess("bot", "person", "1")
	const secret = "secretname9"
	for _, tc := range []struct {
		ep  wire.Endpoint
		req *wire.Request
	}{
		{wire.EndpointCommand, &wire.Request{Binding: b, Command: &wire.Command{Name: secret, FullText: "!" + secret, Session: s}}},
		{wire.EndpointTool, &wire.Request{Binding: b, Tool: &wire.Tool{Name: secret, Session: s}}},
	} {
		_, err := e.call(t, tc.ep, "", tc.req)
		var be *wire.Error
		if !errors.As(err, &be) || be.Code != 404 {
			t.Fatalf("%s %s: %v, want 404", tc.ep, secret, err)
		}
		bustest.CheckErrorText(t, string(tc.ep), be.Message, secret)
	}
}
