package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/takeover/console"
)

func TestConsoleToken(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	env := map[string]string{"LANGBOT_CONSOLE_KEY": key}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"console-token", "--scope", "inst.ws.inst-1", "--operator", "dana", "--ttl", "2h", "--base", "http://example.test:8080/"},
		stdio{out: &out, err: &errb, getenv: func(k string) string { return env[k] }})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[1] != "http://example.test:8080/console/#token="+lines[0] {
		t.Fatalf("output %q", lines)
	}
	k, _ := console.ParseKey(key)
	c, sc, err := console.Verify(k, lines[0], time.Now())
	if err != nil || sc.String() != "inst.ws.inst-1" || c.Operator != "dana" || c.Exp > time.Now().Add(2*time.Hour+time.Minute).Unix() {
		t.Fatalf("token %+v %v", c, err)
	}
	for name, args := range map[string][]string{
		"ttl over 24h": {"console-token", "--scope", "a.b.c", "--operator", "x", "--ttl", "25h"},
		"bad scope":    {"console-token", "--scope", "a.b", "--operator", "x"},
		"no operator":  {"console-token", "--scope", "a.b.c"},
		"no key":       {"console-token", "--scope", "a.b.c", "--operator", "x", "--data", t.TempDir()},
	} {
		e := env
		if name == "no key" {
			e = map[string]string{}
		}
		if code := run(context.Background(), args, stdio{out: &out, err: &errb, getenv: func(k string) string { return e[k] }}); code == 0 {
			t.Errorf("%s: exit 0", name)
		}
	}
}

func TestDevConsoleKeyPersists(t *testing.T) {
	dir := t.TempDir()
	k1, err := devConsoleKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := console.ParseKey(k1); err != nil {
		t.Fatalf("generated key: %v", err)
	}
	k2, err := devConsoleKey(dir)
	if err != nil || k2 != k1 {
		t.Fatalf("second load %q %v, want the same key", k2, err)
	}
	// console-token reads it from --data
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"console-token", "--scope", "a.b.c", "--operator", "x", "--data", dir},
		stdio{out: &out, err: &errb, getenv: func(string) string { return "" }}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

// TestDevBannerConsoleURL: lbctl dev prints a console URL whose token
// opens the dev installation's chats.
func TestDevBannerConsoleURL(t *testing.T) {
	d := startDev(t)
	d.say("hello console")
	d.waitFor("you said: hello console", 15*time.Second)
	m := regexp.MustCompile(`(http://\S+)/console/#token=(\S+)`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("no console URL in the banner:\n%s", d.out.String())
	}
	base, tok := m[1], m[2]
	res, err := http.Get(base + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	req, _ := http.NewRequest("GET", base+"/console/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Sessions []struct {
			TargetID string `json:"target_id"`
			BotName  string `json:"bot_name"`
		} `json:"sessions"`
	}
	_ = json.NewDecoder(res.Body).Decode(&list)
	res.Body.Close()
	if res.StatusCode != 200 || len(list.Sessions) != 1 || list.Sessions[0].TargetID != "dev-user" {
		t.Fatalf("sessions: %d %+v", res.StatusCode, list)
	}
}

// TestConsoleTokenKeyFile: the key from LANGBOT_CONSOLE_KEY_FILE, as the
// Compose deployment's secret is handed in (docs/operations.md); setting
// both the variable and the file is refused.
func TestConsoleTokenKeyFile(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	path := filepath.Join(t.TempDir(), "console_key")
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"console-token", "--scope", "inst.ws.inst-1", "--operator", "dana", "--data", t.TempDir()}
	env := map[string]string{"LANGBOT_CONSOLE_KEY_FILE": path}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, stdio{out: &out, err: &errb, getenv: func(k string) string { return env[k] }}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	k, _ := console.ParseKey(key)
	token := strings.SplitN(out.String(), "\n", 2)[0]
	if _, _, err := console.Verify(k, token, time.Now()); err != nil {
		t.Fatalf("token not signed with the file's key: %v", err)
	}
	env["LANGBOT_CONSOLE_KEY"] = key
	errb.Reset()
	if code := run(context.Background(), args, stdio{out: &out, err: &errb, getenv: func(k string) string { return env[k] }}); code == 0 || !strings.Contains(errb.String(), "LANGBOT_CONSOLE_KEY_FILE") {
		t.Fatalf("both set: exit %d: %s", code, errb.String())
	}
}
