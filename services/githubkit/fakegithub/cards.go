package fakegithub

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// The endpoints behind githubkit's link cards: a release by tag and one
// commit, and conditional requests on every single-item endpoint (the
// repository, one issue or pull request, a release, a commit): each
// answer carries an ETag over its body, and a matching If-None-Match is
// answered 304 with no body, as GitHub does.

var commitRE = regexp.MustCompile(`^/commits/([0-9a-fA-F]{7,40})$`)

// cardRoute answers the endpoints of this file and reports whether it did.
func (s *Server) cardRoute(w http.ResponseWriter, r *http.Request, rel string, rp *repo, rest string) bool {
	switch {
	case strings.HasPrefix(rest, "/releases/tags/"):
		tag, err := url.PathUnescape(strings.TrimPrefix(rest, "/releases/tags/"))
		if err != nil || tag == "" {
			s.writeError(w, http.StatusNotFound, "Not Found")
			return true
		}
		for _, it := range loadFixture("releases").([]any) {
			if it.(map[string]any)["tag_name"] == tag {
				s.writeJSONCond(w, r, rel, it)
				return true
			}
		}
		s.writeError(w, http.StatusNotFound, "Not Found")
		return true
	case commitRE.MatchString(rest):
		sha := strings.ToLower(commitRE.FindStringSubmatch(rest)[1])
		c := loadFixture("commit").(map[string]any)
		full, _ := c["sha"].(string)
		if len(sha) == 40 {
			full = sha
		} else if !strings.HasPrefix(full, sha) {
			// a short sha names the fixture's commit or none
			s.writeError(w, http.StatusUnprocessableEntity, "No commit found for SHA: "+sha)
			return true
		}
		s.mu.Lock()
		name := rp.fullName
		s.mu.Unlock()
		c["sha"] = full
		c["html_url"] = "https://github.com/" + name + "/commit/" + full
		s.writeJSONCond(w, r, rel, c)
		return true
	}
	return false
}

// writeJSONCond is writeJSON with an ETag over the body, answering a
// matching If-None-Match with 304.
func (s *Server) writeJSONCond(w http.ResponseWriter, r *http.Request, rel string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.writeError(w, http.StatusInternalServerError, "fixture")
		return
	}
	sum := sha1.Sum(b)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	s.rateHeaders(w, rel)
	w.Header().Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && inm == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
