package githubkit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// TestFeatGolden: the review reminder and the personal messages in both
// languages (go test -run FeatGolden -update rewrites them).
func TestFeatGolden(t *testing.T) {
	now := time.Date(2027, 3, 10, 14, 30, 0, 0, time.UTC)
	list := []waitingPull{
		{Repo: "octocat/Hello-World", Number: 5, Title: "Older change", URL: "https://github.com/octocat/Hello-World/pull/5", Author: "carol",
			CreatedAt: now.Add(-75 * time.Hour), Reviewers: []string{"@core"}},
		{Repo: "octocat/Hello-World", Number: 7, Title: "Newer change", URL: "https://github.com/octocat/Hello-World/pull/7", Author: "alice",
			CreatedAt: now.Add(-5 * time.Hour), Reviewers: []string{"bob", "dave"}},
		{Repo: "octocat/Spoon-Knife", Number: 2, Title: "Fresh", URL: "https://github.com/octocat/Spoon-Knife/pull/2", Author: "erin",
			CreatedAt: now.Add(-20 * time.Minute), Reviewers: []string{"bob"}},
	}
	pr := ghclient.Event{Type: "PullRequestEvent", Actor: &struct {
		Login string `json:"login"`
	}{Login: "bob"}, Payload: json.RawMessage(`{"action":"review_requested","requested_reviewer":{"login":"alice-gh"},` +
		`"pull_request":{"number":42,"title":"Faster start","html_url":"https://github.com/team/app/pull/42"}}`)}
	assign := ghclient.Event{Type: "IssuesEvent", Actor: pr.Actor, Payload: json.RawMessage(`{"action":"assigned","assignee":{"login":"alice-gh"},` +
		`"issue":{"number":7,"title":"Crash","html_url":"https://github.com/team/app/issues/7"}}`)}
	mention := ghclient.Event{Type: "IssueCommentEvent", Actor: pr.Actor, Payload: json.RawMessage(`{"action":"created",` +
		`"issue":{"number":7,"title":"Crash","html_url":"https://github.com/team/app/issues/7"},` +
		`"comment":{"body":"cc @alice-gh","html_url":"https://github.com/team/app/issues/7#issuecomment-1"}}`)}
	for _, lang := range []string{i18n.EnUS, i18n.ZhHans} {
		x := testTexts(t, lang)
		checkGolden(t, lang, "reviews_reminder", x.reviewMessage(list, now))
		var lines []string
		for _, c := range []struct {
			e      ghclient.Event
			reason string
		}{{pr, reasonReview}, {assign, reasonAssign}, {mention, reasonMention}} {
			l, ok := x.personalLine(c.e, c.reason, "team/app")
			if !ok {
				t.Fatalf("%s: no line", c.reason)
			}
			lines = append(lines, l)
		}
		checkGolden(t, lang, "me_push", strings.Join(lines, "\n\n"))
	}
}

func TestParseReviewTime(t *testing.T) {
	for in, want := range map[string]int{"9:30": 570, "09:30": 570, "0:00": 0, "23:59": 1439, "9：05": 545} {
		if got, ok := parseReviewTime(in); !ok || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "9", "24:00", "9:60", "9:5", "930", "-1:30", "+9:30", "9:30pm", "a:bc"} {
		if got, ok := parseReviewTime(in); ok {
			t.Errorf("%q accepted as %d", in, got)
		}
	}
}

// TestNextReviewTime: the next occurrence in the zone, weekdays only when
// asked, and a time the spring-forward night skips moved forward.
func TestNextReviewTime(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no tzdata")
	}
	fri := time.Date(2027, 3, 12, 10, 0, 0, 0, ny)
	if got := nextReviewTime(fri, ny, 570, true); got.Format(time.RFC3339) != "2027-03-15T09:30:00-04:00" {
		t.Errorf("weekdays after Friday 10:00: %s", got)
	}
	if got := nextReviewTime(fri, ny, 570, false); got.Format(time.RFC3339) != "2027-03-13T09:30:00-05:00" {
		t.Errorf("daily after Friday 10:00: %s", got)
	}
	// 02:30 does not exist on 14 March 2027 in New York
	sat := time.Date(2027, 3, 13, 12, 0, 0, 0, ny)
	if got := nextReviewTime(sat, ny, 150, false); got.Format(time.RFC3339) != "2027-03-14T03:30:00-04:00" {
		t.Errorf("skipped 02:30: %s", got)
	}
	// exactly at the time: the next one
	at := time.Date(2027, 3, 10, 9, 30, 0, 0, ny)
	if got := nextReviewTime(at, ny, 570, false); !got.Equal(at.AddDate(0, 0, 1)) {
		t.Errorf("at the time: %s", got)
	}
}

// TestPersonalTargets: who an event concerns.
func TestPersonalTargets(t *testing.T) {
	ev := func(actor, payload string) ghclient.Event {
		return ghclient.Event{Type: "X", Actor: &struct {
			Login string `json:"login"`
		}{Login: actor}, Payload: json.RawMessage(payload)}
	}
	cases := []struct {
		name string
		e    ghclient.Event
		want string
	}{
		{"review", ev("bob", `{"action":"review_requested","requested_reviewer":{"login":"alice"},"pull_request":{"body":"@carol"}}`), "alice:review"},
		{"assign", ev("bob", `{"action":"assigned","assignee":{"login":"alice"},"issue":{}}`), "alice:assign"},
		{"self assign", ev("alice", `{"action":"assigned","assignee":{"login":"alice"},"issue":{}}`), ""},
		{"mentions", ev("bob", `{"action":"created","issue":{},"comment":{"body":"@alice, @carol-x and @alice again; mail a@b.com; team @org/team; x@y"}}`), "alice:mention carol-x:mention"},
		{"opened pr", ev("bob", `{"action":"opened","pull_request":{"body":"fixes it, @dave"}}`), "dave:mention"},
		{"edited issue", ev("bob", `{"action":"edited","issue":{"body":"@dave"}}`), ""},
		{"review body", ev("bob", `{"action":"submitted","review":{"body":"@erin look"},"pull_request":{}}`), "erin:mention"},
		{"bad payload", ev("bob", `[`), ""},
	}
	for _, c := range cases {
		var got []string
		for _, p := range personalTargets(c.e) {
			got = append(got, p.login+":"+p.reason)
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%s: %q, want %q", c.name, g, c.want)
		}
	}
}
