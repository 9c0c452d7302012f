package ghclient_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

func newGH(opts ghclient.HTTPOptions) *ghclient.GitHub {
	return ghclient.NewGitHub(ghclient.NewHTTPClient(opts), opts.Timeout, nil)
}

func privateGH() *ghclient.GitHub {
	return newGH(ghclient.HTTPOptions{AllowPrivateNetworks: true})
}

var octo = ghclient.Repo{Owner: "octocat", Name: "Hello-World"}

func apiErr(t *testing.T, err error) *ghclient.APIError {
	t.Helper()
	var ae *ghclient.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not an *APIError", err)
	}
	return ae
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// TestErrorMapping is AT-19.
func TestErrorMapping(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name      string
		fault     fakegithub.Fault
		code      string
		status    int
		msg       string
		permanent bool
		wait      time.Duration
	}{
		{"404", fakegithub.Fault{Status: 404}, ghclient.CodeNotFound, 404, "Not Found", true, 0},
		{"410", fakegithub.Fault{Status: 410, Body: `{"message":"Repository access blocked"}`}, ghclient.CodeNotFound, 410, "Repository access blocked", true, 0},
		{"401", fakegithub.Fault{Status: 401, Body: `{"message":"Bad credentials"}`}, ghclient.CodeUnauthorized, 401, "Bad credentials", true, 0},
		{"403", fakegithub.Fault{Status: 403, Body: `{"message":"Resource not accessible by integration"}`}, ghclient.CodeForbidden, 403, "Resource not accessible by integration", true, 0},
		{"403 remaining 0", fakegithub.Fault{Status: 403, Header: hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "4102444800"), Body: `{"message":"API rate limit exceeded for 1.2.3.4."}`}, ghclient.CodeRateLimited, 403, "", false, time.Hour},
		{"429 retry-after", fakegithub.Fault{Status: 429, Header: hdr("Retry-After", "120")}, ghclient.CodeRateLimited, 429, "Too Many Requests", false, 120 * time.Second},
		{"403 secondary", fakegithub.Fault{Status: 403, Body: `{"message":"You have been blocked","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`}, ghclient.CodeRateLimited, 403, "You have been blocked", false, 60 * time.Second},
		{"403 message", fakegithub.Fault{Status: 403, Body: `{"message":"secondary Rate Limit hit"}`}, ghclient.CodeRateLimited, 403, "secondary Rate Limit hit", false, 60 * time.Second},
		{"422", fakegithub.Fault{Status: 422, Body: `{"message":"Validation Failed\nsecond line"}`}, ghclient.CodeUpstream, 422, "Validation Failed", false, 0},
		{"500", fakegithub.Fault{Status: 500, Body: `{"message":"` + long + `"}`}, ghclient.CodeUpstream, 500, strings.Repeat("x", 200) + "…", false, 0},
		{"451", fakegithub.Fault{Status: 451}, ghclient.CodeUpstream, 451, "Unavailable For Legal Reasons", true, 0},
		{"html", fakegithub.Fault{Status: 502, Header: hdr("Content-Type", "text/html"), Body: "<html><body>oops</body></html>"}, ghclient.CodeUpstream, 502, "Bad Gateway", false, 0},
	}
	gh := privateGH()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakegithub.New(fakegithub.Options{})
			defer fake.Close()
			fake.Inject(tc.fault)
			_, err := gh.Repo(context.Background(), ghclient.Target{BaseURL: fake.URL, Token: "t"}, octo)
			ae := apiErr(t, err)
			if ae.Code != tc.code || ae.Status != tc.status || ae.Permanent() != tc.permanent {
				t.Fatalf("got code=%s status=%d permanent=%v, want %s %d %v", ae.Code, ae.Status, ae.Permanent(), tc.code, tc.status, tc.permanent)
			}
			if tc.msg != "" && ae.Message != tc.msg {
				t.Fatalf("message %q, want %q", ae.Message, tc.msg)
			}
			if utf8.RuneCountInString(ae.Message) > 201 || strings.Contains(ae.Message, "<html") {
				t.Fatalf("message %q dumps the body", ae.Message)
			}
			if tc.wait != 0 {
				if tc.wait == time.Hour { // reset far in the future
					if ae.Wait < time.Hour {
						t.Fatalf("wait %v", ae.Wait)
					}
				} else if ae.Wait != tc.wait {
					t.Fatalf("wait %v, want %v", ae.Wait, tc.wait)
				}
			}
		})
	}
}

// TestNetworkErrors is AT-15 at the access layer.
func TestNetworkErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // connection refused from now on
	gh := privateGH()
	_, err = gh.Repo(context.Background(), ghclient.Target{BaseURL: "http://" + addr}, octo)
	if ae := apiErr(t, err); ae.Code != ghclient.CodeNetwork || ae.Permanent() {
		t.Fatalf("refused: %+v", ae)
	}

	fake := fakegithub.New(fakegithub.Options{})
	defer fake.Close()
	fake.Inject(fakegithub.Fault{Delay: time.Minute})
	short := newGH(ghclient.HTTPOptions{AllowPrivateNetworks: true, Timeout: 50 * time.Millisecond})
	_, err = short.Repo(context.Background(), ghclient.Target{BaseURL: fake.URL}, octo)
	if ae := apiErr(t, err); ae.Code != ghclient.CodeNetwork {
		t.Fatalf("timeout: %+v", ae)
	}
	fake.ClearFaults()
	fake.Inject(fakegithub.Fault{Reset: true})
	_, err = gh.Repo(context.Background(), ghclient.Target{BaseURL: fake.URL}, octo)
	if ae := apiErr(t, err); ae.Code != ghclient.CodeNetwork {
		t.Fatalf("reset: %+v", ae)
	}
	fake.ClearFaults()
	fake.Inject(fakegithub.Fault{Oversize: true})
	_, err = gh.Repo(context.Background(), ghclient.Target{BaseURL: fake.URL}, octo)
	if ae := apiErr(t, err); ae.Code != ghclient.CodeNetwork || !errors.Is(err, ghclient.ErrBodyTooLarge) {
		t.Fatalf("oversize: %+v %v", ae, err)
	}
}

// TestTokenPerRequest checks the Authorization header and the User-Agent.
func TestTokenPerRequest(t *testing.T) {
	fake := fakegithub.New(fakegithub.Options{})
	defer fake.Close()
	gh := privateGH()
	ctx := context.Background()
	if _, err := gh.Repo(ctx, ghclient.Target{BaseURL: fake.URL, Token: "token-b"}, octo); err != nil {
		t.Fatal(err)
	}
	if _, err := gh.Repo(ctx, ghclient.Target{BaseURL: fake.URL}, octo); err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 || reqs[0].Authorization != "Bearer token-b" || reqs[1].Authorization != "" {
		t.Fatalf("requests %+v", reqs)
	}
}

// TestEnterpriseBaseAndGuard is AT-13 at the access layer.
func TestEnterpriseBaseAndGuard(t *testing.T) {
	fake := fakegithub.New(fakegithub.Options{BasePath: "/api/v3"})
	defer fake.Close()
	if _, err := privateGH().Repo(context.Background(), ghclient.Target{BaseURL: fake.URL}, octo); err != nil {
		t.Fatal(err)
	}
	if r := fake.Requests(); len(r) != 1 || r[0].Path != "/api/v3/repos/octocat/Hello-World" {
		t.Fatalf("requests %+v", r)
	}
	guarded := newGH(ghclient.HTTPOptions{})
	_, err := guarded.Repo(context.Background(), ghclient.Target{BaseURL: fake.URL}, octo)
	if ae := apiErr(t, err); ae.Code != ghclient.CodeConfig || !errors.Is(err, ghclient.ErrBlockedAddress) {
		t.Fatalf("guard: %+v %v", ae, err)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("guarded request reached the server: %d", n)
	}
}

func TestBlockedAddresses(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1", "169.254.169.254",
		"::1", "fc00::1", "fe80::1", "0.0.0.0", "::", "224.0.0.1", "ff02::1", "::ffff:127.0.0.1"} {
		if !ghclient.RefusedAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s not blocked", a)
		}
	}
	for _, a := range []string{"140.82.112.6", "8.8.8.8", "2606:50c0:8000::154", "100.128.0.1"} {
		if ghclient.RefusedAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s blocked", a)
		}
	}
}

// TestRedirects is AT-14 at the access layer.
func TestRedirects(t *testing.T) {
	fake := fakegithub.New(fakegithub.Options{})
	defer fake.Close()
	fake.AddRepo("o/old", 77)
	fake.Rename("o/old", "o/new")
	gh := privateGH()
	rp, err := gh.Repo(context.Background(), ghclient.Target{BaseURL: fake.URL, Token: "t"}, ghclient.Repo{Owner: "o", Name: "old"})
	if err != nil || rp.GetFullName() != "o/new" {
		t.Fatalf("rename: %v %v", rp.GetFullName(), err)
	}
	page, err := gh.Events(context.Background(), ghclient.Target{BaseURL: fake.URL, Token: "t"}, "o/old", 1, 100, "")
	if err != nil || page.NotModified {
		t.Fatalf("events after rename: %+v %v", page, err)
	}

	other := fakegithub.New(fakegithub.Options{})
	defer other.Close()
	fake.Inject(fakegithub.Fault{Path: "/repos/octocat", RedirectTo: other.URL + "/repos/octocat/Hello-World", Status: 301})
	_, err = gh.Repo(context.Background(), ghclient.Target{BaseURL: fake.URL, Token: "secret"}, octo)
	ae := apiErr(t, err)
	if ae.Code != ghclient.CodeUpstream || !ae.Permanent() || !errors.Is(err, ghclient.ErrOffHostRedirect) {
		t.Fatalf("off-host: %+v", ae)
	}
	if n := len(other.Requests()); n != 0 {
		t.Fatalf("the other host got %d requests", n)
	}
	// A redirect loop stops after five hops.
	fake.ClearFaults()
	fake.ResetRequests()
	fake.Inject(fakegithub.Fault{Path: "/repos/octocat", RedirectTo: fake.URL + "/repos/octocat/Hello-World"})
	_, err = gh.Repo(context.Background(), ghclient.Target{BaseURL: fake.URL}, octo)
	if !errors.Is(err, ghclient.ErrOffHostRedirect) {
		t.Fatalf("loop: %v", err)
	}
	if n := fake.Count(fake.PathPrefix("/repos/octocat/Hello-World")); n != 6 {
		t.Fatalf("loop made %d requests, want 6", n)
	}
}

// TestUserPathEscape is AT-18 at the access layer.
func TestUserPathEscape(t *testing.T) {
	fake := fakegithub.New(fakegithub.Options{})
	defer fake.Close()
	gh := privateGH()
	_, _ = gh.User(context.Background(), ghclient.Target{BaseURL: fake.URL}, "a/b")
	if _, err := gh.User(context.Background(), ghclient.Target{BaseURL: fake.URL}, "octocat"); err != nil {
		t.Fatal(err)
	}
	r := fake.Requests()
	if len(r) != 2 || r[0].Path != "/users/a%2Fb" || r[1].Path != "/users/octocat" {
		t.Fatalf("paths %+v", r)
	}
}

func TestEventsETagAndPages(t *testing.T) {
	fake := fakegithub.New(fakegithub.Options{})
	defer fake.Close()
	fake.SetPollInterval(fakegithub.DefaultRepo, 300)
	for i := range 250 {
		fake.AddEvents(fakegithub.DefaultRepo, fakegithub.Event("watch", int64(1000+i)))
	}
	gh := privateGH()
	tg := ghclient.Target{BaseURL: fake.URL}
	p1, err := gh.Events(context.Background(), tg, fakegithub.DefaultRepo, 1, 100, "")
	if err != nil || len(p1.Events) != 100 || p1.Events[0].ID != "1249" || p1.ETag == "" || p1.PollInterval != 300 {
		t.Fatalf("page 1: n=%d first=%v etag=%q poll=%d err=%v", len(p1.Events), p1.Events[0].ID, p1.ETag, p1.PollInterval, err)
	}
	if p1.Events[0].Repo.Name != fakegithub.DefaultRepo || p1.Events[0].Repo.ID != fakegithub.DefaultRepoID {
		t.Fatalf("repo %+v", p1.Events[0].Repo)
	}
	p3, err := gh.Events(context.Background(), tg, fakegithub.DefaultRepo, 3, 100, "")
	if err != nil || len(p3.Events) != 50 || p3.Events[49].ID != "1000" {
		t.Fatalf("page 3: %d %v", len(p3.Events), err)
	}
	nm, err := gh.Events(context.Background(), tg, fakegithub.DefaultRepo, 1, 100, p1.ETag)
	if err != nil || !nm.NotModified || nm.ETag != p1.ETag || nm.PollInterval != 300 || len(nm.Events) != 0 {
		t.Fatalf("304: %+v %v", nm, err)
	}
	reqs := fake.Requests()
	if last := reqs[len(reqs)-1]; last.IfNoneMatch != p1.ETag || last.Query.Get("per_page") != "100" {
		t.Fatalf("last request %+v", last)
	}
}

// TestBodyFaults: a 200 whose JSON is wrong is upstream; one that stalls
// mid-body is network.
func TestBodyFaults(t *testing.T) {
	fake := fakegithub.New(fakegithub.Options{})
	defer fake.Close()
	fake.SetResponse("/repos/octocat/Hello-World", 200, `{"id":"not a number"}`)
	_, err := privateGH().Repo(context.Background(), ghclient.Target{BaseURL: fake.URL}, octo)
	if ae := apiErr(t, err); ae.Code != ghclient.CodeUpstream || ae.Status != 200 {
		t.Fatalf("bad JSON: %+v", ae)
	}
	fake.SetResponse("/repos/octocat/Hello-World", 200, `<html>`)
	_, err = privateGH().Repo(context.Background(), ghclient.Target{BaseURL: fake.URL}, octo)
	if ae := apiErr(t, err); ae.Code != ghclient.CodeUpstream {
		t.Fatalf("html: %+v", ae)
	}
}
