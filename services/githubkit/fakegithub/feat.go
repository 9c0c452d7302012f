package fakegithub

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The endpoints behind githubkit's review reminders, organisation
// subscriptions and AI summaries, in the shapes GitHub documents: a
// repository's open pull requests with their requested reviewers
// (GET /repos/{o}/{r}/pulls, when set with SetPulls), an organisation's
// events (GET /orgs/{org}, GET /orgs/{org}/events) and an issue's comments
// (GET /repos/{o}/{r}/issues/{n}/comments). Lists answer with an ETag and
// a matching If-None-Match gets 304.

// Pull is one open pull request of SetPulls.
type Pull struct {
	Number    int
	Title     string
	Author    string
	Draft     bool
	CreatedAt time.Time
	Reviewers []string // requested reviewers' logins
	Teams     []string // requested teams' slugs
}

// Comment is one issue comment of SetComments.
type Comment struct {
	Author string
	Body   string
}

// extState is the state of this file's endpoints.
type extState struct {
	pulls    map[string][]Pull    // by lower(full_name); set = served instead of the fixture
	orgs     map[string][]any     // by lower(org): events, oldest first
	comments map[string][]Comment // by lower(full_name)#n
}

var (
	orgRE      = regexp.MustCompile(`^/orgs/([A-Za-z0-9-]{1,39})(/events)?$`)
	commentsRE = regexp.MustCompile(`^/issues/([0-9]+)/comments$`)
)

// SetPulls makes a repository's open pull requests these (oldest first is
// not required: the endpoint sorts as asked).
func (s *Server) SetPulls(fullName string, pulls ...Pull) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ext.pulls == nil {
		s.ext.pulls = map[string][]Pull{}
	}
	s.ext.pulls[strings.ToLower(fullName)] = slices.Clone(pulls)
}

// AddOrgEvents appends events (Event, RawEvent) to an organisation's feed,
// each naming its repository; the organisation exists from then on.
func (s *Server) AddOrgEvents(org, repoFullName string, evs ...json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ext.orgs == nil {
		s.ext.orgs = map[string][]any{}
	}
	key := strings.ToLower(org)
	list := s.ext.orgs[key]
	if list == nil {
		list = []any{}
	}
	for _, e := range evs {
		var m map[string]any
		if json.Unmarshal(e, &m) != nil {
			continue
		}
		m["repo"] = map[string]any{"id": 1, "name": repoFullName, "url": s.URL + "/repos/" + repoFullName}
		m["org"] = map[string]any{"id": 1, "login": org}
		list = append(list, m)
	}
	if len(list) > MaxEvents {
		list = list[len(list)-MaxEvents:]
	}
	s.ext.orgs[key] = list
}

// SetComments sets the comments of one issue or pull request.
func (s *Server) SetComments(fullName string, n int, cs ...Comment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ext.comments == nil {
		s.ext.comments = map[string][]Comment{}
	}
	s.ext.comments[strings.ToLower(fullName)+"#"+strconv.Itoa(n)] = slices.Clone(cs)
}

// orgRoute answers /orgs/{org} and /orgs/{org}/events; false when rel is
// not one of them.
func (s *Server) orgRoute(w http.ResponseWriter, r *http.Request, rel string) bool {
	m := orgRE.FindStringSubmatch(rel)
	if m == nil {
		return false
	}
	s.mu.Lock()
	evs, ok := s.ext.orgs[strings.ToLower(m[1])]
	// newest first, per_page (at most 100) from page's start
	per, page := 30, 1
	if v, err := strconv.Atoi(r.URL.Query().Get("per_page")); err == nil && v > 0 {
		per = min(v, 100)
	}
	if v, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && v > 0 {
		page = v
	}
	var out []any
	for i := len(evs) - 1 - (page-1)*per; i >= 0 && len(out) < per; i-- {
		out = append(out, evs[i])
	}
	s.mu.Unlock()
	if !ok {
		s.writeError(w, http.StatusNotFound, "Not Found")
		return true
	}
	if m[2] == "" {
		s.writeJSON(w, rel, map[string]any{"login": m[1], "id": 1, "type": "Organization", "html_url": "https://github.com/" + m[1]})
		return true
	}
	if out == nil {
		out = []any{}
	}
	s.writeList(w, r, rel, out, map[string]string{"X-Poll-Interval": strconv.Itoa(s.opts.PollInterval)})
	return true
}

// featRoute answers the repository endpoints of this file; false when rest
// is not one of them (or the pulls were never set: the fixture answers).
func (s *Server) featRoute(w http.ResponseWriter, r *http.Request, rel string, rp *repo, rest string) bool {
	switch {
	case rest == "/pulls" && r.URL.Query().Get("state") == "open":
		s.mu.Lock()
		pulls, ok := s.ext.pulls[strings.ToLower(rp.fullName)]
		s.mu.Unlock()
		if !ok {
			return false
		}
		pulls = slices.Clone(pulls)
		slices.SortStableFunc(pulls, func(a, b Pull) int { return a.CreatedAt.Compare(b.CreatedAt) })
		if r.URL.Query().Get("direction") == "desc" {
			slices.Reverse(pulls)
		}
		out := []any{}
		for _, p := range pulls {
			out = append(out, s.pullJSON(rp, p))
		}
		s.writeList(w, r, rel, capList(out, r.URL.Query(), 30), nil)
		return true
	case commentsRE.MatchString(rest):
		n := commentsRE.FindStringSubmatch(rest)[1]
		s.mu.Lock()
		cs := slices.Clone(s.ext.comments[strings.ToLower(rp.fullName)+"#"+n])
		s.mu.Unlock()
		if r.URL.Query().Get("direction") == "desc" {
			slices.Reverse(cs)
		}
		out := []any{}
		for i, c := range cs {
			out = append(out, map[string]any{"id": i + 1, "body": c.Body, "user": map[string]any{"login": c.Author, "type": "User"},
				"created_at": "2026-01-01T00:00:00Z", "html_url": "https://github.com/" + rp.fullName + "/issues/" + n + "#issuecomment-" + strconv.Itoa(i+1)})
		}
		s.writeList(w, r, rel, capList(out, r.URL.Query(), 30), nil)
		return true
	}
	return false
}

func (s *Server) pullJSON(rp *repo, p Pull) map[string]any {
	revs, teams := []any{}, []any{}
	for _, l := range p.Reviewers {
		revs = append(revs, map[string]any{"login": l, "type": "User"})
	}
	for _, t := range p.Teams {
		teams = append(teams, map[string]any{"slug": t, "name": t})
	}
	return map[string]any{
		"number": p.Number, "title": p.Title, "state": "open", "draft": p.Draft, "locked": false,
		"html_url":   "https://github.com/" + rp.fullName + "/pull/" + strconv.Itoa(p.Number),
		"created_at": p.CreatedAt.UTC().Format(time.RFC3339), "updated_at": p.CreatedAt.UTC().Format(time.RFC3339),
		"user":                map[string]any{"login": p.Author, "type": "User"},
		"requested_reviewers": revs, "requested_teams": teams,
	}
}

// writeList answers a list with an ETag over its body, 304 on a match.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, rel string, v any, extra map[string]string) {
	body, _ := json.Marshal(v)
	sum := sha1.Sum(body)
	etag := `W/"` + hex.EncodeToString(sum[:]) + `"`
	s.rateHeaders(w, rel)
	w.Header().Set("ETag", etag)
	for k, v := range extra {
		w.Header().Set(k, v)
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && inm == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
