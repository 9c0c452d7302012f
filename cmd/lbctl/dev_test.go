package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

// anyPort is the --listen address of a test's lbctl dev: port -1 lets its
// NATS server bind a free port itself (a port picked before could be taken
// by another test first); the banner names the one it got (natsURL).
const anyPort = "127.0.0.1:-1"

// natsURL is the NATS address the banner of out names.
func natsURL(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`NATS\s+(nats://\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the banner names no NATS address:\n%s", out)
	}
	return m[1]
}

// devSession runs lbctl dev with a scripted prompt.
type devSession struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bustest.LogBuffer
	done chan int
}

func startDev(t *testing.T, extra ...string) *devSession {
	t.Helper()
	pr, pw := io.Pipe()
	out := &bustest.LogBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"dev", "--listen", anyPort, "--http", "127.0.0.1:0",
		"--data", t.TempDir(), "--log-level", "error"}, extra...)
	d := &devSession{t: t, in: pw, out: out, done: make(chan int, 1)}
	go func() {
		d.done <- run(ctx, args, stdio{in: pr, out: out, err: out, getenv: func(string) string { return "" }})
	}()
	t.Cleanup(func() {
		cancel()
		pw.Close()
		select {
		case <-d.done:
		case <-time.After(20 * time.Second):
			t.Error("lbctl dev did not stop")
		}
	})
	d.waitFor("Type a chat message", 30*time.Second)
	return d
}

func (d *devSession) say(line string) { _, _ = io.WriteString(d.in, line+"\n") }

// waitFor waits until the output contains s, after any earlier match.
func (d *devSession) waitFor(s string, timeout time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(d.out.String(), s) {
		if time.Now().After(deadline) {
			d.t.Fatalf("output never contained %q; output:\n%s", s, d.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDevStackChats(t *testing.T) {
	d := startDev(t)
	d.say("hello there")
	d.waitFor("[AI] (simulated AI) you said: hello there", 10*time.Second)
	d.say("/as group g42")
	d.say("/whoami")
	d.waitFor("group g42", 5*time.Second)
	d.say("!nosuchcommand x")
	d.waitFor(`no plugin serves the command "nosuchcommand"`, 5*time.Second)
	for _, s := range devServices() {
		if !strings.Contains(d.out.String(), "service  "+s.Plugin) {
			t.Errorf("banner does not list %s", s.Plugin)
		}
	}
	d.say("/quit")
	select {
	case code := <-d.done:
		if code != 0 {
			t.Fatalf("exit code %d; output:\n%s", code, d.out.String())
		}
		d.done <- code
	case <-time.After(20 * time.Second):
		t.Fatal("/quit did not stop the stack")
	}
}

func TestParseCommandText(t *testing.T) {
	tests := []struct {
		in, prefix, name string
		params           []string
		ok               bool
	}{
		{"!sche add in 1m stretch", "!", "sche", []string{"add", "in", "1m", "stretch"}, true},
		{"！gh  repo\to/r", "！", "gh", []string{"repo", "o/r"}, true},
		{"/gh", "/", "gh", nil, true},
		{"hello", "", "", nil, false},
		{"! ", "", "", nil, false},
	}
	for _, tt := range tests {
		p, n, params, ok := parseCommandText(tt.in)
		if p != tt.prefix || n != tt.name || ok != tt.ok || strings.Join(params, ",") != strings.Join(tt.params, ",") {
			t.Errorf("parseCommandText(%q) = %q %q %v %v", tt.in, p, n, params, ok)
		}
	}
}

func TestUnknownCommandExits2(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"frobnicate"}, stdio{out: &out, err: &out, getenv: func(string) string { return "" }}); code != 2 {
		t.Fatalf("exit %d", code)
	}
}

// TestDevStackLinkCard: a GitHub link typed in the dev chat gets
// githubkit's card from the fake GitHub, next to the simulated AI's answer.
func TestDevStackLinkCard(t *testing.T) {
	d := startDev(t, "--fake-github")
	d.say("look at https://github.com/octocat/Hello-World/issues/1347")
	d.waitFor("[AI] (simulated AI) you said: look at", 10*time.Second)
	d.waitFor("[githubkit → person", 10*time.Second)
	d.waitFor("📝 octocat/Hello-World#1347 [open] Found a bug", 5*time.Second)
}
