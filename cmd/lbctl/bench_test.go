package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

// TestBenchInvokeFloorAndSkip runs lbctl bench invoke against an embedded
// server where no plugin service runs: the floor rows are measured, the
// plugin's rows say SKIP with the reason, the floor's bucket is removed,
// and the command succeeds.
func TestBenchInvokeFloorAndSkip(t *testing.T) {
	s := bustest.NewServer(t)
	var out, errb bytes.Buffer
	env := map[string]string{}
	code := run(context.Background(), []string{"bench", "invoke", "--nats", s.URL(), "--n", "20", "--plugins", "githubkit"},
		stdio{out: &out, err: &errb, getenv: func(k string) string { return env[k] }})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"floor: echo ", "floor: echo + KV read", "githubkit command !gh help", "SKIP: not running (no responders)", "targets:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	js := s.JetStream(t)
	if _, err := js.KeyValue(context.Background(), benchFloorBucket); err == nil {
		t.Errorf("bucket %s was left behind", benchFloorBucket)
	}
}
