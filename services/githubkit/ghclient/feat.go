package ghclient

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

// OpenPull is one open pull request as the review reminder reads it
// (GET /repos/{owner}/{repo}/pulls, GitHub's "pull-request-simple").
type OpenPull struct {
	Number    int       `json:"number"`
	Title     string    `json:"title"`
	HTMLURL   string    `json:"html_url"`
	Draft     bool      `json:"draft"`
	CreatedAt time.Time `json:"created_at"`
	User      *struct {
		Login string `json:"login"`
	} `json:"user"`
	RequestedReviewers []struct {
		Login string `json:"login"`
	} `json:"requested_reviewers"`
	RequestedTeams []struct {
		Slug string `json:"slug"`
		Name string `json:"name"`
	} `json:"requested_teams"`
}

// PullsPage is the first page of a repository's open pull requests.
type PullsPage struct {
	NotModified bool
	Pulls       []OpenPull // oldest first
	ETag        string
}

// PullsPerPage is how many open pull requests one review list reads.
const PullsPerPage = 100

// OpenPulls reads up to PullsPerPage open pull requests of a repository,
// oldest first, sending If-None-Match when etag is set (a 304 costs no
// rate limit).
func (g *GitHub) OpenPulls(ctx context.Context, t Target, fullName, etag string) (PullsPage, error) {
	var out PullsPage
	err := g.do(ctx, t, "/repos/{owner}/{repo}/pulls", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		o, r, _ := strings.Cut(fullName, "/")
		req, err := c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/pulls?state=open&sort=created&direction=asc&per_page=%d",
			url.PathEscape(o), url.PathEscape(r), PullsPerPage), nil)
		if err != nil {
			return nil, err
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := c.Do(ctx, req, &out.Pulls)
		if resp != nil && resp.Response != nil {
			out.ETag = resp.Header.Get("ETag")
			if resp.StatusCode == http.StatusNotModified {
				out.NotModified, out.ETag, out.Pulls = true, etag, nil
				return resp, nil
			}
		}
		return resp, err
	})
	return out, err
}

// OrgEvents reads one page of an organisation's public events
// (GET /orgs/{org}/events), sending If-None-Match when etag is set. Each
// event names its repository.
func (g *GitHub) OrgEvents(ctx context.Context, t Target, org string, page, perPage int, etag string) (EventsPage, error) {
	return g.eventsPage(ctx, t, "/orgs/{org}/events", fmt.Sprintf("orgs/%s/events?per_page=%d&page=%d", url.PathEscape(org), perPage, page), etag)
}

// Org gets an organisation (GET /orgs/{org}); a 404 means there is none.
func (g *GitHub) Org(ctx context.Context, t Target, org string) (*github.Organization, error) {
	var out *github.Organization
	err := g.do(ctx, t, "/orgs/{org}", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.Organizations.Get(ctx, org)
		return resp, err
	})
	return out, err
}

// IssueComments lists the newest comments of an issue or pull request (up
// to perPage, oldest first of those read).
func (g *GitHub) IssueComments(ctx context.Context, t Target, r Repo, n, perPage int) ([]*github.IssueComment, error) {
	var out []*github.IssueComment
	err := g.do(ctx, t, "/repos/{owner}/{repo}/issues/{number}/comments", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		out, resp, err = c.Issues.ListComments(ctx, r.Owner, r.Name, n, &github.IssueListCommentsOptions{
			Sort: github.String("created"), Direction: github.String("desc"), ListOptions: github.ListOptions{PerPage: perPage},
		})
		return resp, err
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}
