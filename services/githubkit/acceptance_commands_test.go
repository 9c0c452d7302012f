package githubkit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

func oneInstall(t *testing.T, lang string) (*harness, *inst) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig(lang, "token-a", 120))
	h.attach(a, true)
	return h, a
}

func TestAT10Dispatch(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	pairs := [][2]string{
		{"repo octocat/Hello-World", "r octocat/Hello-World"},
		{"repo octocat/Hello-World", "REPO octocat/Hello-World"},
		{"prs octocat/Hello-World", "pulls octocat/Hello-World"},
		{"issue octocat/Hello-World 1347", "pr octocat/Hello-World 1347"},
		{"releases octocat/Hello-World", "rel octocat/Hello-World"},
		{"user octocat", "u octocat"},
		{"search hello", "s hello"},
		{"subs", "subscriptions"},
		{"subs", "list"},
		{"help", "h"},
		{"help", ""},
		{"help", "frobnicate x"},
		{"repo octocat/Hello-World", "gh repo octocat/Hello-World"},
		{"issues octocat/Hello-World closed", "issues  octocat/Hello-World\tclosed\n"},
	}
	for _, p := range pairs {
		if x, y := h.cmd(a, p[0]), h.cmd(a, p[1]); x != y {
			t.Errorf("%q and %q differ:\n%s\n---\n%s", p[0], p[1], x, y)
		}
	}
	// Sub works in any case and through its aliases.
	for i, w := range []string{"Sub", "subscribe", "WATCH"} {
		_ = i
		if got := h.cmd(a, w+" octocat/Hello-World"); !strings.Contains(got, "Subscribed") {
			t.Errorf("%s: %q", w, got)
		}
	}
	for _, w := range []string{"unsubscribe", "UNWATCH"} {
		h.cmd(a, "sub octocat/Hello-World")
		if got := h.cmd(a, w+" octocat/Hello-World"); !strings.Contains(got, "Unsubscribed") {
			t.Errorf("%s: %q", w, got)
		}
	}
	// another command word is not ours
	_, err := h.invoker.Invoke(context.Background(), githubkit.Plugin, wire.EndpointCommand, h.newID(),
		&wire.Request{Binding: a.b, Config: a.config(), Command: &wire.Command{Name: "sche", Session: a.session}})
	if !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("other command: %v", err)
	}
}

func TestAT11Prefix(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	for ft, want := range map[string]string{"！gh x": "！gh repo", "/gh x": "/gh repo", "": "!gh repo"} {
		got := h.cmd(a, "repo", withFullText(ft))
		if !strings.Contains(got, want) {
			t.Errorf("full_text %q: %q lacks %q", ft, got, want)
		}
	}
}

func TestAT13APIURLAndGuard(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	ghe := fakegithub.New(fakegithub.Options{BasePath: "/api/v3"})
	defer ghe.Close()
	a := newInst(t, "a", map[string]any{"language": "en_US", "github_api_url": ghe.URL + "/"})
	h.attach(a, true)
	if got := h.cmd(a, "repo octocat/Hello-World"); !strings.Contains(got, "octocat/Hello-World") {
		t.Fatalf("enterprise: %q", got)
	}
	if r := ghe.Requests(); len(r) != 1 || r[0].Path != "/api/v3/repos/octocat/Hello-World" {
		t.Fatalf("enterprise requests %+v", r)
	}
	// an enterprise link is accepted as a repo argument
	host := ghe.Host()
	if got := h.cmd(a, "repo http://"+host+"/octocat/Hello-World/issues"); !strings.Contains(got, "Stars") {
		t.Fatalf("enterprise link: %q", got)
	}
	bad := newInst(t, "bad", map[string]any{"language": "en_US", "github_api_url": "ftp://x/api"})
	h.attach(bad, true)
	before := len(h.fake.Requests()) + len(ghe.Requests())
	for _, line := range []string{"repo octocat/Hello-World", "sub octocat/Hello-World"} {
		if got := h.cmd(bad, line); !strings.Contains(got, "API address") {
			t.Errorf("invalid URL %s: %q", line, got)
		}
	}
	if after := len(h.fake.Requests()) + len(ghe.Requests()); after != before {
		t.Fatal("a request went out with an invalid URL")
	}
}

func TestAT13GuardAndHTTPFlags(t *testing.T) {
	h := newHarness(t)
	kr, _ := bus.ParseKeyring(h.keyStr)
	svc, err := githubkit.New(githubkit.Config{}, bus.Deps{Conn: h.nc, Keyring: kr})
	if err != nil {
		t.Fatal(err)
	}
	bustest.Start(t, svc)
	tls := fakegithub.New(fakegithub.Options{TLS: true})
	defer tls.Close()
	for name, url := range map[string]string{"http refused": h.fake.URL, "loopback refused": tls.URL} {
		in := newInst(t, strings.ReplaceAll(name, " ", "-"), map[string]any{"language": "en_US", "github_api_url": url})
		h.attach(in, true)
		if got := h.cmd(in, "repo octocat/Hello-World"); !strings.Contains(got, "API address") {
			t.Errorf("%s: %q", name, got)
		}
	}
	if n := len(h.fake.Requests()) + len(tls.Requests()); n != 0 {
		t.Fatalf("%d requests reached a guarded server", n)
	}
}

func TestAT14RenamedRepo(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.fake.AddRepo("o/old", 4242)
	h.addEvents("o/old", 100, "push_full")
	if got := h.cmd(a, "sub o/old"); !strings.Contains(got, "o/old") {
		t.Fatalf("sub: %q", got)
	}
	h.fake.Rename("o/old", "o/new")
	if got := h.cmd(a, "repo o/old"); !strings.Contains(got, "o/new") {
		t.Fatalf("repo after rename: %q", got)
	}
	h.addEvents("o/new", 101, "release_full")
	h.fire(a, "o/old") // the record keeps its key
	r := h.record(a, "o/old")
	if r == nil || r.FullName != "o/new" || *r.RepoID != 4242 || *r.Head != "101" {
		t.Fatalf("record after rename: %+v", r)
	}
	if s := h.sends(); len(s) != 1 || !strings.Contains(s[0].SendMessage().MessageChain[0].Text, "o/new") {
		t.Fatalf("sends %+v", s)
	}
	// sub with the new name finds the same record by repo id
	h.cmd(a, "sub o/new push")
	if h.record(a, "o/new") != nil {
		t.Fatal("a second record was created for the renamed repo")
	}
	if subs := h.cmd(a, "subs"); strings.Count(subs, "o/new") != 1 {
		t.Fatalf("subs %q", subs)
	}
}

func TestAT15NetworkErrorsBothLanguages(t *testing.T) {
	for lang, want := range map[string]string{"en_US": "Could not reach GitHub", "zh_Hans": "无法连接 GitHub"} {
		h := newHarness(t)
		h.start(githubkit.Config{GitHubTimeout: 200 * time.Millisecond}, nil)
		a := newInst(t, "a", h.baseConfig(lang, "t", 120))
		h.attach(a, true)
		h.fake.Inject(fakegithub.Fault{Path: "/repos/", Hold: make(chan struct{}), Times: 1}) // never answered: the timeout ends it
		if got := h.cmd(a, "repo octocat/Hello-World"); !strings.Contains(got, want) {
			t.Errorf("%s timeout: %q", lang, got)
		}
		h.fake.Inject(fakegithub.Fault{Reset: true, Times: 1})
		if got := h.cmd(a, "repo octocat/Hello-World"); !strings.Contains(got, want) {
			t.Errorf("%s reset: %q", lang, got)
		}
		h.fake.Inject(fakegithub.Fault{Reset: true, Times: 1})
		res, err := h.tool(a, githubkit.ToolRepo, map[string]any{"repo": "octocat/Hello-World"})
		if err != nil || !strings.Contains(string(res), `"code":"network"`) {
			t.Errorf("%s tool: %s %v", lang, res, err)
		}
	}
}

func TestAT16AT17AT18Inputs(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	valid := map[string]string{
		"https://github.com/octocat/Hello-World/issues/5": "/repos/octocat/Hello-World",
		"octocat/Hello-World.git":                         "/repos/octocat/Hello-World",
		"www.github.com/octocat/Hello-World":              "/repos/octocat/Hello-World",
		"github.com/octocat/Hello-World":                  "/repos/octocat/Hello-World",
	}
	for in, path := range valid {
		h.fake.ResetRequests()
		h.cmd(a, "repo "+in)
		if r := h.fake.Requests(); len(r) != 1 || r[0].Path != path {
			t.Errorf("%s: %+v", in, r)
		}
	}
	for _, in := range []string{"https://gitlab.com/o/r", "o/..", "o/r#x", "o/r?x", strings.Repeat("a", 40) + "/r"} {
		h.fake.ResetRequests()
		if got := h.cmd(a, "repo "+in); !strings.Contains(got, "is not a repository") {
			t.Errorf("%s: %q", in, got)
		}
		if n := len(h.fake.Requests()); n != 0 {
			t.Errorf("%s made %d requests", in, n)
		}
	}
	for _, n := range []string{"5", "#5"} {
		h.fake.ResetRequests()
		h.cmd(a, "issue octocat/Hello-World "+n)
		if r := h.fake.Requests(); len(r) != 1 || r[0].Path != "/repos/octocat/Hello-World/issues/5" {
			t.Errorf("%s: %+v", n, r)
		}
	}
	for _, n := range []string{"0", "-1", "+5", "5a", "1_0", "٥"} {
		h.fake.ResetRequests()
		if got := h.cmd(a, "issue octocat/Hello-World "+n); !strings.Contains(got, "positive whole number") {
			t.Errorf("%s: %q", n, got)
		}
		if len(h.fake.Requests()) != 0 {
			t.Errorf("%s made a request", n)
		}
	}
	h.fake.ResetRequests()
	h.cmd(a, "user @octocat")
	h.cmd(a, "user a/b")
	if r := h.fake.Requests(); len(r) != 2 || r[0].Path != "/users/octocat" || r[1].Path != "/users/a%2Fb" {
		t.Errorf("users %+v", r)
	}
}

func TestAT20AT21Identity(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	h.cmd(a, "sub OCTOCAT/hello-world")
	other := *a
	other.session.LauncherID = "session-2"
	h.cmd(&other, "sub octocat/Hello-World")
	r := h.record(a, "octocat/hello-world")
	if r == nil || len(r.Subscribers) != 2 || r.FullName != "octocat/Hello-World" {
		t.Fatalf("record %+v", r)
	}
	if got := h.cmd(a, "unsub octocat/HELLO-world"); !strings.Contains(got, "Unsubscribed") {
		t.Fatalf("unsub: %q", got)
	}
	// two bots in one group
	bot2 := *a
	bot2.session.BotUUID = "bot-2"
	h.cmd(a, "sub octocat/Hello-World")
	h.cmd(&bot2, "sub octocat/Hello-World release")
	h.cmd(&other, "unsub octocat/Hello-World")
	if r := h.record(a, "octocat/Hello-World"); len(r.Subscribers) != 2 {
		t.Fatalf("subscribers %+v", r.Subscribers)
	}
	h.cmd(a, "unsub octocat/Hello-World")
	if subs := h.cmd(&bot2, "subs"); !strings.Contains(subs, "octocat/Hello-World (release)") {
		t.Fatalf("bot-2 subs: %q", subs)
	}
	h.addEvents("octocat/Hello-World", 100, "release_full")
	// first poll primes? no: the record was primed at sub time on an empty feed ("0")
	h.fire(a, "octocat/Hello-World")
	s := h.sends()
	if len(s) != 1 || s[0].SendMessage().BotUUID != "bot-2" {
		t.Fatalf("sends %+v", s)
	}
	// the last unsub removes the record and its schedule
	h.cmd(&bot2, "unsub octocat/Hello-World")
	if h.record(a, "octocat/Hello-World") != nil || h.schedule(a, "octocat/Hello-World") != "" {
		t.Fatal("record or schedule survived the last unsub")
	}
	if got := h.cmd(a, "unsub octocat/Hello-World"); !strings.Contains(got, "not subscribed") {
		t.Fatalf("unsub again: %q", got)
	}
}

func TestAT22Filters(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	got := h.cmd(a, "sub octocat/Hello-World push bogus")
	if !strings.Contains(got, "bogus") || !strings.Contains(got, "review") || h.record(a, "octocat/Hello-World") != nil {
		t.Fatalf("bad filter: %q", got)
	}
	got = h.cmd(a, "sub octocat/Hello-World commits PR tag branch create delete review comment")
	if !strings.Contains(got, "push, pull_request, tag, branch, create, delete, review, issue_comment") {
		t.Fatalf("aliases: %q", got)
	}
}

func TestAT23Caps(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	for i := range events.MaxReposPerInst {
		name := fmt.Sprintf("o/r%d", i)
		h.fake.AddRepo(name, 0)
		if got := h.cmd(a, "sub "+name); !strings.Contains(got, "Subscribed") {
			t.Fatalf("%s: %q", name, got)
		}
	}
	h.fake.AddRepo("o/r50", 0)
	if got := h.cmd(a, "sub o/r50"); !strings.Contains(got, "maximum") || h.record(a, "o/r50") != nil {
		t.Fatalf("51st repo: %q", got)
	}
	// 20 subscribers on one repo
	for i := 1; i < events.MaxSubscribersRepo; i++ {
		c := *a
		c.session.LauncherID = wire.ID(fmt.Sprintf("chat-%d", i))
		h.cmd(&c, "sub o/r0")
	}
	c := *a
	c.session.LauncherID = "chat-21"
	if got := h.cmd(&c, "sub o/r0"); !strings.Contains(got, "20 subscribed chats") {
		t.Fatalf("21st subscriber: %q", got)
	}
	if r := h.record(a, "o/r0"); len(r.Subscribers) != 20 {
		t.Fatalf("%d subscribers", len(r.Subscribers))
	}
	if got := h.cmd(a, "sub o/r0 push"); !strings.Contains(got, "Subscribed") {
		t.Fatalf("re-subscribe at the cap: %q", got)
	}
}

func TestAT24Admin(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "t", 120))
	a.cfg["subscribe_requires_admin"] = "true"
	h.attach(a, true)
	h.fake.ResetRequests()
	for _, line := range []string{"sub octocat/Hello-World", "unsub octocat/Hello-World"} {
		if got := h.cmd(a, line, withPrivilege(1)); !strings.Contains(got, "Only bot admins") {
			t.Errorf("%s: %q", line, got)
		}
	}
	if len(h.fake.Requests()) != 0 || h.record(a, "octocat/Hello-World") != nil {
		t.Fatal("admin check did I/O")
	}
	if got := h.cmd(a, "sub octocat/Hello-World", withPrivilege(2)); !strings.Contains(got, "Subscribed") {
		t.Fatalf("admin sub: %q", got)
	}
	if got := h.cmd(a, "subs", withPrivilege(1)); !strings.Contains(got, "octocat/Hello-World") {
		t.Fatalf("subs: %q", got)
	}
	if got := h.cmd(a, "help", withPrivilege(1)); !strings.Contains(got, "only bot admins") {
		t.Fatalf("help: %q", got)
	}
}

func TestAT25NoBot(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	s := a.session
	s.BotUUID = ""
	for _, line := range []string{"sub octocat/Hello-World", "unsub octocat/Hello-World", "subs"} {
		if got := h.cmd(a, line, withSession(s)); !strings.Contains(got, "no bot identity") {
			t.Errorf("%s: %q", line, got)
		}
	}
	if h.record(a, "octocat/Hello-World") != nil {
		t.Fatal("state changed")
	}
}

func TestAT26RetriedInvocation(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "t", 120))
	h.attach(a, true)
	id := h.newID()
	first, err := h.cmdID(a, id, "sub octocat/Hello-World")
	if err != nil {
		t.Fatal(err)
	}
	rev := h.recordRev(a, "octocat/Hello-World")
	again, err := h.cmdID(a, id, "sub octocat/Hello-World")
	if err != nil || again != first || h.recordRev(a, "octocat/Hello-World") != rev {
		t.Fatalf("retry: %q vs %q, %v", again, first, err)
	}
	// a retry while the first attempt runs gets 409 in_progress: GitHub
	// holds the first attempt's answer until the retry was answered
	hold := make(chan struct{})
	h.fake.Inject(fakegithub.Fault{Path: "/repos/octocat/Hello-World", Hold: hold, Times: 1})
	id2 := h.newID()
	errc := make(chan error, 1)
	go func() { _, err := h.cmdID(a, id2, "sub octocat/Hello-World push"); errc <- err }()
	bustest.Eventually(h.t, "first attempt running", func() bool {
		return len(h.keys(bus.DedupeBucket(githubkit.Plugin))) >= 2
	})
	_, err = h.cmdID(a, id2, "sub octocat/Hello-World push")
	close(hold)
	if !errors.Is(err, wire.ErrInProgress) {
		t.Fatalf("concurrent retry: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// a retry after a 503 runs again: make the schedule publish fail by
	// removing the stream, then restore it.
	h.stopAll()
	if err := h.js.DeleteStream(context.Background(), githubkit.StreamName); err != nil {
		t.Fatal(err)
	}
	r := h.start(githubkit.Config{}, nil)
	_ = r
	if err := h.js.DeleteStream(context.Background(), githubkit.StreamName); err != nil {
		t.Fatal(err)
	}
	id3 := h.newID()
	if _, err := h.cmdID(a, id3, "sub octocat/Hello-World"); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("without the stream: %v", err)
	}
	h.stopAll()
	h.start(githubkit.Config{}, nil)
	if got, err := h.cmdID(a, id3, "sub octocat/Hello-World"); err != nil || !strings.Contains(got, "Subscribed") {
		t.Fatalf("retry after 503: %q %v", got, err)
	}
	if h.schedule(a, "octocat/Hello-World") == "" {
		t.Fatal("the retry did not publish the schedule")
	}
}

// TestRequestShapes checks each subcommand's GitHub endpoint, query and
// headers (spec §3.3, §3.5).
func TestRequestShapes(t *testing.T) {
	h, a := oneInstall(t, "en_US")
	cases := []struct{ line, path, query string }{
		{"repo octocat/Hello-World", "/repos/octocat/Hello-World", ""},
		{"issues octocat/Hello-World CLOSED", "/repos/octocat/Hello-World/issues", "direction=desc&per_page=50&sort=updated&state=closed"},
		{"prs octocat/Hello-World bogus", "/repos/octocat/Hello-World/pulls", "direction=desc&per_page=10&sort=updated&state=open"},
		{"issue octocat/Hello-World 1347", "/repos/octocat/Hello-World/issues/1347", ""},
		{"releases octocat/Hello-World", "/repos/octocat/Hello-World/releases", "per_page=5"},
		{"user octocat", "/users/octocat", ""},
		{"search  nats   language:go ", "/search/repositories", "order=desc&per_page=8&q=nats+language%3Ago&sort=stars"},
	}
	for _, c := range cases {
		h.fake.ResetRequests()
		h.cmd(a, c.line)
		r := h.fake.Requests()
		if len(r) != 1 || r[0].Path != c.path || r[0].Query.Encode() != c.query {
			t.Errorf("%s: %+v", c.line, r)
			continue
		}
		if r[0].UserAgent != ghclient.UserAgent || r[0].APIVersion != "2022-11-28" || r[0].Authorization != "Bearer token-a" {
			t.Errorf("%s: headers %+v", c.line, r[0])
		}
	}
}
