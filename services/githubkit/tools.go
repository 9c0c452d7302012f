package githubkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v62/github"

	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Tool names (spec §4).
const (
	ToolRepo   = "github_repo"
	ToolIssue  = "github_issue"
	ToolSearch = "github_search"
)

// MaxToolResult is the size limit of a tool result in bytes.
const MaxToolResult = 8 << 10

// errUnknownTool is returned by runTool for a name it does not serve.
var errUnknownTool = errors.New("githubkit: unknown tool")

// toolError is the result of a failed tool call (spec §4).
type toolError struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	Status      int    `json:"status,omitempty"`
	RetryAfterS int    `json:"retry_after_s,omitempty"`
}

type toolErrorResult struct {
	Error toolError `json:"error"`
}

func badInput(msg string) any {
	return toolErrorResult{toolError{Code: ghclient.CodeBadInput, Message: msg}}
}

func toolFailure(err error) any {
	var ae *ghclient.APIError
	if !errors.As(err, &ae) {
		return toolErrorResult{toolError{Code: ghclient.CodeNetwork, Message: "GitHub could not be reached"}}
	}
	te := toolError{Code: ae.Code}
	switch ae.Code {
	case ghclient.CodeNetwork:
		te.Message = "GitHub could not be reached or did not answer in time"
	case ghclient.CodeConfig:
		te.Message = "the installation's GitHub API URL is invalid or not allowed"
	case ghclient.CodeRateLimited:
		te.Message = "GitHub rate limit reached"
		te.RetryAfterS = int((ae.Wait + time.Second - 1) / time.Second)
		te.Status = ae.Status
	default:
		te.Status = ae.Status
		te.Message = ae.Message
		if ae.OffHost() && ae.Status == 0 {
			te.Message = "GitHub redirected to another host; not followed"
		}
	}
	te.Message = ghclient.Truncate(te.Message, 200)
	return toolErrorResult{te}
}

type repoResult struct {
	FullName      string   `json:"full_name,omitempty"`
	Description   string   `json:"description,omitempty"`
	HTMLURL       string   `json:"html_url,omitempty"`
	Homepage      string   `json:"homepage,omitempty"`
	Language      string   `json:"language,omitempty"`
	License       string   `json:"license,omitempty"`
	DefaultBranch string   `json:"default_branch,omitempty"`
	Stars         *int     `json:"stars,omitempty"`
	Forks         *int     `json:"forks,omitempty"`
	Watchers      *int     `json:"watchers,omitempty"`
	OpenIssues    *int     `json:"open_issues,omitempty"`
	Archived      *bool    `json:"archived,omitempty"`
	Fork          *bool    `json:"fork,omitempty"`
	Topics        []string `json:"topics,omitempty"`
	CreatedAt     string   `json:"created_at,omitempty"`
	PushedAt      string   `json:"pushed_at,omitempty"`
}

type issueResult struct {
	Repo          string   `json:"repo"`
	Number        int      `json:"number"`
	Kind          string   `json:"kind"`
	State         string   `json:"state,omitempty"`
	Title         string   `json:"title,omitempty"`
	Author        string   `json:"author,omitempty"`
	Labels        []string `json:"labels,omitempty"`
	Comments      *int     `json:"comments,omitempty"`
	CreatedAt     string   `json:"created_at,omitempty"`
	ClosedAt      string   `json:"closed_at,omitempty"`
	HTMLURL       string   `json:"html_url,omitempty"`
	Body          string   `json:"body,omitempty"`
	BodyTruncated bool     `json:"body_truncated"`
}

type searchItem struct {
	FullName    string `json:"full_name,omitempty"`
	Description string `json:"description,omitempty"`
	Stars       *int   `json:"stars,omitempty"`
	Language    string `json:"language,omitempty"`
	HTMLURL     string `json:"html_url,omitempty"`
}

type searchResult struct {
	Query      string       `json:"query"`
	TotalCount *int         `json:"total_count,omitempty"`
	Items      []searchItem `json:"items"`
}

func ts(t *github.Timestamp) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// toolParams decodes tool parameters into a map; nil or null is empty.
func toolParams(raw json.RawMessage) (map[string]any, bool) {
	m := map[string]any{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return m, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// intParam reads an integer parameter given as a JSON integer or a digit string.
func intParam(v any) (int, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(x.String(), 10, 64)
		if err != nil || n > 2147483647 || n < -2147483648 {
			return 0, false
		}
		return int(n), true
	case string:
		s := strings.TrimSpace(x)
		if !isDecimal(s) {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > 2147483647 {
			return 0, false
		}
		return int(n), true
	}
	return 0, false
}

// runTool serves one tool call; the result is always JSON-encodable and
// under MaxToolResult. errUnknownTool is the only error.
func runTool(ctx context.Context, gh *ghclient.GitHub, s Settings, name string, raw json.RawMessage) (any, error) {
	switch name {
	case ToolRepo, ToolIssue, ToolSearch:
	default:
		return nil, errUnknownTool
	}
	params, ok := toolParams(raw)
	if !ok {
		return badInput("parameters must be a JSON object"), nil
	}
	if s.APIErr != nil {
		return toolFailure(&ghclient.APIError{Code: ghclient.CodeConfig}), nil
	}
	c := toolCall{gh: gh, target: ghclient.Target{BaseURL: s.APIURL, Token: s.Token}, settings: s, params: params}
	switch name {
	case ToolRepo:
		return c.repoTool(ctx), nil
	case ToolIssue:
		return c.issueTool(ctx), nil
	default: // ToolSearch
		return c.searchTool(ctx), nil
	}
}

// toolCall is one call's decoded parameters and the GitHub it asks.
type toolCall struct {
	gh       *ghclient.GitHub
	target   ghclient.Target
	settings Settings
	params   map[string]any
}

// repo reads the repo parameter, or returns the bad-input result.
func (c toolCall) repo() (ghclient.Repo, any) {
	str, ok := c.params["repo"].(string)
	if !ok {
		return ghclient.Repo{}, badInput("repo is required: owner/repo or a GitHub URL")
	}
	r, err := events.ParseRepo(str, apiHost(c.settings))
	if err != nil {
		return ghclient.Repo{}, badInput("repo must be owner/repo or a GitHub repository URL")
	}
	return r, nil
}

// repoTool serves ToolRepo.
func (c toolCall) repoTool(ctx context.Context) any {
	r, bad := c.repo()
	if bad != nil {
		return bad
	}
	rp, err := c.gh.Repo(ctx, c.target, r)
	if err != nil {
		return toolFailure(err)
	}
	out := newRepoResult(rp)
	return fitResult(&out, out.shrink)
}

// issueTool serves ToolIssue.
func (c toolCall) issueTool(ctx context.Context) any {
	r, bad := c.repo()
	if bad != nil {
		return bad
	}
	n, ok := intParam(c.params["number"])
	if !ok || n < 1 {
		return badInput("number must be an integer >= 1")
	}
	is, err := c.gh.Issue(ctx, c.target, r, n)
	if err != nil {
		return toolFailure(err)
	}
	out := newIssueResult(r, n, is)
	return fitResult(&out, out.shrink)
}

// searchTool serves ToolSearch.
func (c toolCall) searchTool(ctx context.Context) any {
	q, ok := c.params["query"].(string)
	q = strings.TrimSpace(q)
	if !ok || q == "" || utf8.RuneCountInString(q) > events.MaxSearchRunes {
		return badInput(fmt.Sprintf("query must be 1-%d characters", events.MaxSearchRunes))
	}
	limit := 5
	if v, present := c.params["limit"]; present && v != nil {
		n, ok := intParam(v)
		if !ok || n < 1 || n > 10 {
			return badInput("limit must be an integer from 1 to 10")
		}
		limit = n
	}
	res, err := c.gh.Search(ctx, c.target, q, limit)
	if err != nil {
		return toolFailure(err)
	}
	out := newSearchResult(q, res, limit)
	return fitResult(&out, out.shrink)
}

// newRepoResult is ToolRepo's answer for a repository: at most ten topics,
// the description cut to 300 characters.
func newRepoResult(rp *github.Repository) repoResult {
	out := repoResult{
		FullName: rp.GetFullName(), Description: ghclient.Truncate(strings.TrimSpace(rp.GetDescription()), 300),
		HTMLURL: rp.GetHTMLURL(), Homepage: strings.TrimSpace(rp.GetHomepage()), Language: rp.GetLanguage(),
		DefaultBranch: rp.GetDefaultBranch(), Stars: rp.StargazersCount, Forks: rp.ForksCount,
		Watchers: rp.SubscribersCount, OpenIssues: rp.OpenIssuesCount, Archived: rp.Archived, Fork: rp.Fork,
		CreatedAt: ts(rp.CreatedAt), PushedAt: ts(rp.PushedAt),
	}
	if rp.License != nil {
		out.License = rp.License.GetSPDXID()
	}
	if len(rp.Topics) > 10 {
		out.Topics = rp.Topics[:10]
	} else {
		out.Topics = rp.Topics
	}
	return out
}

// shrink drops a topic, then halves the description; false when nothing
// is left to drop.
func (out *repoResult) shrink() bool {
	return dropLast(&out.Topics) || halve(&out.Description)
}

// newIssueResult is ToolIssue's answer for issue or pull request n of r:
// at most ten labels, the body cut to 1500 characters.
func newIssueResult(r ghclient.Repo, n int, is *github.Issue) issueResult {
	out := issueResult{Repo: r.String(), Number: n, Kind: "issue", State: events.IssueState(is), Title: is.GetTitle(),
		Comments: is.Comments, CreatedAt: ts(is.CreatedAt), ClosedAt: ts(is.ClosedAt), HTMLURL: is.GetHTMLURL()}
	if is.Number != nil {
		out.Number = *is.Number
	}
	if events.IsPullRequest(is) {
		out.Kind = "pull_request"
	}
	if is.User != nil {
		out.Author = is.User.GetLogin()
	}
	for _, l := range is.Labels {
		if len(out.Labels) == 10 {
			break
		}
		if n := l.GetName(); n != "" {
			out.Labels = append(out.Labels, n)
		}
	}
	body := strings.TrimSpace(is.GetBody())
	out.Body = ghclient.Truncate(body, 1500)
	out.BodyTruncated = out.Body != body
	return out
}

// shrink drops a label, then halves the body; false when nothing is left
// to drop.
func (out *issueResult) shrink() bool {
	if dropLast(&out.Labels) {
		return true
	}
	if halve(&out.Body) {
		out.BodyTruncated = true
		return true
	}
	return false
}

// newSearchResult is ToolSearch's answer: at most limit repositories,
// descriptions cut to 200 characters.
func newSearchResult(q string, res *github.RepositoriesSearchResult, limit int) searchResult {
	out := searchResult{Query: q, TotalCount: res.Total, Items: []searchItem{}}
	for _, rp := range res.Repositories {
		if rp == nil || len(out.Items) == limit {
			continue
		}
		out.Items = append(out.Items, searchItem{FullName: rp.GetFullName(),
			Description: ghclient.Truncate(strings.TrimSpace(rp.GetDescription()), 200),
			Stars:       rp.StargazersCount, Language: rp.GetLanguage(), HTMLURL: rp.GetHTMLURL()})
	}
	return out
}

// shrink drops an item; false when none is left.
func (out *searchResult) shrink() bool {
	return dropLast(&out.Items)
}

// dropLast drops the last element of *s; false when there is none.
func dropLast[T any](s *[]T) bool {
	if len(*s) == 0 {
		return false
	}
	*s = (*s)[:len(*s)-1]
	return true
}

// halve cuts *s to half its characters; false when it is empty.
func halve(s *string) bool {
	if *s == "" {
		return false
	}
	*s = ghclient.Truncate(*s, utf8.RuneCountInString(*s)/2)
	return true
}

// fitResult shrinks v with shrink until it encodes under MaxToolResult.
func fitResult(v any, shrink func() bool) any {
	for {
		b, err := json.Marshal(v)
		if err != nil || len(b) <= MaxToolResult || !shrink() {
			return v
		}
	}
}
