package fakegithub

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed testdata/*.json
var fixtures embed.FS

// MaxEvents is how many events the events endpoint keeps per repository, as
// GitHub does (300 events, at most 100 per page).
const MaxEvents = 300

// DefaultRepo is the repository every Server knows from the start.
const DefaultRepo = "octocat/Hello-World"

// DefaultRepoID is DefaultRepo's id.
const DefaultRepoID = 1296269

// Options configure a Server. The zero value is a plain HTTP server at the
// root path with X-Poll-Interval 60.
type Options struct {
	// BasePath puts the API under a path, such as "/api/v3".
	BasePath string
	// TLS serves HTTPS (httptest's self-signed certificate; use Client).
	TLS bool
	// PollInterval is the X-Poll-Interval of events responses; 0 = 60.
	PollInterval int
	// AutoRepos creates any well-formed repository on first access, with
	// the default fixtures. Without it only added repositories exist.
	AutoRepos bool
	// AutoEvents, when > 0, adds one new event to a repository's feed on an
	// events request when at least this long has passed since the last one
	// it added (no goroutine: the feed grows lazily). For the dev stack.
	AutoEvents time.Duration
	// Now is the clock; nil = time.Now.
	Now func() time.Time
}

// Request is one recorded request.
type Request struct {
	Method string
	// Path is the escaped path, base path included.
	Path          string
	Query         url.Values
	Authorization string
	IfNoneMatch   string
	UserAgent     string
	APIVersion    string // X-GitHub-Api-Version
	Host          string
}

// Fault changes the answer of matching requests.
type Fault struct {
	// Path is a path prefix relative to the base path ("/repos/o/r/events");
	// "" matches every request.
	Path string
	// Status, Header and Body make the answer (Body defaults to a GitHub-style
	// JSON error for non-2xx statuses). Only Header's headers are sent: no
	// rate-limit headers unless it has them.
	Status int
	Header http.Header
	Body   string
	// Delay holds the answer back (the request's context still ends it).
	Delay time.Duration
	// Hold holds the answer back until it is closed (the request's
	// context still ends it): a test that needs a request in flight
	// releases it when it is done looking, whatever the machine's load.
	Hold <-chan struct{}
	// Reset closes the connection without answering.
	Reset bool
	// RedirectTo answers with a redirect (Status, default 302) to this
	// absolute URL, typically on another host.
	RedirectTo string
	// Oversize answers 200 with a body over 5 MiB.
	Oversize bool
	// Times is how many requests the fault applies to; 0 = until cleared.
	Times int
}

type repo struct {
	fullName     string
	id           int64
	events       []map[string]any // oldest first
	pollInterval int
	lastAuto     time.Time
	runs         []WorkflowRun
}

type override struct {
	status int
	body   string
}

// Server is a running fake GitHub. Its methods are safe for concurrent use.
type Server struct {
	// URL is the API root: scheme, host and base path, no trailing slash.
	URL string

	srv  *httptest.Server
	opts Options

	mu        sync.Mutex
	repos     map[string]*repo // by lower(full_name)
	byID      map[int64]*repo
	renamed   map[string]int64 // lower(old full_name) -> id
	faults    []*Fault
	overrides map[string]override
	requests  []Request
	remaining int
	reset     time.Time
	nextID    int64
	nextRepo  int64
	autoIdx   int
	ext       extState // feat.go
}

// New starts a Server. Close it when done.
func New(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 60
	}
	opts.BasePath = strings.TrimRight(opts.BasePath, "/")
	s := &Server{
		opts:      opts,
		repos:     make(map[string]*repo),
		byID:      make(map[int64]*repo),
		renamed:   make(map[string]int64),
		overrides: make(map[string]override),
		remaining: 4999,
		nextID:    40000000000,
		nextRepo:  700000000,
	}
	s.reset = opts.Now().Add(time.Hour)
	s.AddRepo(DefaultRepo, DefaultRepoID)
	if opts.TLS {
		s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	} else {
		s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	}
	s.URL = s.srv.URL + opts.BasePath
	return s
}

// Close shuts the server down and waits for its handlers.
func (s *Server) Close() { s.srv.Close() }

// Client returns an HTTP client that trusts the server's certificate.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Host returns the server's host:port.
func (s *Server) Host() string {
	u, _ := url.Parse(s.srv.URL)
	return u.Host
}

// AddRepo makes a repository exist (id 0 picks one). Adding an existing name
// keeps its events.
func (s *Server) AddRepo(fullName string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addRepoLocked(fullName, id)
}

func (s *Server) addRepoLocked(fullName string, id int64) *repo {
	if r, ok := s.repos[strings.ToLower(fullName)]; ok {
		return r
	}
	if id == 0 {
		s.nextRepo++
		id = s.nextRepo
	}
	r := &repo{fullName: fullName, id: id}
	s.repos[strings.ToLower(fullName)] = r
	s.byID[id] = r
	return r
}

// Rename renames a repository; its old path then answers 301.
func (s *Server) Rename(oldFull, newFull string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.repos[strings.ToLower(oldFull)]
	if !ok {
		return
	}
	delete(s.repos, strings.ToLower(oldFull))
	r.fullName = newFull
	s.repos[strings.ToLower(newFull)] = r
	s.renamed[strings.ToLower(oldFull)] = r.id
}

// SetPollInterval sets the X-Poll-Interval header of a repository's events
// responses (0 = the server default).
func (s *Server) SetPollInterval(fullName string, seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addRepoLocked(fullName, 0).pollInterval = seconds
}

// SetRateLimit sets the X-RateLimit-Remaining and -Reset headers.
func (s *Server) SetRateLimit(remaining int, reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remaining, s.reset = remaining, reset
}

// NextEventID returns a fresh event id, larger than every id it returned before.
func (s *Server) NextEventID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return s.nextID
}

// AddEvents appends events (oldest first) to a repository's feed, creating
// the repository when needed. Each event must have an id.
func (s *Server) AddEvents(fullName string, events ...json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.addRepoLocked(fullName, 0)
	for _, raw := range events {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			panic(fmt.Sprintf("fakegithub: bad event: %v", err))
		}
		r.events = append(r.events, m)
		if id, err := strconv.ParseInt(fmt.Sprint(m["id"]), 10, 64); err == nil && id > s.nextID {
			s.nextID = id
		}
	}
	if n := len(r.events); n > MaxEvents {
		r.events = slices.Clone(r.events[n-MaxEvents:])
	}
}

// ClearEvents empties a repository's feed.
func (s *Server) ClearEvents(fullName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.repos[strings.ToLower(fullName)]; ok {
		r.events = nil
	}
}

// Inject adds a fault; faults are tried in the order added.
func (s *Server) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fc := f
	s.faults = append(s.faults, &fc)
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// SetResponse makes an exact path (relative to the base path) answer with
// status and body, a JSON document. An empty body removes the override.
func (s *Server) SetResponse(path string, status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if body == "" {
		delete(s.overrides, path)
		return
	}
	s.overrides[path] = override{status: status, body: body}
}

// Requests returns a copy of the recorded requests, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// Count returns how many recorded requests match.
func (s *Server) Count(match func(Request) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if match == nil || match(r) {
			n++
		}
	}
	return n
}

// PathPrefix returns a matcher for Count: requests whose path, relative to
// the base path, starts with prefix.
func (s *Server) PathPrefix(prefix string) func(Request) bool {
	full := s.opts.BasePath + prefix
	return func(r Request) bool { return strings.HasPrefix(r.Path, full) }
}

var (
	reposRE = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)(/.*)?$`)
	byIDRE  = regexp.MustCompile(`^/repositories/([0-9]+)(/.*)?$`)
	usersRE = regexp.MustCompile(`^/users/([^/]+)$`)
	loginRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,39}$`)
	numRE   = regexp.MustCompile(`^/(issues|pulls)/([0-9]+)$`)
	cmpRE   = regexp.MustCompile(`^/compare/([^.]+)\.\.\.(.+)$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	s.mu.Lock()
	s.requests = append(s.requests, Request{
		Method: r.Method, Path: path, Query: r.URL.Query(),
		Authorization: r.Header.Get("Authorization"), IfNoneMatch: r.Header.Get("If-None-Match"),
		UserAgent: r.Header.Get("User-Agent"), APIVersion: r.Header.Get("X-GitHub-Api-Version"), Host: r.Host,
	})
	rel, ok := strings.CutPrefix(path, s.opts.BasePath)
	if !ok || (s.opts.BasePath != "" && rel != "" && rel[0] != '/') {
		s.mu.Unlock()
		s.writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	f := s.matchFaultLocked(rel)
	ov, hasOv := s.overrides[rel]
	s.mu.Unlock()

	if f != nil {
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if f.Hold != nil {
			select {
			case <-f.Hold:
			case <-r.Context().Done():
				return
			}
		}
		if s.applyFault(w, f) {
			return
		}
	}
	if r.Method != http.MethodGet {
		s.writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if hasOv {
		s.rateHeaders(w, rel)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(ov.status)
		_, _ = w.Write([]byte(ov.body))
		return
	}
	s.route(w, r, rel)
}

func (s *Server) matchFaultLocked(rel string) *Fault {
	for i, f := range s.faults {
		if f.Path != "" && !strings.HasPrefix(rel, f.Path) {
			continue
		}
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				s.faults = slices.Delete(slices.Clone(s.faults), i, i+1)
			}
		}
		c := *f
		return &c
	}
	return nil
}

// applyFault answers per the fault and reports whether it did; a fault with
// only a Delay or a Hold lets the normal answer follow.
func (s *Server) applyFault(w http.ResponseWriter, f *Fault) bool {
	switch {
	case f.Reset:
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("fakegithub: cannot hijack")
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return true
	case f.RedirectTo != "":
		st := f.Status
		if st == 0 {
			st = http.StatusFound
		}
		w.Header().Set("Location", f.RedirectTo)
		w.WriteHeader(st)
		return true
	case f.Oversize:
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat(" ", 64<<10))
		_, _ = w.Write([]byte("["))
		for range (5<<20)/len(chunk) + 2 {
			if _, err := w.Write(chunk); err != nil {
				return true
			}
		}
		_, _ = w.Write([]byte("]"))
		return true
	case f.Status != 0:
		for k, vs := range f.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		body := f.Body
		if body == "" && f.Status >= 300 {
			body = errorBody(http.StatusText(f.Status))
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
		}
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(body))
		return true
	}
	return false
}

func errorBody(msg string) string {
	b, _ := json.Marshal(map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
	return string(b)
}

func (s *Server) writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(errorBody(msg)))
}

func (s *Server) rateHeaders(w http.ResponseWriter, rel string) {
	s.mu.Lock()
	rem, reset := s.remaining, s.reset
	s.mu.Unlock()
	h := w.Header()
	res := "core"
	if strings.HasPrefix(rel, "/search/") {
		res = "search"
	}
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", strconv.Itoa(rem))
	h.Set("X-RateLimit-Used", strconv.Itoa(5000-rem))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", res)
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
}

func (s *Server) writeJSON(w http.ResponseWriter, rel string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.writeError(w, http.StatusInternalServerError, "fixture")
		return
	}
	s.rateHeaders(w, rel)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, rel string) {
	switch {
	case rel == "/search/repositories":
		s.search(w, r, rel)
	case usersRE.MatchString(rel):
		s.user(w, rel)
	case s.orgRoute(w, r, rel):
	case byIDRE.MatchString(rel):
		m := byIDRE.FindStringSubmatch(rel)
		id, _ := strconv.ParseInt(m[1], 10, 64)
		s.mu.Lock()
		rp := s.byID[id]
		s.mu.Unlock()
		if rp == nil {
			s.writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		s.repoRoute(w, r, rel, rp, m[2])
	case reposRE.MatchString(rel):
		m := reposRE.FindStringSubmatch(rel)
		o, _ := url.PathUnescape(m[1])
		n, _ := url.PathUnescape(m[2])
		key := strings.ToLower(o + "/" + n)
		s.mu.Lock()
		rp := s.repos[key]
		if rp == nil && s.opts.AutoRepos && loginRE.MatchString(o) && validRepoName(n) {
			rp = s.addRepoLocked(o+"/"+n, 0)
		}
		id, moved := s.renamed[key]
		s.mu.Unlock()
		if rp == nil && moved {
			loc := s.opts.BasePath + "/repositories/" + strconv.FormatInt(id, 10) + m[3]
			if r.URL.RawQuery != "" {
				loc += "?" + r.URL.RawQuery
			}
			s.rateHeaders(w, rel)
			w.Header().Set("Location", loc)
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusMovedPermanently)
			_, _ = fmt.Fprintf(w, `{"message":"Moved Permanently","url":%q,"documentation_url":"https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects"}`, loc)
			return
		}
		if rp == nil {
			s.writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		s.repoRoute(w, r, rel, rp, m[3])
	default:
		s.writeError(w, http.StatusNotFound, "Not Found")
	}
}

var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)

func validRepoName(n string) bool { return repoNameRE.MatchString(n) && n != "." && n != ".." }

func loadFixture(name string) any {
	b, err := fixtures.ReadFile("testdata/" + name + ".json")
	if err != nil {
		panic("fakegithub: missing fixture " + name)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		panic("fakegithub: bad fixture " + name + ": " + err.Error())
	}
	return v
}

func (s *Server) repoJSON(rp *repo) map[string]any {
	m := loadFixture("repo").(map[string]any)
	owner, name, _ := strings.Cut(rp.fullName, "/")
	m["id"] = rp.id
	m["name"] = name
	m["full_name"] = rp.fullName
	m["owner"].(map[string]any)["login"] = owner
	m["html_url"] = "https://github.com/" + rp.fullName
	m["url"] = s.URL + "/repos/" + rp.fullName
	return m
}

func (s *Server) repoRoute(w http.ResponseWriter, r *http.Request, rel string, rp *repo, rest string) {
	if s.cardRoute(w, r, rel, rp, rest) || s.featRoute(w, r, rel, rp, rest) {
		return
	}
	q := r.URL.Query()
	switch {
	case rest == "" || rest == "/":
		s.mu.Lock()
		m := s.repoJSON(rp)
		s.mu.Unlock()
		s.writeJSONCond(w, r, rel, m)
	case rest == "/issues":
		s.writeJSON(w, rel, filterState(loadFixture("issues").([]any), q))
	case rest == "/pulls":
		s.writeJSON(w, rel, filterState(loadFixture("pulls").([]any), q))
	case rest == "/releases":
		list := loadFixture("releases").([]any)
		s.writeJSON(w, rel, capList(list, q, 30))
	case rest == "/events":
		s.events(w, r, rel, rp)
	case rest == "/actions/runs":
		s.runs(w, r, rel, rp)
	case numRE.MatchString(rest):
		m := numRE.FindStringSubmatch(rest)
		for _, it := range loadFixture(m[1]).([]any) {
			if fmt.Sprint(it.(map[string]any)["number"]) == m[2] {
				s.writeJSONCond(w, r, rel, it)
				return
			}
		}
		s.writeError(w, http.StatusNotFound, "Not Found")
	case cmpRE.MatchString(rest):
		m := cmpRE.FindStringSubmatch(rest)
		c := loadFixture("compare").(map[string]any)
		commits := c["commits"].([]any)
		commits[len(commits)-1].(map[string]any)["sha"] = m[2]
		c["base_commit"].(map[string]any)["sha"] = m[1]
		s.writeJSON(w, rel, c)
	default:
		s.writeError(w, http.StatusNotFound, "Not Found")
	}
}

func capList(list []any, q url.Values, def int) []any {
	n := def
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		n = min(v, 100)
	}
	if len(list) > n {
		list = list[:n]
	}
	if list == nil {
		list = []any{}
	}
	return list
}

func filterState(list []any, q url.Values) []any {
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	out := []any{}
	for _, it := range list {
		if state == "all" || it.(map[string]any)["state"] == state {
			out = append(out, it)
		}
	}
	return capList(out, q, 30)
}

func (s *Server) user(w http.ResponseWriter, rel string) {
	m := usersRE.FindStringSubmatch(rel)
	login, err := url.PathUnescape(m[1])
	if err != nil || !loginRE.MatchString(login) {
		s.writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	u := loadFixture("user").(map[string]any)
	if !strings.EqualFold(login, "octocat") {
		u["login"] = login
		u["name"] = nil
		u["bio"] = "Writes code for " + login + "."
		u["html_url"] = "https://github.com/" + login
	}
	s.writeJSON(w, rel, u)
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, rel string) {
	q := r.URL.Query()
	if strings.TrimSpace(q.Get("q")) == "" {
		s.writeError(w, http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	res := loadFixture("search").(map[string]any)
	res["items"] = capList(res["items"].([]any), q, 30)
	s.writeJSON(w, rel, res)
}

var autoKinds = []string{"push_full", "issue_opened", "pr_opened_full", "release_full", "watch", "push_trimmed"}

func (s *Server) events(w http.ResponseWriter, r *http.Request, rel string, rp *repo) {
	q := r.URL.Query()
	per := 30
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		per = min(v, 100)
	}
	page := 1
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v > 0 {
		page = v
	}

	s.mu.Lock()
	if s.opts.AutoEvents > 0 {
		now := s.opts.Now()
		if now.Sub(rp.lastAuto) >= s.opts.AutoEvents {
			rp.lastAuto = now
			s.nextID++
			var m map[string]any
			_ = json.Unmarshal(Event(autoKinds[s.autoIdx%len(autoKinds)], s.nextID), &m)
			s.autoIdx++
			rp.events = append(rp.events, m)
			if len(rp.events) > MaxEvents {
				rp.events = slices.Clone(rp.events[1:])
			}
		}
	}
	total := len(rp.events)
	start := (page - 1) * per
	var out []any
	for i := start; i < start+per && i < total; i++ {
		ev := rp.events[total-1-i]
		c := make(map[string]any, len(ev)+1)
		for k, v := range ev {
			c[k] = v
		}
		c["repo"] = map[string]any{"id": rp.id, "name": rp.fullName, "url": s.URL + "/repos/" + rp.fullName}
		out = append(out, c)
	}
	interval := s.opts.PollInterval
	if rp.pollInterval > 0 {
		interval = rp.pollInterval
	}
	base := s.URL + strings.TrimPrefix(rel, s.opts.BasePath)
	s.mu.Unlock()

	if out == nil {
		out = []any{}
	}
	body, _ := json.Marshal(out)
	sum := sha1.Sum(body)
	etag := `W/"` + hex.EncodeToString(sum[:]) + `"`
	s.rateHeaders(w, rel)
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("X-Poll-Interval", strconv.Itoa(interval))
	h.Set("Cache-Control", "private, max-age=60, s-maxage=60")
	last := (total + per - 1) / per
	if last > 1 {
		var links []string
		if page < last {
			links = append(links, fmt.Sprintf(`<%s?per_page=%d&page=%d>; rel="next"`, base, per, page+1))
			links = append(links, fmt.Sprintf(`<%s?per_page=%d&page=%d>; rel="last"`, base, per, last))
		}
		if page > 1 {
			links = append(links, fmt.Sprintf(`<%s?per_page=%d&page=%d>; rel="prev"`, base, per, page-1))
			links = append(links, fmt.Sprintf(`<%s?per_page=%d&page=1>; rel="first"`, base, per))
		}
		if len(links) > 0 {
			h.Set("Link", strings.Join(links, ", "))
		}
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && inm == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
