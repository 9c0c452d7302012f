package githubkit

// Webhook deliveries, the pure part. This file holds the pieces
// of the receiver that touch no I/O: the signature check, done before any
// JSON is parsed, and the mapping of a verified delivery onto the Events
// API item the poller already formats (eventLine, SelectRefined), so both
// paths share one formatter and one set of filters.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// WebhookMaxBody is the largest delivery body the receiver reads. GitHub
// caps payloads at 25 MB; a NATS message is at most 1 MiB by default, and
// a compact event is stored, so 1 MiB bounds the memory of a request.
const WebhookMaxBody = 1 << 20

// Receiver bounds against slow and heavy clients: a client that sends
// a large body slowly must not hold the service's memory.
const (
	// defaultWebhookBodyBudget is sixteen full deliveries held at once.
	defaultWebhookBodyBudget = 16 * WebhookMaxBody
	// defaultWebhookReadTimeout is how long a delivery's body may take to
	// arrive; GitHub itself gives up on a delivery after 10 s.
	defaultWebhookReadTimeout = 10 * time.Second
)

// signaturePrefix starts the X-Hub-Signature-256 header.
const signaturePrefix = "sha256="

// verifySignature reports whether header (X-Hub-Signature-256) is the
// HMAC-SHA256 of body under secret. The comparison is constant time; an
// empty secret never verifies.
func verifySignature(secret, body []byte, header string) bool {
	if len(secret) == 0 {
		return false
	}
	hexSig, ok := strings.CutPrefix(header, signaturePrefix)
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	return hmac.Equal(got, Sign(secret, body))
}

// Sign returns HMAC-SHA256(secret, body), the raw signature GitHub sends
// hex-encoded after "sha256=".
func Sign(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}

// webhookTypes maps a webhook event name (X-GitHub-Event) to its Events
// API type, and to the actions the Events API reports for it (nil: any).
// Actions outside the list are dropped so that a webhook does not push
// what polling never would (a release fires created, published and
// released for one release; only published is kept).
var webhookTypes = map[string]struct {
	typ     string
	actions []string
}{
	"push": {typ: "PushEvent"},
	"pull_request": {typ: "PullRequestEvent", actions: []string{"opened", "closed", "reopened", "edited", "assigned", "unassigned",
		"review_requested", "review_request_removed", "labeled", "unlabeled", "ready_for_review", "converted_to_draft", "synchronize"}},
	"issues": {typ: "IssuesEvent", actions: []string{"opened", "closed", "reopened", "edited", "deleted", "transferred", "pinned",
		"unpinned", "locked", "unlocked", "labeled", "unlabeled", "assigned", "unassigned"}},
	"issue_comment":               {typ: "IssueCommentEvent", actions: []string{"created"}},
	"release":                     {typ: "ReleaseEvent", actions: []string{"published", "edited", "deleted"}},
	"watch":                       {typ: "WatchEvent"},
	"fork":                        {typ: "ForkEvent"},
	"create":                      {typ: "CreateEvent"},
	"delete":                      {typ: "DeleteEvent"},
	"pull_request_review":         {typ: "PullRequestReviewEvent", actions: []string{"submitted", "dismissed"}},
	"pull_request_review_comment": {typ: "PullRequestReviewCommentEvent", actions: []string{"created"}},
	"commit_comment":              {typ: "CommitCommentEvent", actions: []string{"created"}},
	"member":                      {typ: "MemberEvent", actions: []string{"added", "removed", "edited"}},
	"public":                      {typ: "PublicEvent"},
	"repository":                  {typ: "PublicEvent", actions: []string{"privatized", "publicized"}},
	"gollum":                      {typ: "GollumEvent"},
	"discussion":                  {typ: "DiscussionEvent"},
}

// webhookEnvelope is what a delivery carries besides the payload fields.
type webhookEnvelope struct {
	Action string `json:"action"`
	Sender *struct {
		Login string `json:"login"`
	} `json:"sender"`
	Repository *struct {
		ID       int64  `json:"id"`
		FullName string `json:"full_name"`
	} `json:"repository"`
	Commits []struct {
		Distinct *bool `json:"distinct"`
	} `json:"commits"`
}

// webhookEvent maps a verified delivery (its X-GitHub-Event name and body)
// to the Events API item the formatter reads. ok is false for events that
// push nothing (ping, types and actions polling does not report, bodies
// that do not parse). The payload stays the delivery body: the formatter's
// payload type reads the webhook form too; a push gets its count of new
// commits added, since webhooks carry the commits but no distinct_size.
func webhookEvent(name string, body []byte) (ghclient.Event, bool) {
	m, known := webhookTypes[name]
	if !known {
		return ghclient.Event{}, false
	}
	var env webhookEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		return ghclient.Event{}, false
	}
	if m.actions != nil && !contains(m.actions, env.Action) {
		return ghclient.Event{}, false
	}
	ev := ghclient.Event{Type: m.typ, Payload: body}
	if env.Sender != nil {
		ev.Actor = &struct {
			Login string `json:"login"`
		}{Login: env.Sender.Login}
	}
	if env.Repository != nil {
		ev.Repo.ID, ev.Repo.Name = env.Repository.ID, env.Repository.FullName
	}
	if name == "repository" && env.Action == "publicized" {
		// PublicEvent has no action; "privatized" is the formatter's other case
		ev.Payload = json.RawMessage(`{}`)
	}
	if m.typ == "PushEvent" {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil {
			return ghclient.Event{}, false
		}
		n := 0
		for _, c := range env.Commits {
			if c.Distinct == nil || *c.Distinct {
				n++
			}
		}
		raw["distinct_size"], _ = json.Marshal(n)
		b, err := json.Marshal(raw)
		if err != nil {
			return ghclient.Event{}, false
		}
		ev.Payload = b
	}
	return ev, true
}

// webhookRun maps a verified workflow_run delivery to the run the CI
// alerts read (ci.go), the same fields GET actions/runs lists. ok is true
// only for a completed run: the alerts are about finished runs, as the
// poller's status=completed.
func webhookRun(name string, body []byte) (ghclient.WorkflowRun, bool) {
	if name != "workflow_run" {
		return ghclient.WorkflowRun{}, false
	}
	var d struct {
		Action   string                `json:"action"`
		Run      *ghclient.WorkflowRun `json:"workflow_run"`
		Workflow *struct {
			Name string `json:"name"`
		} `json:"workflow"`
		Sender *struct {
			Login string `json:"login"`
		} `json:"sender"`
	}
	if err := json.Unmarshal(body, &d); err != nil || d.Action != "completed" || d.Run == nil || d.Run.ID <= 0 || d.Run.Status != "completed" {
		return ghclient.WorkflowRun{}, false
	}
	run := *d.Run
	// A delivery may carry an empty workflow_run.name (a workflow file
	// without name:, some Enterprise Server versions); the delivery's
	// workflow object names it, and its sender is the actor when the run
	// names none.
	if strings.TrimSpace(run.Name) == "" && d.Workflow != nil {
		run.Name = d.Workflow.Name
	}
	if run.ActorLogin() == "" && d.Sender != nil && d.Sender.Login != "" {
		run.TriggeringActor = &struct {
			Login string `json:"login"`
		}{Login: d.Sender.Login}
	}
	return run, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
