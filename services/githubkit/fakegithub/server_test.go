package fakegithub_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

func get(t *testing.T, c *http.Client, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestFixturesServe(t *testing.T) {
	s := fakegithub.New(fakegithub.Options{TLS: true, BasePath: "/api/v3"})
	defer s.Close()
	c := s.Client()
	for _, p := range []string{"/repos/octocat/Hello-World", "/repos/octocat/Hello-World/issues?state=all", "/repos/octocat/Hello-World/pulls",
		"/repos/octocat/Hello-World/issues/1347", "/repos/octocat/Hello-World/pulls/1290", "/repos/octocat/Hello-World/releases",
		"/repos/octocat/Hello-World/compare/aaa...bbb", "/users/octocat", "/search/repositories?q=x", "/repositories/1296269",
		"/repos/octocat/Hello-World/events"} {
		resp, body := get(t, c, s.URL+p, "Authorization", "Bearer x")
		if resp.StatusCode != 200 || !json.Valid([]byte(body)) || resp.Header.Get("X-RateLimit-Remaining") == "" {
			t.Errorf("%s: %d %q", p, resp.StatusCode, body[:min(len(body), 80)])
		}
	}
	if resp, _ := get(t, c, s.URL+"/repos/octocat/missing"); resp.StatusCode != 404 {
		t.Errorf("missing repo: %d", resp.StatusCode)
	}
	if resp, _ := get(t, c, strings.TrimSuffix(s.URL, "/api/v3")+"/repos/octocat/Hello-World"); resp.StatusCode != 404 {
		t.Errorf("outside base path: %d", resp.StatusCode)
	}
	r := s.Requests()
	if len(r) != 13 || r[0].Authorization != "Bearer x" || r[0].Path != "/api/v3/repos/octocat/Hello-World" || r[1].Query.Get("state") != "all" {
		t.Fatalf("recorded %+v", r[:2])
	}
}

func TestFaultTimesAndRename(t *testing.T) {
	s := fakegithub.New(fakegithub.Options{})
	defer s.Close()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s.Inject(fakegithub.Fault{Path: "/repos/", Status: 503, Times: 2})
	for i, want := range []int{503, 503, 200} {
		if resp, _ := get(t, c, s.URL+"/repos/octocat/Hello-World"); resp.StatusCode != want {
			t.Fatalf("request %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	s.Rename("octocat/Hello-World", "octocat/Hi")
	resp, _ := get(t, c, s.URL+"/repos/octocat/Hello-World/events?per_page=1")
	if resp.StatusCode != 301 || resp.Header.Get("Location") != "/repositories/1296269/events?per_page=1" {
		t.Fatalf("rename: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestAutoEventsAndRepos(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := fakegithub.New(fakegithub.Options{AutoRepos: true, AutoEvents: time.Minute, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	defer s.Close()
	c := http.DefaultClient
	_, b1 := get(t, c, s.URL+"/repos/someone/thing/events")
	_, b2 := get(t, c, s.URL+"/repos/someone/thing/events")
	now.Add(int64(time.Minute))
	_, b3 := get(t, c, s.URL+"/repos/someone/thing/events")
	var e1, e2, e3 []map[string]any
	for _, p := range []struct {
		b string
		v *[]map[string]any
	}{{b1, &e1}, {b2, &e2}, {b3, &e3}} {
		if err := json.Unmarshal([]byte(p.b), p.v); err != nil {
			t.Fatal(err)
		}
	}
	if len(e1) != 1 || len(e2) != 1 || len(e3) != 2 || e3[0]["repo"].(map[string]any)["name"] != "someone/thing" {
		t.Fatalf("auto events %d %d %d", len(e1), len(e2), len(e3))
	}
}
