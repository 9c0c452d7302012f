package githubkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

func TestAT40Import(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	ctx := context.Background()
	// corrupt JSON, a missing authority and exceeded caps write nothing
	before := len(h.keys(bus.Bucket(githubkit.Plugin)))
	if _, err := githubkit.Import(ctx, h.js, githubkit.ImportOptions{Scope: a.sc, Doc: []byte(`{"o/r":`)}); !errors.Is(err, githubkit.ErrImport) {
		t.Fatalf("corrupt: %v", err)
	}
	nobody := newInst(t, "nobody", nil)
	if _, err := githubkit.Import(ctx, h.js, githubkit.ImportOptions{Scope: nobody.sc, Doc: []byte(originalDoc)}); !errors.Is(err, githubkit.ErrImport) {
		t.Fatalf("no authority: %v", err)
	}
	var big strings.Builder
	big.WriteString("{")
	for i := range 51 {
		if i > 0 {
			big.WriteString(",")
		}
		big.WriteString(`"o/r` + strings.Repeat("x", i) + `":{"subscribers":{},"last_event_id":null}`)
	}
	big.WriteString("}")
	if _, err := githubkit.Import(ctx, h.js, githubkit.ImportOptions{Scope: a.sc, Doc: []byte(big.String())}); !errors.Is(err, githubkit.ErrImport) || !strings.Contains(err.Error(), "51") {
		t.Fatalf("caps: %v", err)
	}
	sum, err := githubkit.Import(ctx, h.js, githubkit.ImportOptions{Scope: a.sc, Doc: []byte(originalDoc), DryRun: true})
	if err != nil || sum.ReposCreated != 2 {
		t.Fatalf("dry run: %+v %v", sum, err)
	}
	if n := len(h.keys(bus.Bucket(githubkit.Plugin))); n != before {
		t.Fatalf("refusals and the dry run wrote: %d -> %d keys", before, n)
	}
	sum, err = githubkit.Import(ctx, h.js, githubkit.ImportOptions{Scope: a.sc, Doc: []byte(originalDoc)})
	if err != nil || sum.ReposCreated != 2 || sum.SubscribersAdded != 3 || sum.ReposSkipped != 1 {
		t.Fatalf("import: %+v %v", sum, err)
	}
	r := h.record(a, "o/r")
	if r == nil || r.FullName != "O/R" || r.RepoID != nil || *r.Head != "99999999999" || len(r.Subscribers) != 2 {
		t.Fatalf("o/r record %+v", r)
	}
	if h.schedule(a, "o/r") != "@every 2m0s" || h.schedule(a, "octocat/Hello-World") == "" {
		t.Fatal("schedules not armed")
	}
	rev := h.recordRev(a, "o/r")
	st, _ := h.js.Stream(ctx, githubkit.StreamName)
	info1, _ := st.Info(ctx)
	sum, err = githubkit.Import(ctx, h.js, githubkit.ImportOptions{Scope: a.sc, Doc: []byte(originalDoc)})
	info2, _ := st.Info(ctx)
	if err != nil || sum.ReposCreated != 0 || sum.SubscribersAdded != 0 || sum.SubscribersPresent != 3 ||
		h.recordRev(a, "o/r") != rev || info1.State.LastSeq != info2.State.LastSeq {
		t.Fatalf("second run changed something: %+v %v", sum, err)
	}
	// the imported subscriptions work: subs lists them for their chat
	chat := *a
	chat.session.BotUUID, chat.session.LauncherID = "bot-1", "123456"
	if subs := h.cmd(&chat, "subs"); !strings.Contains(subs, "O/R (push, pull_request, release)") {
		t.Fatalf("subs %q", subs)
	}
}

// TestAT39Replicas runs two instances on one server and on a three-node
// cluster: each fire is handled once and nothing is sent twice.
func TestAT39Replicas(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		h := newHarness(t)
		replicas(t, h)
	})
	t.Run("cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("cluster")
		}
		c := bustest.NewCluster(t, 3)
		nc := c.Conn(t)
		js := c.WaitLeader(t)
		_ = js
		h := newHarnessOn(t, nil, nc)
		ctx, cancel := context.WithTimeout(context.Background(), bustest.WaitTimeout)
		defer cancel()
		if _, err := bus.EnsureLifecycleStream(ctx, h.js, wire.Subjects{}, 3); err != nil {
			t.Fatal(err)
		}
		replicas(t, h)
	})
}

func replicas(t *testing.T, h *harness) {
	first := h.start(githubkit.Config{}, nil)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "t", 120))
	h.attach(a, true)
	var repos []string
	for i := range 4 {
		name := "o/rep" + string(rune('a'+i))
		h.fake.AddRepo(name, 0)
		h.addEvents(name, 100, "watch")
		h.cmd(a, "sub "+name)
		repos = append(repos, name)
	}
	for i := range 3 {
		for _, name := range repos {
			h.addEvents(name, int64(101+i), "release_full")
			h.fire(a, name)
		}
	}
	sends := h.sends()
	if len(sends) != 12 {
		t.Fatalf("%d sends, want 12", len(sends))
	}
	seen := map[string]bool{}
	for _, s := range sends {
		if seen[s.IdempotencyKey] {
			t.Fatalf("duplicate send %s", s.IdempotencyKey)
		}
		seen[s.IdempotencyKey] = true
	}
	// the claim-conflict path: a fire while another replica holds the claim
	h.stop(first)
	held := make(chan struct{})
	release := make(chan struct{})
	h.stopAll()
	h.start(githubkit.Config{}, func(s *githubkit.Service) {
		s.SetAfterClaim(func(ctx context.Context, _ bindingScope, _ string) {
			select {
			case held <- struct{}{}:
				<-release
			default:
			}
		})
	})
	h.start(githubkit.Config{}, nil)
	h.addEvents(repos[0], 200, "watch")
	if _, err := h.js.Publish(context.Background(), h.pollSubject(a.sc, repos[0]), []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(bustest.WaitTimeout):
		t.Fatal("no claim")
	}
	// a second fire now finds the claim and acks without sending
	h.fire(a, repos[0])
	close(release)
	bustest.Eventually(h.t, "claimed poll done", func() bool { return len(h.sends()) == 13 })
	// the poll clears its claim in its last write, after the send: wait
	// for that write, not only for the send
	bustest.Eventually(h.t, "claim released", func() bool { return h.record(a, repos[0]).Poll.ClaimUntil == nil })
}

// TestAT43SelfResume restarts the service and the embedded server; a real
// @every schedule then fires and polls with no invocation.
func TestAT43SelfResume(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{MinPollInterval: 1}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "t", 1))
	h.attach(a, true)
	h.fake.SetPollInterval(hw, 1)
	h.addEvents(hw, 100, "watch")
	h.cmd(a, "sub "+hw)
	h.stopAll()
	h.srv.Restart(t)
	bustest.Eventually(h.t, "reconnected", h.nc.IsConnected)
	h.addEvents(hw, 101, "release_full")
	h.start(githubkit.Config{MinPollInterval: 1}, nil)
	deadline := time.Now().Add(bustest.WaitTimeout)
	for len(h.sends()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no push from the schedule; schedule %q, polls %v, github %d, logs %s", h.schedule(a, hw),
				h.metric("githubkit_polls_total", nil), len(h.fake.Requests()), h.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAT44Tools(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	cases := []struct {
		name   string
		tool   string
		params any
	}{
		{"repo", githubkit.ToolRepo, map[string]any{"repo": "https://github.com/octocat/Hello-World"}},
		{"issue", githubkit.ToolIssue, map[string]any{"repo": "octocat/Hello-World", "number": 1347}},
		{"issue_pr_merged", githubkit.ToolIssue, map[string]any{"repo": "octocat/Hello-World", "number": "1290"}},
		{"search", githubkit.ToolSearch, map[string]any{"query": "hello", "limit": 2}},
		{"search_default", githubkit.ToolSearch, map[string]any{"query": "hello"}},
		{"bad_repo", githubkit.ToolRepo, map[string]any{"repo": "nope"}},
		{"bad_number", githubkit.ToolIssue, map[string]any{"repo": "o/r", "number": 0}},
		{"bad_limit", githubkit.ToolSearch, map[string]any{"query": "x", "limit": 11}},
		{"bad_query", githubkit.ToolSearch, map[string]any{"query": strings.Repeat("q", 257)}},
		{"not_found", githubkit.ToolRepo, map[string]any{"repo": "octocat/missing"}},
	}
	for _, c := range cases {
		res, err := h.tool(a, c.tool, c.params)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var pretty map[string]any
		if err := json.Unmarshal(res, &pretty); err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(pretty, "", "  ")
		checkToolGolden(t, c.name, string(b)+"\n")
		if len(res) > githubkit.MaxToolResult || strings.Contains(string(res), "null") {
			t.Errorf("%s: %d bytes or null", c.name, len(res))
		}
	}
	h.fake.Inject(fakegithub.Fault{Status: 429, Header: mkHdr("Retry-After", "30"), Times: 1})
	res, _ := h.tool(a, githubkit.ToolRepo, map[string]any{"repo": "octocat/Hello-World"})
	if !strings.Contains(string(res), `"retry_after_s":30`) || !strings.Contains(string(res), `"code":"rate_limited"`) {
		t.Fatalf("rate limited: %s", res)
	}
	for _, r := range h.fake.Requests() {
		if r.Authorization != "Bearer token-a" {
			t.Fatalf("tool request with %q", r.Authorization)
		}
	}
	if _, err := h.tool(a, "github_nope", nil); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("unknown tool: %v", err)
	}
}

func checkToolGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", "tools", name+".json")
	if githubkit.UpdateGoldens() {
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s:\n%s\nwant\n%s", path, got, want)
	}
}

// TestAT46Traces checks one trace from host publish to host send, the
// poll span's link, and that no secret or text is an attribute.
func TestAT46Traces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(rec))
	h := newHarness(t)
	h.tp = tp
	h.invoker = bustest.NewInvoker(t, bus.NewInvoker(h.nc, wire.Subjects{}, tp), h.js, h.runners)
	h.start(githubkit.Config{MinPollInterval: 1}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "ghp_SecretTok", 1))
	h.attach(a, true)
	h.fake.SetPollInterval(hw, 1)
	h.addEvents(hw, 100, "watch")
	h.cmd(a, "sub "+hw)
	h.cmd(a, "search secret words")
	h.addEvents(hw, 101, "release_full")
	bustest.Eventually(h.t, "a push from the real schedule", func() bool { return len(h.sends()) > 0 })
	bustest.Eventually(h.t, "poll span", func() bool {
		for _, s := range rec.Ended() {
			if s.Name() == "githubkit.poll" {
				return true
			}
		}
		return false
	})
	spans := rec.Ended()
	var cmd, gh, poll, send, pub bool
	var pollLinks []string
	traceOf := map[string]int{}
	for _, s := range spans {
		traceOf[s.SpanContext().TraceID().String()]++
		switch {
		case s.Name() == "githubkit.command":
			cmd = true
		case strings.HasPrefix(s.Name(), "GET /repos/{owner}/{repo}"):
			gh = true
		case s.Name() == "githubkit.poll":
			poll = len(s.Links()) > 0
			for _, l := range s.Links() {
				pollLinks = append(pollLinks, l.SpanContext.TraceID().String())
			}
		case strings.Contains(s.Name(), "send_message"):
			send = true
		case strings.Contains(s.Name(), "plugin.githubkit.command"):
			pub = true
		}
		for _, kv := range s.Attributes() {
			v := kv.Value.String()
			if strings.Contains(v, "SecretTok") || strings.Contains(v, "secret words") || strings.Contains(v, "secret+words") || strings.Contains(v, "published the release") {
				t.Errorf("span %s attribute %s = %q", s.Name(), kv.Key, v)
			}
		}
	}
	if !cmd || !gh || !poll || !send || !pub {
		t.Fatalf("spans: command %v github %v poll-linked %v send %v publish %v", cmd, gh, poll, send, pub)
	}
	// the sub's trace holds the host publish, the command and the GitHub call
	var subTrace string
	for _, s := range spans {
		if s.Name() == "githubkit.command" {
			subTrace = s.SpanContext().TraceID().String()
			break
		}
	}
	if traceOf[subTrace] < 3 {
		t.Fatalf("the sub's trace has %d spans", traceOf[subTrace])
	}
	if !slices.Contains(pollLinks, subTrace) {
		t.Fatalf("poll links %v, want the sub's trace %s", pollLinks, subTrace)
	}
}

func TestAT47ConfigViaAttach(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.addEvents(hw, 100, "watch")
	h.cmd(a, "sub "+hw)
	a.cfg["poll_interval"] = 600
	a.cfg["github_token"] = "token-new"
	a.cfg["language"] = "zh_Hans"
	a.b.RuntimeRevision = 2
	h.attach(a, true)
	if s := h.schedule(a, hw); s != "@every 10m0s" {
		t.Fatalf("schedule %q", s)
	}
	h.addEvents(hw, 101, "release_full")
	h.fake.ResetRequests()
	h.fire(a, hw)
	if r := eventsReqs(h); len(r) != 1 || r[0].Authorization != "Bearer token-new" {
		t.Fatalf("requests %+v", r)
	}
	if s := h.sends(); len(s) != 1 || !strings.Contains(s[0].SendMessage().MessageChain[0].Text, "发布了版本") {
		t.Fatalf("sends %+v", s)
	}
}
