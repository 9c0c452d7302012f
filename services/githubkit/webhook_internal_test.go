package githubkit

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

func TestVerifySignature(t *testing.T) {
	secret, body := []byte("s3cret"), []byte(`{"zen":"x"}`)
	good := "sha256=" + hex.EncodeToString(Sign(secret, body))
	if !verifySignature(secret, body, good) {
		t.Fatal("good signature refused")
	}
	for name, c := range map[string]struct {
		secret []byte
		body   []byte
		header string
	}{
		"other body":   {secret, []byte(`{"zen":"y"}`), good},
		"other secret": {[]byte("other"), body, good},
		"empty secret": {nil, body, good},
		"no prefix":    {secret, body, strings.TrimPrefix(good, "sha256=")},
		"sha1":         {secret, body, "sha1=" + strings.TrimPrefix(good, "sha256=")},
		"not hex":      {secret, body, "sha256=zz"},
		"short":        {secret, body, good[:len(good)-2]},
		"missing":      {secret, body, ""},
	} {
		if verifySignature(c.secret, c.body, c.header) {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestWebhookEventFormats(t *testing.T) {
	cat, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	x := events.NewTexts(cat, "en_US")
	l := events.NewLinks("https://github.com", "o/r")
	push := `{"ref":"refs/heads/main","before":"1111111111111111111111111111111111111111","after":"2222222222222222222222222222222222222222",
		"commits":[{"id":"aaa","message":"first","distinct":true},{"id":"2222222222222222222222222222222222222222","message":"Fix the build\n\nbody","distinct":true}],
		"head_commit":{"id":"2222222222222222222222222222222222222222","message":"Fix the build\n\nbody"},
		"sender":{"login":"octocat"},"repository":{"id":7,"full_name":"o/r"}}`
	ev, ok := webhookEvent("push", []byte(push))
	if !ok || ev.Type != "PushEvent" || ev.Repo.Name != "o/r" || ev.Repo.ID != 7 {
		t.Fatalf("push: %+v %v", ev, ok)
	}
	if _, _, need := events.NeedsCompare(ev); need {
		t.Fatal("a webhook push with its head commit needs no compare")
	}
	line, ok := x.EventLine(ev, nil, l)
	if !ok || !strings.Contains(line, "octocat") || !strings.Contains(line, "2") || !strings.Contains(line, "Fix the build") || !strings.Contains(line, "main") {
		t.Fatalf("push line %q", line)
	}
	if Select([]ghclient.Event{{ID: "1", Type: ev.Type, Payload: ev.Payload}}, "0", []string{events.KindPush}, 5).Events == nil {
		t.Fatal("push filter does not select the webhook push")
	}
	// actions polling never reports are dropped
	for name, body := range map[string]string{
		"release":       `{"action":"created","release":{"tag_name":"v1"},"sender":{"login":"a"}}`,
		"issue_comment": `{"action":"edited","issue":{"number":1},"sender":{"login":"a"}}`,
		"ping":          `{"zen":"x","hook_id":1}`,
		"star":          `{"action":"created"}`,
	} {
		if _, ok := webhookEvent(name, []byte(body)); ok {
			t.Errorf("%s kept", name)
		}
	}
	rel, ok := webhookEvent("release", []byte(`{"action":"published","release":{"tag_name":"v1.2","name":"Big"},"sender":{"login":"a"}}`))
	if !ok {
		t.Fatal("published release dropped")
	}
	if line, _ := x.EventLine(rel, nil, l); !strings.Contains(line, "v1.2") {
		t.Fatalf("release line %q", line)
	}
	if _, ok := webhookEvent("push", []byte(`{not json`)); ok {
		t.Fatal("bad JSON kept")
	}
}

func TestWebhookRun(t *testing.T) {
	done := `{"action":"completed","workflow_run":{"id":9002,"name":"CI","head_branch":"main","head_sha":"aa218f5","status":"completed","conclusion":"failure","run_number":2,"run_attempt":1}}`
	run, ok := webhookRun("workflow_run", []byte(done))
	if !ok || run.ID != 9002 || run.Key() != "9002.1" || !run.Failed() || run.HeadBranch != "main" {
		t.Fatalf("completed run: %+v %v", run, ok)
	}
	for name, c := range map[string]struct{ event, body string }{
		"other event":  {"workflow_job", done},
		"requested":    {"workflow_run", strings.Replace(done, `"completed","workflow_run"`, `"requested","workflow_run"`, 1)},
		"not finished": {"workflow_run", strings.Replace(done, `"status":"completed"`, `"status":"in_progress"`, 1)},
		"no run":       {"workflow_run", `{"action":"completed"}`},
		"no id":        {"workflow_run", `{"action":"completed","workflow_run":{"status":"completed"}}`},
		"bad JSON":     {"workflow_run", `{"action":`},
	} {
		if _, ok := webhookRun(c.event, []byte(c.body)); ok {
			t.Errorf("%s mapped", name)
		}
	}
	if _, ok := webhookEvent("workflow_run", []byte(done)); ok {
		t.Error("a workflow_run is an event line too")
	}
}
