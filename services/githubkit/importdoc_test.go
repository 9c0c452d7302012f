package githubkit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/githubkit"
)

// originalDoc has the shape of the original plugin's stored document, with
// O/R plus o/r, a null last_event_id, a subscriber without a bot, an
// unknown kind and an invalid repo.
const originalDoc = `{
  "O/R": {
    "subscribers": {
      "group:123456": {"bot_uuid": "bot-1", "target_type": "group", "target_id": "123456",
        "events": ["push", "pull_request", "release"], "lang": "en_US", "added_at": "2025-01-02T03:04:05.678901+00:00"},
      "person:10001": {"bot_uuid": "", "target_type": "person", "target_id": "10001",
        "events": null, "lang": "zh_Hans", "added_at": "2025-01-03T03:04:05+00:00"}
    },
    "last_event_id": "45678901234"
  },
  "o/r": {
    "subscribers": {
      "group:777": {"bot_uuid": "bot-2", "target_type": "group", "target_id": 777,
        "events": ["pr_review", "gollum", "sponsorship"], "lang": "en_US", "added_at": "2025-01-01T00:00:00+00:00"}
    },
    "last_event_id": "99999999999"
  },
  "octocat/Hello-World": {
    "subscribers": {
      "person:1": {"bot_uuid": "bot-1", "target_type": "person", "target_id": "1", "events": [], "added_at": "bad"},
      "group:2": {"bot_uuid": "bot-1", "target_type": "channel", "target_id": "2", "events": null}
    },
    "last_event_id": null
  },
  "https://github.com/o/r/issues/5/x": {"subscribers": {}, "last_event_id": "1"},
  "bad repo/x": {"subscribers": {}, "last_event_id": null}
}`

func TestParseImport(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	plan, err := githubkit.ParseImport([]byte(originalDoc), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Records) != 2 {
		t.Fatalf("records %d, want 2", len(plan.Records))
	}
	or := plan.Records[0]
	if or.Key != githubkit.RepoKey("o/r") || or.Record.FullName != "O/R" || or.Merged != 3 {
		t.Fatalf("o/r record %+v", or)
	}
	if or.Record.Head == nil || *or.Record.Head != "99999999999" || or.Record.RepoID != nil {
		t.Fatalf("head %v", or.Record.Head)
	}
	subs := or.Record.Subscribers
	if len(subs) != 2 || subs[0].BotUUID != "bot-2" || subs[1].BotUUID != "bot-1" {
		t.Fatalf("subscribers %+v", subs)
	}
	if subs[0].TargetID != "777" || strings.Join(subs[0].Kinds, ",") != "review,wiki" || *subs[0].Cursor != "99999999999" || subs[0].Prefix != "" {
		t.Fatalf("bot-2 %+v", subs[0])
	}
	if strings.Join(subs[1].Kinds, ",") != "push,pull_request,release" || subs[1].AddedAt.Format(time.RFC3339Nano) != "2025-01-02T03:04:05.678901Z" {
		t.Fatalf("bot-1 %+v", subs[1])
	}
	hw := plan.Records[1].Record
	if hw.Head != nil || len(hw.Subscribers) != 1 || hw.Subscribers[0].Kinds != nil || hw.Subscribers[0].Cursor != nil || !hw.Subscribers[0].AddedAt.Equal(now) {
		t.Fatalf("hello-world %+v", hw)
	}
	notes := strings.Join(plan.Notes, "\n")
	for _, want := range []string{`"person:10001" skipped`, `"sponsorship" dropped`, `"group:2" skipped`, `repo "bad repo/x" skipped`} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

func TestParseImportRejects(t *testing.T) {
	for _, doc := range []string{``, `{`, `[]`, `"x"`, `{"o/r": 5}`, `{"o/r": {"subscribers": []}}`, `{} {}`, `{"o/r":{}} x`} {
		if _, err := githubkit.ParseImport([]byte(doc), time.Now()); !errors.Is(err, githubkit.ErrImport) {
			t.Errorf("%q: error %v, want ErrImport", doc, err)
		}
	}
	plan, err := githubkit.ParseImport([]byte(`{}`), time.Now())
	if err != nil || len(plan.Records) != 0 {
		t.Fatalf("empty: %+v %v", plan, err)
	}
}
