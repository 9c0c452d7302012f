package githubkit

import (
	"context"
	"net/url"

	"github.com/google/go-github/v62/github"
)

// ReleaseByTag gets the release of one tag (link cards).
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
