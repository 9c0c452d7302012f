package events_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/services/githubkit/events"
)

func TestParseLinks(t *testing.T) {
	cases := []struct {
		text, apiHost string
		want          []string // Link.Key()s
	}{
		{"see https://github.com/Octo/Hello-World.", "", []string{"repo:octo/hello-world"}},
		{"HTTP://WWW.GITHUB.COM/o/r/issues/5?x=1#c", "", []string{"issue:o/r#5"}},
		{"github.com/o/r/pull/5/files and https://github.com/o/r/issues/5", "", []string{"issue:o/r#5"}},
		{"(https://github.com/o/r/releases/tag/v1.2)", "", []string{"release:o/r@v1.2"}},
		{"https://github.com/o/r/releases/tag/release%2Fv1", "", []string{"release:o/r@release/v1"}},
		{"https://github.com/o/r/commit/ABCDEF1234567", "", []string{"commit:o/r@abcdef1234567"}},
		{"https://github.com/o/r.git, https://github.com/o/r", "", []string{"repo:o/r"}},
		{"notgithub.com/o/r evil.com/github.com/o/r https://github.com.evil.com/o/r", "", nil},
		{"https://gitlab.com/o/r https://github.com/features/actions https://github.com/o", "", nil},
		{"https://github.com/o/r/blob/main/x.go https://github.com/o/r/issues/0 https://github.com/o/r/commit/xyz", "", nil},
		{"https://ghe.example.com/o/r/pull/7", "ghe.example.com", []string{"issue:o/r#7"}},
		{"https://ghe.example.com/o/r/pull/7", "", nil},
		{"a github.com/a/1 github.com/a/2 github.com/a/3 github.com/a/4", "", []string{"repo:a/1", "repo:a/2", "repo:a/3"}},
		{"中文https://github.com/o/r。好", "", []string{"repo:o/r"}},
	}
	for _, c := range cases {
		var got []string
		for _, l := range events.ParseLinks(c.text, c.apiHost) {
			got = append(got, l.Key())
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("ParseLinks(%q, %q) = %v, want %v", c.text, c.apiHost, got, c.want)
		}
	}
}

// FuzzParseLinks: never panics, at most MaxCardsPerMessage links, each a
// valid repository with a distinct key.
func FuzzParseLinks(f *testing.F) {
	for _, s := range []string{"https://github.com/o/r", "github.com/o/r/issues/1", "www.github.com/o/r/releases/tag/v1",
		"https://github.com/o/r/commit/abcdef0", "https://github.com/o/r/pull/2#x", "x github.com/a/b, github.com/a/b."} {
		f.Add(s, "")
	}
	f.Add("https://ghe.example.com/o/r", "ghe.example.com")
	f.Fuzz(func(t *testing.T, text, apiHost string) {
		links := events.ParseLinks(text, apiHost)
		if len(links) > events.MaxCardsPerMessage {
			t.Fatalf("%d links", len(links))
		}
		seen := map[string]bool{}
		for _, l := range links {
			if _, err := events.ParseRepo(l.Repo.String(), ""); err != nil || seen[l.Key()] || !utf8.ValidString(l.Tag) {
				t.Fatalf("bad link %+v", l)
			}
			seen[l.Key()] = true
		}
	})
}
