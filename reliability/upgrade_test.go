package reliability_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestOlderRevisionRefusedOnceAttachApplied attaches a newer revision, waits
// until the lifecycle consumer acknowledged it, and at once invokes with
// the previous revision, which DESIGN 3.3 refuses (403).
//
// Found here first: the lifecycle handler put the new authority into the
// in-process view without its KV revision, so a late watch delivery of the
// previous record could overwrite it for a few milliseconds; the view now
// orders local writes by their CAS revision.
func TestOlderRevisionRefusedOnceAttachApplied(t *testing.T) {
	srv := bustest.NewServer(t)
	s := newStack(t, srv.Conn(t))
	s.startAll(func() *nats.Conn { return srv.Conn(t) })
	served := map[string]int{}
	const rounds = 40
	for i := range rounds {
		in := s.newInstall(fmt.Sprintf("up-%d", i))
		s.attachAll(in)
		for _, p := range plugins {
			old := in.b[p]
			nb := old
			nb.RuntimeRevision++
			in.b[p] = nb
			s.publishAttach(in, p, true)
			s.waitLifecycle(p)
			in.b[p] = old
			var err error
			switch p {
			case schenotify.Plugin:
				_, err = s.scheTool(in, s.newID(), schenotify.ToolList, map[string]any{})
			case githubkit.Plugin:
				_, err = s.ghCmd(in, s.newID(), "subs")
			case takeover.Plugin:
				err = s.page(in, s.newID(), "GET", "/sessions", map[string]any{}, nil)
			}
			in.b[p] = nb
			if !isCode(err, 403) {
				served[p]++
				t.Logf("%s round %d: older revision got %v", p, i, err)
			}
		}
	}
	t.Logf("older revision served after the attach was acked, of %d: %v", rounds, served)
	for p, n := range served {
		t.Errorf("%s served the older revision %d times of %d", p, n, rounds)
	}
}
