package ghclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

// UserAgent is sent on every GitHub request.
const UserAgent = "LangBot-GitHubKit"

// DefaultAPIURL is the public GitHub API root, used when an installation
// configures none.
const DefaultAPIURL = "https://api.github.com"

// Tool error codes, also the classification of GitHub outcomes (spec §3.4).
const (
	CodeNetwork      = "network"
	CodeNotFound     = "not_found"
	CodeRateLimited  = "rate_limited"
	CodeUnauthorized = "unauthorized"
	CodeForbidden    = "forbidden"
	CodeUpstream     = "upstream"
	CodeConfig       = "config"
	CodeBadInput     = "bad_input"
)

// defaultRateWait is the wait of a rate limit without retry-after or reset.
const defaultRateWait = 60 * time.Second

// APIError is a classified GitHub failure (spec §3.3 rule 4, §3.4).
type APIError struct {
	// Code is one of the Code constants.
	Code string
	// Status is the HTTP status, 0 without a response.
	Status int
	// Message is the first line of GitHub's JSON message (≤ 200 runes), or
	// the status text.
	Message string
	// Wait is how long to wait, for rate_limited.
	Wait time.Duration
	// Secondary marks GitHub's secondary rate limit (too many requests in a
	// short time, or too much concurrency): a token does not lift it.
	Secondary bool
	// offHost marks a refused redirect.
	offHost bool // read through OffHost
	err     error
}

func (e *APIError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("githubkit: github %s (%d)", e.Code, e.Status)
	}
	return "githubkit: github " + e.Code
}

func (e *APIError) Unwrap() error { return e.err }

// OffHost reports whether the call failed on a refused redirect.
func (e *APIError) OffHost() bool { return e.offHost }

// Permanent reports whether a poll should count the failure towards
// "broken" (spec §7.3): 401, 404, 410, 451, a 403 that is not rate-limited
// and an off-host redirect.
func (e *APIError) Permanent() bool {
	if e.offHost {
		return true
	}
	switch e.Code {
	case CodeNotFound, CodeUnauthorized, CodeForbidden:
		return true
	}
	return e.Status == http.StatusUnavailableForLegalReasons
}

// Minutes is Wait rounded up to whole minutes, at least 1.
func (e *APIError) Minutes() int {
	m := int((e.Wait + time.Minute - 1) / time.Minute)
	return max(m, 1)
}

// GitHub is the GitHub access layer: a go-github client per request over
// one shared HTTP client. A fresh client per request also keeps
// go-github's in-memory rate-limit state from leaking between tokens.
type GitHub struct {
	hc      *http.Client
	timeout time.Duration
	now     func() time.Time
	lim     *limiter // per-installation and per-host caps, breakers (limits.go)
}

// NewGitHub wraps the shared HTTP client (see NewHTTPClient). timeout
// bounds each call, body included (0 = gitHubTimeout).
func NewGitHub(hc *http.Client, timeout time.Duration, now func() time.Time) *GitHub {
	if now == nil {
		now = time.Now
	}
	if timeout <= 0 {
		timeout = gitHubTimeout
	}
	return &GitHub{hc: hc, timeout: timeout, now: now, lim: newLimiter(Limits{}, DefaultAPIURL, now)}
}

// SetLimits replaces the caps and breakers (before any call); defaultAPIURL
// names the host that keeps the full timeout.
func (g *GitHub) SetLimits(l Limits, defaultAPIURL string) {
	g.lim = newLimiter(l, defaultAPIURL, g.now)
}

// Target says where and as whom a call goes.
type Target struct {
	// BaseURL is a normalised github_api_url (no trailing slash).
	BaseURL string
	// Token is the installation's token; "" = anonymous.
	Token string
}

func (g *GitHub) client(t Target) (*github.Client, error) {
	u, err := url.Parse(t.BaseURL + "/")
	if err != nil || t.BaseURL == "" {
		return nil, &APIError{Code: CodeConfig, err: ErrAPIURL}
	}
	c := github.NewClient(g.hc)
	c.BaseURL = u
	c.UserAgent = UserAgent
	if t.Token != "" {
		c = c.WithAuthToken(t.Token)
	}
	return c, nil
}

// classify turns a go-github result into an *APIError (nil for success).
func (g *GitHub) classify(resp *github.Response, err error) error {
	if err == nil {
		return nil
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	switch {
	case errors.Is(err, ErrBlockedAddress), errors.Is(err, ErrAPIURL):
		return &APIError{Code: CodeConfig, err: err}
	case errors.Is(err, ErrOffHostRedirect):
		return &APIError{Code: CodeUpstream, offHost: true, err: err}
	}
	var hr *http.Response
	if resp != nil {
		hr = resp.Response
	}
	if hr == nil || errors.Is(err, ErrBodyTooLarge) {
		return &APIError{Code: CodeNetwork, err: err}
	}
	st := hr.StatusCode
	msg := ""
	var er *github.ErrorResponse
	var rl *github.RateLimitError
	var ab *github.AbuseRateLimitError
	switch {
	case errors.As(err, &er):
		msg = er.Message
		// a 422 says why in errors[]: GitHub's own message, else code and field
		var why []string
		for _, e := range er.Errors {
			switch {
			case strings.TrimSpace(e.Message) != "":
				why = append(why, strings.TrimSpace(e.Message))
			case e.Code != "" && e.Field != "":
				why = append(why, e.Field+" "+e.Code)
			case e.Code != "":
				why = append(why, e.Code)
			}
		}
		if len(why) > 0 {
			msg = strings.TrimSuffix(strings.TrimSpace(msg), ".") + ": " + strings.Join(why, "; ")
		}
	case errors.As(err, &rl):
		msg = rl.Message
	case errors.As(err, &ab):
		msg = ab.Message
	}
	msg = Truncate(FirstLine(msg), 200)
	if msg == "" {
		msg = http.StatusText(st)
	}
	out := &APIError{Status: st, Message: msg, err: err}
	h := hr.Header
	switch {
	case st >= 200 && st < 300:
		// a body GitHub sent but that is not the JSON expected is an
		// upstream fault; a body that broke off or timed out is the network
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if errors.As(err, &se) || errors.As(err, &te) {
			out.Code = CodeUpstream
		} else {
			out.Code = CodeNetwork
		}
	case (st == 403 || st == 429) && (h.Get("X-RateLimit-Remaining") == "0" || h.Get("Retry-After") != "" ||
		strings.Contains(strings.ToLower(msg), "rate limit") || ab != nil):
		out.Code = CodeRateLimited
		out.Wait = rateWait(h, g.now())
		out.Secondary = ab != nil || strings.Contains(strings.ToLower(msg), "secondary rate limit")
	case st == 404 || st == 410:
		out.Code = CodeNotFound
	case st == 401:
		out.Code = CodeUnauthorized
	case st == 403:
		out.Code = CodeForbidden
	default:
		out.Code = CodeUpstream
	}
	return out
}

// rateWait is retry-after seconds, else reset minus now, else 60 s.
func rateWait(h http.Header, now time.Time) time.Duration {
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get("Retry-After")), 10, 64); err == nil && v >= 0 {
		return time.Duration(v) * time.Second
	}
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Reset")), 10, 64); err == nil {
		return max(time.Unix(v, 0).Sub(now), 0)
	}
	return defaultRateWait
}

func (g *GitHub) do(ctx context.Context, t Target, route string, call func(context.Context, *github.Client) (*github.Response, error)) error {
	c, err := g.client(t)
	if err != nil {
		return err
	}
	return g.lim.guard(ctx, t.BaseURL, func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		resp, err := call(withEndpoint(ctx, route), c)
		if cond := conditionalOf(ctx); cond != nil && cond.NotModified {
			return nil // the caller keeps the value it revalidated (conditional.go)
		}
		if err != nil && ctx.Err() != nil {
			return &APIError{Code: CodeNetwork, err: err}
		}
		return g.classify(resp, err)
	}, g.timeout)
}

// Repo gets a repository.
func (g *GitHub) Repo(ctx context.Context, t Target, r Repo) (*github.Repository, error) {
	var out *github.Repository
	err := g.do(ctx, t, "/repos/{owner}/{repo}", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.Repositories.Get(ctx, r.Owner, r.Name)
		return resp, err
	})
	return out, err
}

// Issues lists 50 issues (and PRs) by last update.
func (g *GitHub) Issues(ctx context.Context, t Target, r Repo, state string) ([]*github.Issue, error) {
	var out []*github.Issue
	err := g.do(ctx, t, "/repos/{owner}/{repo}/issues", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.Issues.ListByRepo(ctx, r.Owner, r.Name, &github.IssueListByRepoOptions{
			State: state, Sort: "updated", Direction: "desc", ListOptions: github.ListOptions{PerPage: 50},
		})
		return resp, err
	})
	return out, err
}

// Pulls lists 10 pull requests by last update.
func (g *GitHub) Pulls(ctx context.Context, t Target, r Repo, state string) ([]*github.PullRequest, error) {
	var out []*github.PullRequest
	err := g.do(ctx, t, "/repos/{owner}/{repo}/pulls", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.PullRequests.List(ctx, r.Owner, r.Name, &github.PullRequestListOptions{
			State: state, Sort: "updated", Direction: "desc", ListOptions: github.ListOptions{PerPage: 10},
		})
		return resp, err
	})
	return out, err
}

// Issue gets one issue or pull request.
func (g *GitHub) Issue(ctx context.Context, t Target, r Repo, n int) (*github.Issue, error) {
	var out *github.Issue
	err := g.do(ctx, t, "/repos/{owner}/{repo}/issues/{number}", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.Issues.Get(ctx, r.Owner, r.Name, n)
		return resp, err
	})
	return out, err
}

// Releases lists the 5 latest releases.
func (g *GitHub) Releases(ctx context.Context, t Target, r Repo) ([]*github.RepositoryRelease, error) {
	var out []*github.RepositoryRelease
	err := g.do(ctx, t, "/repos/{owner}/{repo}/releases", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.Repositories.ListReleases(ctx, r.Owner, r.Name, &github.ListOptions{PerPage: 5})
		return resp, err
	})
	return out, err
}

// User gets a user or organisation; login is path-escaped as one segment.
func (g *GitHub) User(ctx context.Context, t Target, login string) (*github.User, error) {
	var out *github.User
	err := g.do(ctx, t, "/users/{username}", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.Users.Get(ctx, url.PathEscape(login))
		return resp, err
	})
	return out, err
}

// Search searches repositories by stars.
func (g *GitHub) Search(ctx context.Context, t Target, q string, perPage int) (*github.RepositoriesSearchResult, error) {
	var out *github.RepositoriesSearchResult
	err := g.do(ctx, t, "/search/repositories", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.Search.Repositories(ctx, q, &github.SearchOptions{
			Sort: "stars", Order: "desc", ListOptions: github.ListOptions{PerPage: perPage},
		})
		return resp, err
	})
	return out, err
}

// Compare compares two commits of a repository given by full name.
func (g *GitHub) Compare(ctx context.Context, t Target, fullName, base, head string) (*github.CommitsComparison, error) {
	o, r, _ := strings.Cut(fullName, "/")
	var out *github.CommitsComparison
	err := g.do(ctx, t, "/repos/{owner}/{repo}/compare/{basehead}", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.Repositories.CompareCommits(ctx, o, r, base, head, nil)
		return resp, err
	})
	return out, err
}

// Pull gets one pull request of a repository given by full name.
func (g *GitHub) Pull(ctx context.Context, t Target, fullName string, n int) (*github.PullRequest, error) {
	o, r, _ := strings.Cut(fullName, "/")
	var out *github.PullRequest
	err := g.do(ctx, t, "/repos/{owner}/{repo}/pulls/{number}", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.PullRequests.Get(ctx, o, r, n)
		return resp, err
	})
	return out, err
}

// Event is one entry of a repository's events feed, with the payload kept
// raw (trimmed payloads differ from the typed ones).
type Event struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Actor *struct {
		Login string `json:"login"`
	} `json:"actor"`
	Repo struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"repo"`
	Payload json.RawMessage `json:"payload"`
	// CreatedAt is GitHub's RFC 3339 time of the event; kept as text so
	// that an odd value never fails a page (seen.go reads it).
	CreatedAt string `json:"created_at,omitempty"`
}

// EventsPage is one page of the events feed.
type EventsPage struct {
	NotModified  bool
	Events       []Event // newest first
	ETag         string
	PollInterval int // X-Poll-Interval seconds, 0 when absent
}

// Events reads one page of a repository's events (100 per page), sending
// If-None-Match when etag is set (spec §3.3 rule 6).
func (g *GitHub) Events(ctx context.Context, t Target, fullName string, page, perPage int, etag string) (EventsPage, error) {
	o, r, _ := strings.Cut(fullName, "/")
	return g.eventsPage(ctx, t, "/repos/{owner}/{repo}/events", fmt.Sprintf("repos/%s/%s/events?per_page=%d&page=%d", o, r, perPage, page), etag)
}

// eventsPage reads one page of an events feed at path (route is its
// template, for metrics and spans): a conditional GET that keeps etag
// on a 304 and reads GitHub's X-Poll-Interval.
func (g *GitHub) eventsPage(ctx context.Context, t Target, route, path, etag string) (EventsPage, error) {
	var out EventsPage
	err := g.do(ctx, t, route, func(ctx context.Context, c *github.Client) (*github.Response, error) {
		req, err := c.NewRequest(http.MethodGet, path, nil)
		if err != nil {
			return nil, err
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := c.Do(ctx, req, &out.Events)
		if resp != nil && resp.Response != nil {
			out.ETag = resp.Header.Get("ETag")
			if v, perr := strconv.Atoi(resp.Header.Get("X-Poll-Interval")); perr == nil && v > 0 {
				out.PollInterval = v
			}
			if resp.StatusCode == http.StatusNotModified {
				out.NotModified, out.ETag, out.Events = true, etag, nil
				return resp, nil
			}
		}
		return resp, err
	})
	return out, err
}

// ReleaseByTag reads the release of a tag.
func (g *GitHub) ReleaseByTag(ctx context.Context, t Target, r Repo, tag string) (*github.RepositoryRelease, error) {
	var out *github.RepositoryRelease
	err := g.do(ctx, t, "/repos/{owner}/{repo}/releases/tags/{tag}", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		// go-github puts the tag into the path as it is: a tag such as
		// release/v1 must stay one segment
		out, resp, err = c.Repositories.GetReleaseByTag(ctx, r.Owner, r.Name, url.PathEscape(tag))
		return resp, err
	})
	return out, err
}

// Commit gets one commit (link cards). One changed file is asked for: the
// card shows the totals, which GitHub gives whatever the page size.
func (g *GitHub) Commit(ctx context.Context, t Target, r Repo, sha string) (*github.RepositoryCommit, error) {
	var out *github.RepositoryCommit
	err := g.do(ctx, t, "/repos/{owner}/{repo}/commits/{sha}", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.Repositories.GetCommit(ctx, r.Owner, r.Name, sha, &github.ListOptions{PerPage: 1})
		return resp, err
	})
	return out, err
}
