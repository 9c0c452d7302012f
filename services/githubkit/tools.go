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
	repoParam := func() (ghclient.Repo, any) {
		str, ok := params["repo"].(string)
		if !ok {
			return ghclient.Repo{}, badInput("repo is required: owner/repo or a GitHub URL")
		}
		r, err := events.ParseRepo(str, apiHost(s))
		if err != nil {
			return ghclient.Repo{}, badInput("repo must be owner/repo or a GitHub repository URL")
		}
		return r, nil
	}
	if s.APIErr != nil {
		return toolFailure(&ghclient.APIError{Code: ghclient.CodeConfig}), nil
	}
	t := ghclient.Target{BaseURL: s.APIURL, Token: s.Token}
	switch name {
	case ToolRepo:
		r, bad := repoParam()
		if bad != nil {
			return bad, nil
		}
		rp, err := gh.Repo(ctx, t, r)
		if err != nil {
			return toolFailure(err), nil
		}
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
		return fitResult(&out, func() bool {
			if len(out.Topics) > 0 {
				out.Topics = out.Topics[:len(out.Topics)-1]
				return true
			}
			if out.Description != "" {
				out.Description = ghclient.Truncate(out.Description, utf8.RuneCountInString(out.Description)/2)
				return true
			}
			return false
		}), nil
	case ToolIssue:
		r, bad := repoParam()
		if bad != nil {
			return bad, nil
		}
		n, ok := intParam(params["number"])
		if !ok || n < 1 {
			return badInput("number must be an integer >= 1"), nil
		}
		is, err := gh.Issue(ctx, t, r, n)
		if err != nil {
			return toolFailure(err), nil
		}
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
		return fitResult(&out, func() bool {
			if len(out.Labels) > 0 {
				out.Labels = out.Labels[:len(out.Labels)-1]
				return true
			}
			if out.Body != "" {
				out.Body = ghclient.Truncate(out.Body, utf8.RuneCountInString(out.Body)/2)
				out.BodyTruncated = true
				return true
			}
			return false
		}), nil
	default: // ToolSearch
		q, ok := params["query"].(string)
		q = strings.TrimSpace(q)
		if !ok || q == "" || utf8.RuneCountInString(q) > events.MaxSearchRunes {
			return badInput(fmt.Sprintf("query must be 1-%d characters", events.MaxSearchRunes)), nil
		}
		limit := 5
		if v, present := params["limit"]; present && v != nil {
			n, ok := intParam(v)
			if !ok || n < 1 || n > 10 {
				return badInput("limit must be an integer from 1 to 10"), nil
			}
			limit = n
		}
		res, err := gh.Search(ctx, t, q, limit)
		if err != nil {
			return toolFailure(err), nil
		}
		out := searchResult{Query: q, TotalCount: res.Total, Items: []searchItem{}}
		for _, rp := range res.Repositories {
			if rp == nil || len(out.Items) == limit {
				continue
			}
			out.Items = append(out.Items, searchItem{FullName: rp.GetFullName(),
				Description: ghclient.Truncate(strings.TrimSpace(rp.GetDescription()), 200),
				Stars:       rp.StargazersCount, Language: rp.GetLanguage(), HTMLURL: rp.GetHTMLURL()})
		}
		return fitResult(&out, func() bool {
			if len(out.Items) > 0 {
				out.Items = out.Items[:len(out.Items)-1]
				return true
			}
			return false
		}), nil
	}
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
