package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestDevLogsNameTheServiceOnce runs the dev stack with debug logs and
// checks that every JSON log line names its service exactly once, under
// the one key telemetry.NewLogger sets (the runner and the services add
// none of their own), and that a service's line says which service it is.
func TestDevLogsNameTheServiceOnce(t *testing.T) {
	d := startDev(t, "--log-level", "debug")
	d.say("!sche add in 1h stretch")
	d.waitFor(`"msg":"reminder created"`, 10*time.Second)
	d.say("hello there")
	d.waitFor("you said: hello there", 10*time.Second)
	plugins := map[string]bool{}
	for _, s := range devServices() {
		plugins[s.Plugin] = true
	}
	lines := 0
	for _, line := range strings.Split(d.out.String(), "\n") {
		i := strings.Index(line, `{"time":`) // after the prompt, if any
		if i < 0 {
			continue
		}
		line = line[i:]
		lines++
		if n := strings.Count(line, `"service":`); n != 1 {
			t.Errorf("%d service attributes in %s", n, line)
		}
		if strings.Contains(line, `"plugin":`) {
			t.Errorf("a plugin attribute in %s", line)
		}
		var rec struct {
			Service, Msg string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("log line %s: %v", line, err)
			continue
		}
		if rec.Msg == "reminder created" && rec.Service != "schenotify" {
			t.Errorf("schenotify's line says service %q", rec.Service)
		}
		if !plugins[rec.Service] && rec.Service != "lbctl-dev" {
			t.Errorf("unknown service %q in %s", rec.Service, line)
		}
	}
	if lines == 0 {
		t.Fatalf("no log lines:\n%s", d.out.String())
	}
}
