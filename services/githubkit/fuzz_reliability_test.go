package githubkit_test

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/events"
)

// Fuzz targets added by the reliability work (issue 9) for the parsers the
// existing fuzz_test.go leaves out: API URLs, issue numbers, user names and
// event filters. Seeds are in testdata/fuzz/<target>.

func FuzzParseAPIURL(f *testing.F) {
	for _, s := range []string{"https://api.github.com", "https://ghe.example.com/api/v3/", "http://127.0.0.1:8080",
		"https://user:pw@h/api", "https://h/api?x=1", "ftp://h", "https://", "//h/x", "https://h/#frag", "https://h:99999"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, allowHTTP bool) {
		got, err := githubkit.ParseAPIURL(raw, allowHTTP)
		if err != nil {
			return
		}
		u, perr := url.Parse(got)
		if perr != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(got, "/") {
			t.Fatalf("%q accepted as %q", raw, got)
		}
		if u.Scheme != "https" && !(allowHTTP && u.Scheme == "http") {
			t.Fatalf("%q accepted with scheme %q (allowHTTP %v)", raw, u.Scheme, allowHTTP)
		}
		if again, err := githubkit.ParseAPIURL(got, allowHTTP); err != nil || again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", raw, got, again, err)
		}
	})
}

func FuzzParseIssueNumber(f *testing.F) {
	for _, s := range []string{"1", "#1347", "0", "-1", "99999999999999999999", " 7", "1e3", "０１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := events.ParseIssueNumber(s)
		if !ok {
			return
		}
		if n <= 0 {
			t.Fatalf("%q gave %d", s, n)
		}
		if m, ok := events.ParseIssueNumber(strconv.Itoa(n)); !ok || m != n {
			t.Fatalf("round trip %d: %d %v", n, m, ok)
		}
	})
}

func FuzzParseUsername(f *testing.F) {
	for _, s := range []string{"octocat", "@octocat", "a-b", "-a", "a/b", "../x", strings.Repeat("a", 40), "ä"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, ok := events.ParseUsername(s)
		if !ok {
			return
		}
		// spec 3.2 only trims, strips '@' and bounds the length; the
		// caller path-escapes (TestUserPathEscape). The result is a fixed
		// point ("@ x" gives "x", "@ @" nothing).
		if u == "" || strings.HasPrefix(u, "@") || u != strings.TrimSpace(u) || utf8.RuneCountInString(u) > events.MaxUsernameRunes {
			t.Fatalf("%q accepted as %q", s, u)
		}
		if again, ok := events.ParseUsername(u); !ok || again != u {
			t.Fatalf("%q accepted as %q", s, u)
		}
	})
}

func FuzzParseFilters(f *testing.F) {
	for _, s := range []string{"push", "push issues pr", "PUSH push", "nope push", "", "release star fork"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		kinds, unknown := events.ParseFilters(strings.Fields(line))
		if len(unknown) > 0 && kinds != nil {
			t.Fatalf("%q: kinds %v with unknown %v", line, kinds, unknown)
		}
		seen := map[string]bool{}
		for _, k := range kinds {
			if seen[k] {
				t.Fatalf("%q: duplicate %q in %v", line, k, kinds)
			}
			seen[k] = true
		}
		if kinds != nil {
			again, u := events.ParseFilters(kinds)
			if len(u) > 0 || !slices.Equal(again, kinds) {
				t.Fatalf("canonical filters %v parse as %v %v", kinds, again, u)
			}
		}
	})
}
