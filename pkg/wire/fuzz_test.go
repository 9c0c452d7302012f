package wire_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/wire"
)

func FuzzDecodeRequest(f *testing.F) {
	f.Add("command", []byte(`{"binding":{"instance_uuid":"i","workspace_uuid":"w","installation_uuid":"n","placement_generation":1,"runtime_revision":1,"artifact_digest":"d"},"config":{},"command":{"name":"gh","params":["repo","o/r"],"session":{"launcher_type":"group","launcher_id":123456789012345678,"sender_id":"9","bot_uuid":"b"}}}`))
	f.Add("event", []byte(`{"binding":{"instance_uuid":"i","workspace_uuid":"w","installation_uuid":"n","placement_generation":1,"runtime_revision":1,"artifact_digest":"d"},"event":{"name":"PersonMessageReceived","bot_uuid":"b","data":null}}`))
	f.Add("tool", []byte(`{"binding":{},"tool":{"name":"x"}}`))
	f.Add("page", []byte(`{"binding":{"instance_uuid":"a.b"},"page":{"endpoint":"list"}}`))
	f.Add("command", []byte(`{"binding":{"instance_uuid":"i","workspace_uuid":"w","installation_uuid":"n","placement_generation":1,"runtime_revision":1,"artifact_digest":"d"},"command":{"name":"x","session":{"launcher_id":true}}}`))
	f.Fuzz(func(t *testing.T, ep string, body []byte) {
		req, err := wire.DecodeRequest(wire.Endpoint(ep), body)
		if err != nil {
			if !errors.Is(err, wire.ErrEnvelope) {
				t.Fatalf("error %v does not wrap ErrEnvelope", err)
			}
			return
		}
		// accepted: the binding is valid, the scope tokens are subject-safe,
		// config is an object, and the endpoint field is present
		if err := req.Binding.Validate(); err != nil {
			t.Fatalf("accepted an invalid binding: %v", err)
		}
		sc, _ := req.Binding.Scope()
		if strings.ContainsAny(sc.String(), "*> \t") || strings.Count(sc.String(), ".") != 2 {
			t.Fatalf("accepted an unsafe scope %q", sc)
		}
		if !json.Valid(req.Config) || req.Config[0] != '{' {
			t.Fatalf("config %q", req.Config)
		}
		// re-encoding and decoding again gives the same request
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wire.DecodeRequest(wire.Endpoint(ep), again); err != nil {
			t.Fatalf("round trip refused: %v", err)
		}
	})
}

func FuzzParseSubjects(f *testing.F) {
	for _, s := range []string{"langbot.plugin.gh.command.i.w.n", "langbot.lifecycle.gh.attach.i.w.n", "langbot.host.send_message.i.w.n",
		"langbot.schenotify.due.i.w.n.abc", "langbot.plugin.gh.command.i.*.n", "langbot.plugin..command.i.w.n"} {
		f.Add(s)
	}
	s := wire.Subjects{}
	f.Fuzz(func(t *testing.T, subject string) {
		if p, ep, sc, err := s.ParseInvocation(subject); err == nil {
			if s.Invocation(p, ep, sc) != subject {
				t.Fatalf("invocation round trip %q", subject)
			}
		}
		if p, kind, sc, err := s.ParseLifecycle(subject); err == nil {
			if s.Lifecycle(p, kind, sc) != subject {
				t.Fatalf("lifecycle round trip %q", subject)
			}
		}
		if a, sc, err := s.ParseHostAction(subject); err == nil {
			if s.HostAction(a, sc) != subject {
				t.Fatalf("host action round trip %q", subject)
			}
		}
		if kind, sc, ids, err := s.ParseInternal("schenotify", subject); err == nil {
			if got, err := s.Internal("schenotify", kind, sc, ids...); err != nil || got != subject {
				t.Fatalf("internal round trip %q -> %q, %v", subject, got, err)
			}
		}
	})
}
