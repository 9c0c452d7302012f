package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
)

// A script against the kit's fixture plugin: returns printed in order,
// the message sent into the chat printed with its installation, and an
// unknown command answered without a call.
func TestScript(t *testing.T) {
	runtimetest.FindPython(t)
	archive, err := runtimetest.ZipDir("../../pkg/lbpkg/runtimetest/testdata/probe")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "probe.lbpkg")
	if err := os.WriteFile(file, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	args := []string{"-e", "!probe one two", "-e", "!probe send 9 hello", "-e", "!nope", "-wait", "1s", file}
	if err := run(ctx, args, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	got := out.String()
	for _, want := range []string{"installed runtimetest/Probe", "commands: !probe", "> !probe one two\none\ntwo\n(2 returns",
		"<< send_message (installation ", "revision 2): ", `"target_id": "9"`, `"text": "hello"`, `no package has the command "!nope"`} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
