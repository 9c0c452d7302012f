package reliability_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// TestUninstallRightAfterWrite uninstalls each installation of each plugin
// right after a state-changing invocation was answered (work that may still
// finish after the reply: coalesced takeover metadata, recordings, dedupe
// records, githubkit's baseline) and checks that once the lifecycle is
// applied and the state has settled only the tombstone is left.
func TestUninstallRightAfterWrite(t *testing.T) {
	srv := bustest.NewServer(t)
	s := newStack(t, srv.Conn(t))
	s.startAll(func() *nats.Conn { return srv.Conn(t) })
	var ins []*install
	for i := range 10 {
		ins = append(ins, s.newInstall(fmt.Sprintf("race-%d", i)))
	}
	s.attachAll(ins...)
	for _, in := range ins {
		if _, err := s.ghCmd(in, s.newID(), "sub acme/alpha"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.message(in, s.newID(), "u1", "hi"); err != nil {
			t.Fatal(err)
		}
		if err := s.page(in, s.newID(), "POST", "/takeover", map[string]string{"sid": in.sid("u1")}, nil); err != nil {
			t.Fatal(err)
		}
		r, err := s.scheTool(in, s.newID(), schenotify.ToolSchedule, map[string]any{"message": "x",
			"time_str": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		if err != nil || r["status"] != "ok" {
			t.Fatal(r, err)
		}
		for _, p := range plugins {
			s.publishRevoke(in, p, "uninstall")
		}
	}
	for _, p := range plugins {
		s.waitLifecycle(p)
	}
	settle(t, s)
	snap := s.mustTake()
	for _, in := range ins {
		for _, p := range plugins {
			sc := in.scope(p)
			if extra := snap.only(sc.String(), bus.Bucket(p)+" "+bus.AuthorityKey(sc)); len(extra) > 0 {
				t.Errorf("%s: %v", sc, extra)
			}
		}
	}
}
