package githubkit

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestVerifySignature(t *testing.T) {
	secret, body := []byte("s3cret"), []byte(`{"zen":"x"}`)
	good := "sha256=" + hex.EncodeToString(Sign(secret, body))
	if !VerifySignature(secret, body, good) {
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
		if VerifySignature(c.secret, c.body, c.header) {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestWebhookEventFormats(t *testing.T) {
	cat, err := LoadCatalog()
	if err != nil {
		t.Fatal(err)
	}
	x := texts{cat: cat, lang: "en_US"}
	l := links{web: "https://github.com", repo: "o/r"}
	push := `{"ref":"refs/heads/main","before":"1111111111111111111111111111111111111111","after":"2222222222222222222222222222222222222222",
		"commits":[{"id":"aaa","message":"first","distinct":true},{"id":"2222222222222222222222222222222222222222","message":"Fix the build\n\nbody","distinct":true}],
		"head_commit":{"id":"2222222222222222222222222222222222222222","message":"Fix the build\n\nbody"},
		"sender":{"login":"octocat"},"repository":{"id":7,"full_name":"o/r"}}`
	ev, ok := WebhookEvent("push", []byte(push))
	if !ok || ev.Type != "PushEvent" || ev.Repo.Name != "o/r" || ev.Repo.ID != 7 {
		t.Fatalf("push: %+v %v", ev, ok)
	}
	if _, _, need := ev.needsCompare(); need {
		t.Fatal("a webhook push with its head commit needs no compare")
	}
	line, ok := x.eventLine(ev, nil, l)
	if !ok || !strings.Contains(line, "octocat") || !strings.Contains(line, "2") || !strings.Contains(line, "Fix the build") || !strings.Contains(line, "main") {
		t.Fatalf("push line %q", line)
	}
	if Select([]Event{{ID: "1", Type: ev.Type, Payload: ev.Payload}}, "0", []string{KindPush}, 5).Events == nil {
		t.Fatal("push filter does not select the webhook push")
	}
	// actions polling never reports are dropped
	for name, body := range map[string]string{
		"release":       `{"action":"created","release":{"tag_name":"v1"},"sender":{"login":"a"}}`,
		"issue_comment": `{"action":"edited","issue":{"number":1},"sender":{"login":"a"}}`,
		"ping":          `{"zen":"x","hook_id":1}`,
		"star":          `{"action":"created"}`,
	} {
		if _, ok := WebhookEvent(name, []byte(body)); ok {
			t.Errorf("%s kept", name)
		}
	}
	rel, ok := WebhookEvent("release", []byte(`{"action":"published","release":{"tag_name":"v1.2","name":"Big"},"sender":{"login":"a"}}`))
	if !ok {
		t.Fatal("published release dropped")
	}
	if line, _ := x.eventLine(rel, nil, l); !strings.Contains(line, "v1.2") {
		t.Fatalf("release line %q", line)
	}
	if _, ok := WebhookEvent("push", []byte(`{not json`)); ok {
		t.Fatal("bad JSON kept")
	}
}
