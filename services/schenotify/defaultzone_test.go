package schenotify_test

import (
	"errors"
	"testing"

	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// TestDefaultZoneFollowsProcessZone: an installation that sets no timezone
// gets the process zone, the one its deployment sets with TZ (LANGBOT_TZ in
// the Compose deployment, TZ of langbot-config on Kubernetes), resolved as
// the binary resolves it; an installation's own timezone still wins. The
// zone is passed in: no environment of this test process is read.
func TestDefaultZoneFollowsProcessZone(t *testing.T) {
	noLink := func(string) (string, error) { return "", errors.New("no /etc/localtime") }
	for _, zone := range []string{"Asia/Shanghai", "America/New_York"} {
		t.Run(zone, func(t *testing.T) {
			env := func(k string) (string, bool) {
				if k == "TZ" {
					return zone, true
				}
				return "", false
			}
			e := newEnv(t)
			cfg := testConfig()
			cfg.DefaultZone = when.DefaultZoneName(env, noLink)
			e.start(t, cfg, nil, nil, nil)

			a, s := bind("inst-a", 1), sess("bot", "group", "g1")
			id := e.schedule(t, a, `{"language":"en_US"}`, s, map[string]any{"message": "standup", "recurrence": "@daily"})
			if got := zoneOf(e.record(t, scopeOf(a), id)); got != zone {
				t.Fatalf("installation without timezone, TZ=%s: reminder zone %q", zone, got)
			}
			b := bind("inst-b", 1)
			id = e.schedule(t, b, `{"language":"en_US","timezone":"Europe/Berlin"}`, s, map[string]any{"message": "standup", "recurrence": "@daily"})
			if got := zoneOf(e.record(t, scopeOf(b), id)); got != "Europe/Berlin" {
				t.Fatalf("installation with timezone Europe/Berlin: reminder zone %q", got)
			}
		})
	}
}

func zoneOf(r *schenotify.Record) string {
	if r == nil {
		return "(no record)"
	}
	return r.Zone
}
