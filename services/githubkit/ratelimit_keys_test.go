package githubkit_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// TestRateLimitKeptPerCredentialAndAddress: a rate-limit block recorded
// for one installation without a token stops only the polls that share
// its limit (no token, the same GitHub address); a tokenless installation
// on another GitHub address and a token installation on the same address
// still poll (issue 33: before, one block stopped every tokenless
// installation whatever its address).
func TestRateLimitKeptPerCredentialAndAddress(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	other := fakegithub.New(fakegithub.Options{})
	t.Cleanup(other.Close)
	cfg := func(api, token string) map[string]any {
		return map[string]any{"language": "en_US", "github_token": token, "github_api_url": api, "poll_interval": 120}
	}
	a := newInst(t, "a", cfg(h.fake.URL, ""))    // blocked
	same := newInst(t, "s", cfg(h.fake.URL, "")) // shares a's anonymous limit
	far := newInst(t, "f", cfg(other.URL, ""))   // anonymous, another GitHub
	tok := newInst(t, "t", cfg(h.fake.URL, "token-t"))
	for _, in := range []*inst{a, same, far, tok} {
		h.attach(in, true)
		h.cmd(in, "sub "+hw)
	}
	reset := h.clock.Now().Add(30 * time.Minute).Truncate(time.Second)
	h.fake.Inject(fakegithub.Fault{Path: "/repos/" + hw + "/events", Status: 403, Times: 1,
		Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(reset.Unix(), 10)}},
		Body:   `{"message":"API rate limit exceeded"}`})
	h.fire(a, hw)
	if nb := h.record(a, hw).Poll.NotBefore; nb == nil {
		t.Fatal("the rate limit was not recorded")
	}
	h.fake.ResetRequests()
	other.ResetRequests()

	h.fire(same, hw)
	if n := len(h.fake.Requests()); n != 0 {
		t.Fatalf("a tokenless installation on the blocked address sent %d requests; want 0 (it shares the limit)", n)
	}
	h.fire(far, hw)
	if n := len(other.Requests()); n == 0 {
		t.Fatal("a tokenless installation on another GitHub address was stopped by the block")
	}
	h.fire(tok, hw)
	reqs := h.fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("a token installation was stopped by the anonymous limit")
	}
	for _, r := range reqs {
		if r.Authorization == "" {
			t.Fatalf("a tokenless request went out while blocked: %+v", r)
		}
	}
}
