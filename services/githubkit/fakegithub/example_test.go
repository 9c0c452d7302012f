package fakegithub_test

import (
	"fmt"
	"net/http"

	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// A renamed repository answers its old path with a 301 to the repository
// id, and every request is recorded.
func Example() {
	s := fakegithub.New(fakegithub.Options{BasePath: "/api/v3"})
	defer s.Close()
	s.AddRepo("octo/old", 42)
	s.Rename("octo/old", "octo/new")
	s.AddEvents("octo/new", fakegithub.Event("push_full", 1001))

	resp, err := http.Get(s.URL + "/repos/octo/old/events?per_page=100")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("X-Poll-Interval"), resp.Header.Get("ETag") != "")
	for _, r := range s.Requests() {
		fmt.Println(r.Method, r.Path)
	}
	// Output:
	// 200 60 true
	// GET /api/v3/repos/octo/old/events
	// GET /api/v3/repositories/42/events
}
