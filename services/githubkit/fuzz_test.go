package githubkit_test

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/events"
)

var validRepo = regexp.MustCompile(`^[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}$`)

func FuzzParseRepo(f *testing.F) {
	for _, s := range []string{"o/r", "https://github.com/o/r/issues/5", "github.com/o/r.git", "www.github.com/o/r",
		"o/..", "o/r#x", "https://ghe.example.com/o/r", "ö/r", "", "http://[::1]/o/r", "github.com//o/r", "o/r.GIT"} {
		f.Add(s, "")
		f.Add(s, "ghe.example.com")
	}
	f.Fuzz(func(t *testing.T, in, host string) {
		r, err := events.ParseRepo(in, host)
		if err != nil {
			if strings.TrimSpace(in) == "" && err != events.ErrEmptyRepo {
				t.Fatalf("empty input gave %v", err)
			}
			return
		}
		s := r.String()
		// Independent oracle: the result is a valid owner/repo.
		if !validRepo.MatchString(s) || r.Name == "." || r.Name == ".." {
			t.Fatalf("ParseRepo(%q) = %q, not a valid repository", in, s)
		}
		// Round trip: the plain form parses to itself.
		again, err := events.ParseRepo(s, "")
		if err != nil && !strings.HasSuffix(strings.ToLower(s), ".git") {
			t.Fatalf("round trip of %q: %v", s, err)
		}
		if err == nil && again != r && !strings.HasSuffix(strings.ToLower(s), ".git") {
			t.Fatalf("round trip %q -> %q", s, again)
		}
		// The key decodes to the lower-cased name and is subject-safe.
		k := githubkit.RepoKey(r.String())
		b, err := base64.RawURLEncoding.DecodeString(k)
		if err != nil || string(b) != strings.ToLower(s) || strings.ContainsAny(k, ".*> \t") {
			t.Fatalf("key %q of %q", k, s)
		}
	})
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"", "gh", "repo o/r", "GH Sub o/r push", "issues\to/r\nclosed", "\u3000r x", "frob", "pr o/r #5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		p := events.ParseCommand(strings.Split(line, " "))
		canonical := []string{"repo", "issues", "prs", "issue", "releases", "user", "search", "sub", "unsub", "subs", "help"}
		if !slices.Contains(canonical, p.Sub) {
			t.Fatalf("sub %q", p.Sub)
		}
		for _, a := range p.Args {
			if a == "" || strings.ContainsFunc(a, unicode.IsSpace) {
				t.Fatalf("arg %q", a)
			}
		}
		if p.Sub == "help" && len(p.Args) > 0 {
			// help from an unknown word carries no args; "help x" keeps x
			if w := strings.Fields(line); len(w) == 0 {
				t.Fatalf("args %q with no words", p.Args)
			}
		}
		// Round trip: the canonical form parses to the same thing.
		again := events.ParseCommand(append([]string{p.Sub}, p.Args...))
		if p.Sub != "help" && (again.Sub != p.Sub || !slices.Equal(again.Args, p.Args)) {
			t.Fatalf("round trip %+v -> %+v", p, again)
		}
		pre := plugin.CommandPrefix(plugin.TypedPrefix(githubkit.CommandWord, "", line), "")
		if n := utf8.RuneCountInString(pre); n < 1 || n > 3 || strings.ContainsFunc(pre, unicode.IsSpace) {
			t.Fatalf("prefix %q", pre)
		}
	})
}

func FuzzNormalizeSettings(f *testing.F) {
	for _, s := range []string{`{}`, `{"poll_interval":"90"}`, `{"poll_interval":1e400}`, `{"max_events_per_push":-1}`,
		`{"github_api_url":"https://x/api/v3/"}`, `{"language":null,"subscribe_requires_admin":"TRUE"}`, `[]`, `x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, warns := githubkit.NormalizeSettings(json.RawMessage(raw), false)
		if s.PollInterval < 60 || s.PollInterval > 3600 || s.MaxEventsPerPush < 1 || s.MaxEventsPerPush > 30 || s.Language == "" {
			t.Fatalf("out of bounds: %+v", s)
		}
		if s.APIErr == nil && !strings.HasPrefix(s.APIURL, "https://") {
			t.Fatalf("accepted %q", s.APIURL)
		}
		for _, w := range warns {
			if w.Field == "" || strings.Contains(w.Reason, s.Token) && s.Token != "" {
				t.Fatalf("warning %+v", w)
			}
		}
	})
}

func FuzzParseImport(f *testing.F) {
	f.Add(originalDoc)
	f.Add(`{}`)
	f.Add(`{"o/r":{"subscribers":{"g:1":{"bot_uuid":"b","target_type":"group","target_id":1}},"last_event_id":5}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		plan, err := githubkit.ParseImport([]byte(doc), time.Unix(0, 0))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, r := range plan.Records {
			if seen[r.Key] || r.Key != githubkit.RepoKey(r.Record.FullName) {
				t.Fatalf("record key %q for %q", r.Key, r.Record.FullName)
			}
			seen[r.Key] = true
			if len(r.Record.Subscribers) > 0 && r.Record.Subscribers[0].Prefix != "" {
				t.Fatal("prefix")
			}
			for _, s := range r.Record.Subscribers {
				if s.BotUUID == "" || s.TargetID == "" || (s.TargetType != "group" && s.TargetType != "person") {
					t.Fatalf("subscriber %+v", s)
				}
				if s.Kinds != nil && len(s.Kinds) == 0 {
					t.Fatal("empty kinds")
				}
			}
		}
	})
}
