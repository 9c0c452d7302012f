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
// KNOWN BUG (pkg/bus, lead): the lifecycle handler updates the in-process
// view with revision 0 (pkg/bus/lifecycle.go, r.view.apply(sc, d.Next, 0)),
// and AuthorityView.apply (pkg/bus/authority.go) only drops watched entries
// older than a non-zero stored revision. When the watch is still behind (the
// previous attach's put not yet delivered), that older put overwrites the
// newer local state, so for a few milliseconds the view holds the previous
// binding: an invocation with the superseded revision is served (and,
// after a revoke, a disabled installation could be). About 1 in 20
// upgrades on this machine. Fix: apply with the CAS revision of the write.
func TestOlderRevisionRefusedOnceAttachApplied(t *testing.T) {
	if !knownBugs() {
		t.Skip("KNOWN BUG: the authority view can regress to the previous binding for a moment after an attach (pkg/bus/lifecycle.go view.apply with revision 0); run with LANGBOT_KNOWN_BUGS=1")
	}
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
			}
		}
	}
	t.Logf("older revision served after the attach was acked, of %d: %v", rounds, served)
	for p, n := range served {
		t.Errorf("%s served the older revision %d times of %d", p, n, rounds)
	}
}
