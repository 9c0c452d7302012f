package reliability_test

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"pgregory.net/rapid"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// isolationInstalls is the number of installations of each check (the
// issue asks for at least 20).
const isolationInstalls = 21

// settleWindow is how long after a step a scope's stored state may still
// change: takeover coalesces session metadata (one CAS per session per
// 500 ms) and finishes recordings after the 200 ms reply budget.
const settleWindow = 3 * time.Second

// repos are the repositories installations subscribe to (the fake GitHub
// creates them on first access).
var repos = []string{"acme/alpha", "acme/beta", "acme/gamma"}

// launchers are the chat users sending messages to each installation's bot.
var launchers = []string{"u1", "u2", "u3"}

// instModel is what one installation should observe.
type instModel struct {
	in       *install
	state    map[string]bus.State // per plugin
	rems     map[string]bool      // schenotify reminder ids
	subs     map[string]bool      // githubkit repositories (lower case)
	sessions map[string]bool      // takeover sid -> taken over
	replies  int                  // operator replies delivered
	acted    map[string]time.Time // plugin -> when a step last acted on it
}

// isoModel is the model of one rapid check plus the shared stack.
type isoModel struct {
	s     *stack
	ins   []*instModel
	all   []*instModel // the installations of the checks that passed
	every []*instModel // every installation so far, for the settle window
	last  snapshot
	sends int
	acted *instModel // the installation the current step acted on
}

var isoSteps, isoChecks, isoInvocations, isoLateRefusals atomic.Int64

// TestIsolationModel runs random commands, events, tools, page calls,
// attaches, revokes and uninstalls against the three services (one
// embedded server, one replica each) across 21 installations per check, and
// after every step checks that
//   - no scope's stored state (any KV key of any bucket, any stream subject)
//     changed unless a step acted on that scope within the settle window;
//   - every host send since the last step is addressed to the scope acted
//     on, with an idempotency key naming that scope;
//   - the acted installation's reminders, subscriptions and console sessions
//     (read through the services) equal the model;
//
// and after each check that every installation of every check so far agrees
// with the model. Checks default to 3 (steps: 100 on average at full size);
// LANGBOT_SOAK=1 runs 20 checks of 200; -rapid.checks, -rapid.steps and -rapid.seed override.
func TestIsolationModel(t *testing.T) {
	setRapidDefaults(3, 100)
	if soak() {
		setRapidDefaults(20, 200)
	}
	srv := bustest.NewServer(t)
	s := newStack(t, srv.Conn(t))
	s.startAll(func() *nats.Conn { return srv.Conn(t) })
	m := &isoModel{s: s}
	check := 0
	rapid.Check(t, func(rt *rapid.T) {
		check++
		m.newCheck(rt, check)
		rt.Repeat(map[string]func(*rapid.T){
			"sche_add":    m.scheAdd,
			"sche_cancel": m.scheCancel,
			"gh_sub":      m.ghSub,
			"gh_unsub":    m.ghUnsub,
			"gh_read":     m.ghRead,
			"to_message":  m.toMessage,
			"to_takeover": m.toTakeover,
			"to_release":  m.toRelease,
			"to_reply":    m.toReply,
			"disable":     m.disable,
			"enable":      m.enable,
			"upgrade":     m.upgrade,
			"uninstall":   m.uninstall,
			"":            m.checkStep,
		})
		m.all = append(m.all, m.ins...)
		m.checkAll(rt)
		isoChecks.Add(1)
	})
	t.Logf("FIGURE isolation: %d checks, %d steps checked, %d installations x 3 plugins, %d invocations, %d superseded-revision probes served before the refusal",
		isoChecks.Load(), isoSteps.Load(), len(m.all), isoInvocations.Load(), isoLateRefusals.Load())
}

// setRapidDefaults sets rapid's checks and steps unless given on the
// command line or in RAPID_CHECKS/RAPID_STEPS.
func setRapidDefaults(checks, steps int) {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["rapid.checks"] && getenv("RAPID_CHECKS") == "" {
		_ = flag.Set("rapid.checks", fmt.Sprint(checks))
	}
	if !set["rapid.steps"] && getenv("RAPID_STEPS") == "" {
		_ = flag.Set("rapid.steps", fmt.Sprint(steps))
	}
	// a failure prints its seed (-rapid.seed reproduces it); no fail files
	// in the tree
	if !set["rapid.nofailfile"] && getenv("RAPID_NOFAILFILE") == "" {
		_ = flag.Set("rapid.nofailfile", "true")
	}
}

// newCheck creates and attaches this check's installations.
func (m *isoModel) newCheck(rt *rapid.T, check int) {
	m.ins = nil
	var ins []*install
	for i := range isolationInstalls {
		in := m.s.newInstall(fmt.Sprintf("iso%d-%02d", check, i))
		ins = append(ins, in)
		im := &instModel{in: in, state: map[string]bus.State{}, rems: map[string]bool{}, subs: map[string]bool{},
			sessions: map[string]bool{}, acted: map[string]time.Time{}}
		for _, p := range plugins {
			im.state[p] = bus.StateActive
			im.acted[p] = time.Now()
		}
		m.ins = append(m.ins, im)
		m.every = append(m.every, im)
	}
	m.s.attachAll(ins...)
	m.last = m.s.mustTake()
	m.sends = len(m.s.host.Sends())
}

// pick draws an installation and marks it as the one this step acts on.
func (m *isoModel) pick(rt *rapid.T, plugin string) *instModel {
	im := m.ins[rapid.IntRange(0, len(m.ins)-1).Draw(rt, "installation")]
	m.acted = im
	im.acted[plugin] = time.Now()
	return im
}

// refused checks the answer of an invocation on an inactive plugin.
func refused(rt *rapid.T, what string, err error) {
	if !isCode(err, 403) {
		rt.Fatalf("%s on an inactive installation: got %v, want 403", what, err)
	}
}

func (m *isoModel) scheAdd(rt *rapid.T) {
	im := m.pick(rt, schenotify.Plugin)
	if im.state[schenotify.Plugin] == bus.StateActive && len(im.rems) >= 5 {
		rt.Skip("reminder cap of the model")
	}
	id := m.s.newID()
	params := map[string]any{"message": "note " + im.in.name, "time_str": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)}
	r, err := m.s.scheTool(im.in, id, schenotify.ToolSchedule, params)
	isoInvocations.Add(1)
	if im.state[schenotify.Plugin] != bus.StateActive {
		refused(rt, "schedule_notify", err)
		return
	}
	if err != nil || r["status"] != "ok" {
		rt.Fatalf("schedule_notify: %v %v", r, err)
	}
	rid, _ := r["id"].(string)
	if rapid.Bool().Draw(rt, "retry same invocation id") {
		r2, err := m.s.scheTool(im.in, id, schenotify.ToolSchedule, params)
		isoInvocations.Add(1)
		if err != nil || r2["id"] != rid {
			rt.Fatalf("retry of schedule_notify: %v %v, first id %s", r2, err, rid)
		}
	}
	im.rems[rid] = true
}

func (m *isoModel) scheCancel(rt *rapid.T) {
	im := m.pick(rt, schenotify.Plugin)
	if len(im.rems) == 0 {
		rt.Skip("no reminder")
	}
	rid := rapid.SampledFrom(sortedKeys(im.rems)).Draw(rt, "reminder")
	r, err := m.s.scheTool(im.in, m.s.newID(), schenotify.ToolCancel, map[string]any{"id": rid})
	isoInvocations.Add(1)
	if im.state[schenotify.Plugin] != bus.StateActive {
		refused(rt, "cancel_notification", err)
		return
	}
	if err != nil || r["status"] != "ok" {
		rt.Fatalf("cancel_notification %s: %v %v", rid, r, err)
	}
	delete(im.rems, rid)
}

func (m *isoModel) ghSub(rt *rapid.T) {
	im := m.pick(rt, githubkit.Plugin)
	repo := rapid.SampledFrom(repos).Draw(rt, "repo")
	id := m.s.newID()
	_, err := m.s.ghCmd(im.in, id, "sub "+repo)
	isoInvocations.Add(1)
	if im.state[githubkit.Plugin] != bus.StateActive {
		refused(rt, "gh sub", err)
		return
	}
	if err != nil {
		rt.Fatalf("gh sub %s: %v", repo, err)
	}
	if rapid.Bool().Draw(rt, "retry same invocation id") {
		if _, err := m.s.ghCmd(im.in, id, "sub "+repo); err != nil {
			rt.Fatalf("retry of gh sub: %v", err)
		}
		isoInvocations.Add(1)
	}
	im.subs[repo] = true
}

func (m *isoModel) ghUnsub(rt *rapid.T) {
	im := m.pick(rt, githubkit.Plugin)
	if len(im.subs) == 0 {
		rt.Skip("no subscription")
	}
	repo := rapid.SampledFrom(sortedKeys(im.subs)).Draw(rt, "repo")
	_, err := m.s.ghCmd(im.in, m.s.newID(), "unsub "+repo)
	isoInvocations.Add(1)
	if im.state[githubkit.Plugin] != bus.StateActive {
		refused(rt, "gh unsub", err)
		return
	}
	if err != nil {
		rt.Fatalf("gh unsub %s: %v", repo, err)
	}
	delete(im.subs, repo)
}

// ghRead runs "!gh subs", which must list exactly the model's repositories.
func (m *isoModel) ghRead(rt *rapid.T) {
	im := m.pick(rt, githubkit.Plugin)
	text, err := m.s.ghCmd(im.in, m.s.newID(), "subs")
	isoInvocations.Add(1)
	if im.state[githubkit.Plugin] != bus.StateActive {
		refused(rt, "gh subs", err)
		return
	}
	if err != nil {
		rt.Fatalf("gh subs: %v", err)
	}
	lower := strings.ToLower(text)
	for _, r := range repos {
		if strings.Contains(lower, r) != im.subs[r] {
			rt.Fatalf("gh subs of %s shows %q; model %v", im.in.name, text, sortedKeys(im.subs))
		}
	}
}

func (m *isoModel) toMessage(rt *rapid.T) {
	im := m.pick(rt, takeover.Plugin)
	lid := rapid.SampledFrom(launchers).Draw(rt, "launcher")
	r, err := m.s.message(im.in, m.s.newID(), lid, "hello from "+lid)
	isoInvocations.Add(1)
	if im.state[takeover.Plugin] != bus.StateActive {
		refused(rt, "message event", err)
		return
	}
	if err != nil {
		rt.Fatalf("message event: %v", err)
	}
	sid := im.in.sid(lid)
	if r.PreventDefault != im.sessions[sid] {
		rt.Fatalf("message in %s: prevent_default %v, model taken over %v", sid, r.PreventDefault, im.sessions[sid])
	}
	if _, ok := im.sessions[sid]; !ok {
		im.sessions[sid] = false
	}
}

// session draws one of the installation's known sessions.
func session(rt *rapid.T, im *instModel) string {
	if len(im.sessions) == 0 {
		rt.Skip("no session")
	}
	return rapid.SampledFrom(sortedKeys(im.sessions)).Draw(rt, "session")
}

func (m *isoModel) toTakeover(rt *rapid.T) {
	im := m.pick(rt, takeover.Plugin)
	sid := session(rt, im)
	err := m.s.page(im.in, m.s.newID(), "POST", "/takeover", map[string]string{"sid": sid}, nil)
	isoInvocations.Add(1)
	if im.state[takeover.Plugin] != bus.StateActive {
		refused(rt, "POST /takeover", err)
		return
	}
	if err != nil {
		rt.Fatalf("POST /takeover: %v", err)
	}
	im.sessions[sid] = true
}

func (m *isoModel) toRelease(rt *rapid.T) {
	im := m.pick(rt, takeover.Plugin)
	sid := session(rt, im)
	err := m.s.page(im.in, m.s.newID(), "DELETE", "/takeover", map[string]string{"sid": sid}, nil)
	isoInvocations.Add(1)
	if im.state[takeover.Plugin] != bus.StateActive {
		refused(rt, "DELETE /takeover", err)
		return
	}
	if err != nil {
		rt.Fatalf("DELETE /takeover: %v", err)
	}
	im.sessions[sid] = false
}

func (m *isoModel) toReply(rt *rapid.T) {
	im := m.pick(rt, takeover.Plugin)
	sid := session(rt, im)
	var res takeover.ReplyResult
	err := m.s.page(im.in, m.s.newID(), "POST", "/reply", map[string]string{"sid": sid,
		"idempotency_key": fmt.Sprintf("reply-key-%08d", m.s.seq.Add(1)), "text": "operator says hi"}, &res)
	isoInvocations.Add(1)
	if im.state[takeover.Plugin] != bus.StateActive {
		refused(rt, "POST /reply", err)
		return
	}
	if err != nil || !res.Delivered {
		rt.Fatalf("POST /reply: %+v %v", res, err)
	}
	im.sessions[sid] = true // takeover_on_reply is on by default
	im.replies++
}

// lifecycle draws a plugin of an installation for a lifecycle step.
func (m *isoModel) lifecycle(rt *rapid.T) (*instModel, string) {
	p := rapid.SampledFrom(plugins).Draw(rt, "plugin")
	return m.pick(rt, p), p
}

func (m *isoModel) disable(rt *rapid.T) {
	im, p := m.lifecycle(rt)
	if im.state[p] != bus.StateActive {
		rt.Skip("not active")
	}
	m.s.publishRevoke(im.in, p, "disable")
	m.s.waitLifecycle(p)
	im.state[p] = bus.StateDisabled
}

func (m *isoModel) enable(rt *rapid.T) {
	im, p := m.lifecycle(rt)
	if im.state[p] != bus.StateDisabled {
		rt.Skip("not disabled")
	}
	b := im.in.b[p]
	b.RuntimeRevision++
	im.in.b[p] = b
	m.s.publishAttach(im.in, p, true)
	m.s.waitLifecycle(p)
	im.state[p] = bus.StateActive
}

// upgrade attaches a newer revision of an active installation: its data
// stays, and the old binding is refused from then on.
func (m *isoModel) upgrade(rt *rapid.T) {
	im, p := m.lifecycle(rt)
	if im.state[p] != bus.StateActive {
		rt.Skip("not active")
	}
	old := im.in.b[p]
	b := old
	b.RuntimeRevision++
	im.in.b[p] = b
	m.s.publishAttach(im.in, p, true)
	m.s.waitLifecycle(p)
	// The previous revision is refused once the runner's in-process view
	// has the attach (it follows the authority bucket by a watch, so it
	// may lag the lifecycle ack by a moment). Probe with reads only.
	im.in.b[p] = old
	defer func() { im.in.b[p] = b }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		switch p {
		case schenotify.Plugin:
			_, err = m.s.scheTool(im.in, m.s.newID(), schenotify.ToolList, map[string]any{})
		case githubkit.Plugin:
			_, err = m.s.ghCmd(im.in, m.s.newID(), "subs")
		case takeover.Plugin:
			err = m.s.page(im.in, m.s.newID(), "GET", "/sessions", map[string]any{}, nil)
		}
		isoInvocations.Add(1)
		if isCode(err, 403) {
			return
		}
		isoLateRefusals.Add(1)
		if testing.Verbose() {
			fmt.Printf("upgrade of %s/%s: old revision still served: %v\n", p, im.in.name, err)
		}
		if time.Now().After(deadline) {
			rt.Fatalf("%s with the superseded revision: got %v, want 403", p, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (m *isoModel) uninstall(rt *rapid.T) {
	if rapid.IntRange(0, 4).Draw(rt, "rarely") != 0 {
		rt.Skip("uninstall is rare")
	}
	im, p := m.lifecycle(rt)
	if im.state[p] == bus.StateRemoved {
		rt.Skip("already removed")
	}
	m.s.publishRevoke(im.in, p, "uninstall")
	m.s.waitLifecycle(p)
	im.state[p] = bus.StateRemoved
	switch p {
	case schenotify.Plugin:
		im.rems = map[string]bool{}
	case githubkit.Plugin:
		im.subs = map[string]bool{}
	case takeover.Plugin:
		im.sessions = map[string]bool{}
	}
}

// checkStep runs after every step.
func (m *isoModel) checkStep(rt *rapid.T) {
	if m.acted == nil {
		return // before the first step
	}
	isoSteps.Add(1)
	now := time.Now()
	// 1. nothing stored outside the scopes acted on lately
	cur := m.s.mustTake()
	recent := map[string]bool{}
	for _, im := range m.every {
		for p, at := range im.acted {
			if now.Sub(at) < settleWindow {
				recent[im.in.scope(p).String()] = true
			}
		}
	}
	for sc, what := range changed(m.last, cur) {
		if !recent[sc] {
			rt.Fatalf("scope %s changed although no step acted on it: %s", sc, what)
		}
	}
	m.last = cur
	// 2. host sends only to the acted scope, keyed with that scope
	sends := m.s.host.Sends()
	for _, c := range sends[m.sends:] {
		want := m.acted.in.scope(takeover.Plugin)
		if c.Scope != want || !strings.Contains(c.IdempotencyKey, want.String()) {
			rt.Fatalf("send to %s key %q after a step on %s", c.Scope, c.IdempotencyKey, want)
		}
	}
	m.sends = len(sends)
	// 3. the acted installation agrees with the model
	m.agree(rt, m.acted)
	// 4. a removed plugin keeps only its tombstone
	for _, p := range plugins {
		if m.acted.state[p] == bus.StateRemoved {
			sc := m.acted.in.scope(p).String()
			if extra := cur.only(sc, bus.Bucket(p)+" "+bus.AuthorityKey(m.acted.in.scope(p))); len(extra) > 0 {
				rt.Fatalf("uninstalled %s still has %v", sc, extra)
			}
		}
	}
}

// agree compares what the services show for im with the model.
func (m *isoModel) agree(rt *rapid.T, im *instModel) {
	if im.state[schenotify.Plugin] == bus.StateActive {
		ids, err := m.s.reminders(im.in)
		if err != nil {
			rt.Fatalf("list_notifications of %s: %v", im.in.name, err)
		}
		if want := sortedKeys(im.rems); !slices.Equal(ids, want) {
			rt.Fatalf("reminders of %s: %v, model %v", im.in.name, ids, want)
		}
	}
	subs, err := m.s.subscriptions(im.in)
	if err != nil {
		rt.Fatalf("subscriptions of %s: %v", im.in.name, err)
	}
	if want := sortedKeys(im.subs); !slices.Equal(subs, want) {
		rt.Fatalf("subscriptions of %s: %v, model %v", im.in.name, subs, want)
	}
	if im.state[takeover.Plugin] == bus.StateActive {
		got, err := m.s.sessions(im.in)
		if err != nil {
			rt.Fatalf("sessions of %s: %v", im.in.name, err)
		}
		if !maps.Equal(got, im.sessions) {
			rt.Fatalf("sessions of %s: %v, model %v", im.in.name, got, im.sessions)
		}
	}
	n := 0
	for _, c := range m.s.host.Sends() {
		if c.Scope == im.in.scope(takeover.Plugin) {
			n++
		}
	}
	if n != im.replies {
		rt.Fatalf("%d sends to %s, model %d replies", n, im.in.name, im.replies)
	}
}

// checkAll compares every installation so far with the model.
func (m *isoModel) checkAll(rt *rapid.T) {
	for _, im := range m.all {
		m.agree(rt, im)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil
	}
	return out
}
