package githubkit_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// hookEnv is one installation subscribed to hw, with the service's webhook
// receiver on a real HTTP server.
type hookEnv struct {
	*harness
	a   *inst
	svc *githubkit.Service
	srv *httptest.Server

	mu       sync.Mutex
	recorded map[string][]byte // first recording per hook subject (watchRecordings)
}

const hookBase = "https://hooks.example.com"

func newHookEnv(t *testing.T, cfg githubkit.Config) *hookEnv {
	t.Helper()
	h := newHarness(t)
	if cfg.WebhookURL == "" {
		cfg.WebhookURL = hookBase
	}
	r := h.start(cfg, nil)
	a := newInst(t, "a", h.baseConfig("en_US", "token-a", 120))
	h.attach(a, true)
	srv := httptest.NewServer(r.svc.WebhookHandler())
	t.Cleanup(srv.Close)
	e := &hookEnv{harness: h, a: a, svc: r.svc, srv: srv}
	e.watchRecordings()
	return e
}

// hook runs "!gh hook <repo>" as an admin in a private chat and returns the hook id and the
// secret from the reply.
func (e *hookEnv) hook(repo string) (id, secret string) {
	e.t.Helper()
	reply := e.cmd(e.a, "hook "+repo, withPrivilege(2), privately(e.a))
	for _, l := range strings.Split(reply, "\n") {
		if v, ok := strings.CutPrefix(l, "Payload URL: "+hookBase+githubkit.WebhookPath); ok {
			id = v
		}
		if v, ok := strings.CutPrefix(l, "Secret: "); ok {
			secret = v
		}
	}
	if id == "" || secret == "" {
		e.t.Fatalf("hook reply without URL or secret: %q", reply)
	}
	return id, secret
}

// privately runs a command in the private chat of in's sender with its
// bot: the only chat "!gh hook" shows a secret in.
func privately(in *inst) cmdOpt {
	return withSession(wire.Session{LauncherType: wire.LauncherPerson, LauncherID: in.session.SenderID,
		SenderID: in.session.SenderID, BotUUID: in.session.BotUUID})
}

// delivery is one POST to the receiver.
type delivery struct {
	id, event, guid string
	body            []byte
	sig             string // "" signs body with secret
	secret          string
	chunked         bool // no Content-Length
}

func (e *hookEnv) post(d delivery) (int, string) {
	e.t.Helper()
	var rd io.Reader = bytes.NewReader(d.body)
	if d.chunked {
		rd = io.MultiReader(rd) // hides the length: sent chunked
	}
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+githubkit.WebhookPath+d.id, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", d.event)
	req.Header.Set("X-GitHub-Delivery", d.guid)
	sig := d.sig
	if sig == "" && d.secret != "" {
		sig = "sha256=" + hex.EncodeToString(githubkit.Sign([]byte(d.secret), d.body))
	}
	if sig != "-" {
		req.Header.Set("X-Hub-Signature-256", sig)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// pushBody is a webhook push of hw's push_full fixture (the same ref and
// head commit), as GitHub would send it.
func pushBody(after string) []byte {
	return []byte(fmt.Sprintf(`{"ref":"refs/heads/master","before":"883efe034920928c47fe18598c01249d1a9fdabd","after":%q,`+
		`"commits":[{"id":"1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b","message":"Tidy the README","distinct":true},`+
		`{"id":%q,"message":"Make the greeting friendlier","distinct":true}],"head_commit":{"id":%q,"message":"Make the greeting friendlier"},`+
		`"pusher":{"name":"octocat"},"sender":{"login":"octocat"},"repository":{"id":1296269,"full_name":%q}}`, after, after, after, hw))
}

const pushFullHead = "7a8f3ac80e2ad2f6842cb86f576d4bfe2c03e300"

// idle waits until the hook consumer has handled every recorded delivery
// (a purge leaves the stream empty).
func (e *hookEnv) idle() {
	e.t.Helper()
	bustest.CaughtUp(e.t, e.js, githubkit.HookStreamName, githubkit.HookConsumer, "")
}

// state is every key's revision in both buckets and the hook stream's
// last sequence: a request that changes nothing leaves it equal.
func (e *hookEnv) state() map[string]uint64 {
	e.t.Helper()
	ctx := context.Background()
	out := map[string]uint64{}
	for _, b := range []string{bus.Bucket(githubkit.Plugin), bus.DedupeBucket(githubkit.Plugin)} {
		st, err := e.js.Stream(ctx, bus.KVStream(b))
		if err != nil {
			e.t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		out[b] = info.State.LastSeq
	}
	st, err := e.js.Stream(ctx, githubkit.HookStreamName)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	out["hook-stream"] = info.State.LastSeq
	out["sends"] = uint64(len(e.sends()))
	return out
}

func sameState(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestWebhookPushedOnce(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	e.cmd(e.a, "sub "+hw+" push")
	id, secret := e.hook(hw)
	d := delivery{id: id, event: "push", guid: "72d3162e-cc78-11e3-81ab-4c9367dc0958", body: pushBody(pushFullHead), secret: secret}
	if code, why := e.post(d); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	sends := e.host.WaitSends(t, 1, bustest.WaitTimeout)
	text := sends[0].SendMessage().MessageChain[0].Text
	if !strings.Contains(text, "octocat") || !strings.Contains(text, "master") || !strings.Contains(text, "Make the greeting friendlier") {
		t.Fatalf("push text %q", text)
	}
	if !strings.Contains(sends[0].IdempotencyKey, d.guid) || !strings.Contains(sends[0].IdempotencyKey, e.a.sc.String()) {
		t.Fatalf("idempotency key %q", sends[0].IdempotencyKey)
	}
	e.idle()
	// GitHub redelivers the same delivery: answered, not recorded again
	before := e.state()
	if code, why := e.post(d); code != http.StatusOK || why != "duplicate" {
		t.Fatalf("redelivery: %d %s", code, why)
	}
	e.idle()
	if after := e.state(); after["hook-stream"] != before["hook-stream"] || len(e.sends()) != 1 {
		t.Fatalf("redelivery recorded or pushed: %v -> %v", before, after)
	}
	// the same delivery recorded again after the stream's duplicate window
	// (another nonce) is recognised by the consumer
	e.recordAgain(id, func(rec map[string]any) { rec["nonce"] = "another-recording" })
	e.idle()
	if n := len(e.sends()); n != 1 {
		t.Fatalf("a second recording of one delivery pushed again: %d sends", n)
	}
}

// TestWebhookRedeliveredDaysLaterPushedOnce: a repository admin may
// redeliver a delivery of the past 3 days (github.com; 7 on Enterprise
// Server) by hand; it comes with the same body, long after the stream's
// duplicate window and the poller's 7 h, and is not pushed again.
func TestWebhookRedeliveredDaysLaterPushedOnce(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	e.clock.Set(t0)
	e.cmd(e.a, "sub "+hw+" push")
	id, secret := e.hook(hw)
	d := delivery{id: id, event: "push", guid: "0b8f1c6e-0c3a-11f1-9a7e-1f2d3c4b5a69", body: pushBody(pushFullHead), secret: secret}
	if code, why := e.post(d); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	e.host.WaitSends(t, 1, bustest.WaitTimeout)
	e.idle()
	// each time, another push arrives first (its claim prunes the recent
	// set), then the first delivery is recorded again as the receiver
	// records a redelivery: a new nonce and receipt time, the same body
	for i, later := range []time.Duration{8 * time.Hour, 71 * time.Hour} {
		e.clock.Set(t0.Add(later))
		other := delivery{id: id, event: "push", guid: fmt.Sprintf("other-%d", i), body: pushBody(fmt.Sprintf("%040d", i+1)), secret: secret}
		if code, why := e.post(other); code != http.StatusAccepted {
			t.Fatalf("other delivery: %d %s", code, why)
		}
		e.host.WaitSends(t, 2+i, bustest.WaitTimeout)
		e.idle()
		e.recordAgain(id, func(rec map[string]any) {
			rec["nonce"] = fmt.Sprintf("redelivered-%d", i)
			rec["at"] = t0.Add(later).Format(time.RFC3339Nano)
		})
		e.idle()
		if n := len(e.sends()); n != 2+i {
			t.Fatalf("redelivered %v later: %d sends, want %d", later, n, 2+i)
		}
	}
}

// recordAgain publishes hook id's first recorded delivery again, as edit
// changes it, as the receiver records a delivery it takes for new.
func (e *hookEnv) recordAgain(id string, edit func(rec map[string]any)) {
	e.t.Helper()
	subject, err := e.subj.Internal(githubkit.Plugin, githubkit.KindHook, e.a.sc, id)
	if err != nil {
		e.t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(e.firstRecording(subject), &rec); err != nil {
		e.t.Fatal(err)
	}
	edit(rec)
	again, err := json.Marshal(rec)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.js.Publish(context.Background(), subject, again); err != nil {
		e.t.Fatal(err)
	}
}

// firstRecording returns the first recorded delivery on subject (the
// work-queue stream drops a message once it is acked).
func (e *hookEnv) firstRecording(subject string) []byte {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	b, ok := e.recorded[subject]
	if !ok {
		e.t.Fatal("no recording seen")
	}
	return b
}

func TestWebhookRefusalsChangeNothing(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{WebhookMaxBody: 64 << 10})
	e.cmd(e.a, "sub "+hw)
	id, secret := e.hook(hw)
	good := delivery{id: id, event: "push", guid: "d-1", body: pushBody(pushFullHead), secret: secret}
	if code, why := e.post(good); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	e.host.WaitSends(t, 1, bustest.WaitTimeout)
	e.idle()
	big := append(pushBody(strings.Repeat("b", 40)), bytes.Repeat([]byte(" "), 70<<10)...)
	cases := []struct {
		name string
		d    delivery
		code int
	}{
		{"bad signature", delivery{id: id, event: "push", guid: "d-2", body: pushBody(strings.Repeat("c", 40)), sig: "sha256=" + strings.Repeat("00", 32)}, http.StatusUnauthorized},
		{"other secret", delivery{id: id, event: "push", guid: "d-3", body: pushBody(strings.Repeat("c", 40)), secret: "not-the-secret"}, http.StatusUnauthorized},
		{"no signature", delivery{id: id, event: "push", guid: "d-4", body: pushBody(strings.Repeat("c", 40)), sig: "-"}, http.StatusUnauthorized},
		{"replay under a new delivery id", delivery{id: id, event: "push", guid: "d-5", body: good.body, secret: secret}, http.StatusConflict},
		{"unknown hook", delivery{id: "AAAAAAAAAAAAAAAAAAAAAA", event: "push", guid: "d-6", body: pushBody(strings.Repeat("d", 40)), secret: secret}, http.StatusNotFound},
		{"malformed hook id", delivery{id: "x.y", event: "push", guid: "d-7", body: pushBody(strings.Repeat("d", 40)), secret: secret}, http.StatusNotFound},
		{"oversize by length", delivery{id: id, event: "push", guid: "d-8", body: big, secret: secret}, http.StatusRequestEntityTooLarge},
		{"oversize chunked", delivery{id: id, event: "push", guid: "d-9", body: big, secret: secret, chunked: true}, http.StatusRequestEntityTooLarge},
		{"bad delivery id", delivery{id: id, event: "push", guid: "d 10", body: pushBody(strings.Repeat("e", 40)), secret: secret}, http.StatusBadRequest},
		{"ping with a bad signature", delivery{id: id, event: "ping", guid: "d-11", body: []byte(`{"zen":"x"}`), secret: "nope"}, http.StatusUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.state()
			code, why := e.post(c.d)
			if code != c.code {
				t.Fatalf("status %d (%s), want %d", code, why, c.code)
			}
			e.idle()
			if after := e.state(); !sameState(before, after) {
				t.Fatalf("state changed: %v -> %v", before, after)
			}
		})
	}
	if n := len(e.sends()); n != 1 {
		t.Fatalf("%d sends, want 1", n)
	}
}

func TestWebhookSlowsPolling(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e.clock.Set(t0)
	e.cmd(e.a, "sub "+hw)
	if s := e.schedule(e.a, hw); s != "@every 2m0s" {
		t.Fatalf("schedule %q", s)
	}
	id, secret := e.hook(hw)
	if got := e.cmd(e.a, "subs"); !strings.Contains(got, "no delivery yet") {
		t.Fatalf("subs before a delivery: %q", got)
	}
	e.fire(e.a, hw)
	if s := e.schedule(e.a, hw); s != "@every 2m0s" {
		t.Fatalf("schedule before a delivery %q", s)
	}
	if code, why := e.post(delivery{id: id, event: "ping", guid: "p-1", body: []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`), secret: secret}); code != http.StatusOK {
		t.Fatalf("ping: %d %s", code, why)
	}
	if got := e.cmd(e.a, "subs"); !strings.Contains(got, "webhook: delivering") {
		t.Fatalf("subs after the ping: %q", got)
	}
	e.fire(e.a, hw)
	if s := e.schedule(e.a, hw); s != "@every 15m0s" {
		t.Fatalf("schedule while the webhook delivers %q", s)
	}
	// deliveries keep flowing: the health check stays
	e.clock.Advance(20 * time.Minute)
	if code, why := e.post(delivery{id: id, event: "push", guid: "p-2", body: pushBody(pushFullHead), secret: secret}); code != http.StatusAccepted {
		t.Fatalf("push: %d %s", code, why)
	}
	e.host.WaitSends(t, 1, bustest.WaitTimeout)
	e.idle()
	e.clock.Advance(20 * time.Minute)
	e.fire(e.a, hw)
	if s := e.schedule(e.a, hw); s != "@every 15m0s" {
		t.Fatalf("schedule while events flow %q", s)
	}
	// no delivery for two health intervals: polling resumes
	e.clock.Advance(31 * time.Minute)
	e.fire(e.a, hw)
	if s := e.schedule(e.a, hw); s != "@every 2m0s" {
		t.Fatalf("schedule after deliveries stopped %q", s)
	}
	if got := e.cmd(e.a, "subs"); !strings.Contains(got, "no delivery since") {
		t.Fatalf("subs after deliveries stopped: %q", got)
	}
}

func TestWebhookSecretSealed(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	e.cmd(e.a, "sub "+hw)
	// non-admins are refused and change nothing
	before := e.state()
	if got := e.cmd(e.a, "hook "+hw); !strings.Contains(got, "Only bot admins") {
		t.Fatalf("non-admin: %q", got)
	}
	if after := e.state(); !sameState(before, after) {
		t.Fatalf("a refused hook command wrote: %v -> %v", before, after)
	}
	if got := e.cmd(e.a, "hook other/repo", withPrivilege(2), privately(e.a)); !strings.Contains(got, "no subscription") {
		t.Fatalf("hook of an unsubscribed repo: %q", got)
	}
	id, secret := e.hook(hw)
	if strings.Contains(id, e.a.sc.String()) || strings.Contains(strings.ToLower(id), "hello") {
		t.Fatalf("hook id %q names the scope or repo", id)
	}
	for _, b := range []string{bus.Bucket(githubkit.Plugin), bus.DedupeBucket(githubkit.Plugin)} {
		kv, err := e.js.KeyValue(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range e.keys(b) {
			v, err := kv.Get(context.Background(), k)
			if err != nil {
				continue
			}
			if bytes.Contains(v.Value(), []byte(secret)) {
				t.Fatalf("%s %s holds the secret in the clear", b, k)
			}
			if strings.Contains(k, ".hook.") {
				var rec githubkit.HookRecord
				if err := json.Unmarshal(v.Value(), &rec); err != nil || !bus.IsSealed(rec.Secret) {
					t.Fatalf("hook record %s: secret %q not sealed (%v)", k, rec.Secret, err)
				}
			}
		}
	}
	if strings.Contains(e.logs.String(), secret) {
		t.Fatal("the secret is in the logs")
	}
	// running it again rotates the secret under the same URL
	id2, secret2 := e.hook(hw)
	if id2 != id || secret2 == secret {
		t.Fatalf("rotation: id %q -> %q, secret changed %v", id, id2, secret2 != secret)
	}
	ping := []byte(`{"zen":"x"}`)
	if code, _ := e.post(delivery{id: id, event: "ping", guid: "g-1", body: ping, secret: secret}); code != http.StatusUnauthorized {
		t.Fatalf("old secret: %d", code)
	}
	if code, _ := e.post(delivery{id: id, event: "ping", guid: "g-2", body: ping, secret: secret2}); code != http.StatusOK {
		t.Fatalf("new secret: %d", code)
	}
	// a retried invocation shows the secret it set instead of rotating
	r1, err := e.cmdID(e.a, "inv-hook-retry", "hook "+hw, withPrivilege(2), privately(e.a))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := e.cmdID(e.a, "inv-hook-retry", "hook "+hw, withPrivilege(2), privately(e.a))
	if err != nil || r1 != r2 {
		t.Fatalf("retry: %v, same reply %v", err, r1 == r2)
	}
	// off: the URL answers 404
	if got := e.cmd(e.a, "hook "+hw+" off", withPrivilege(2)); !strings.Contains(got, "removed") {
		t.Fatalf("off: %q", got)
	}
	if code, _ := e.post(delivery{id: id, event: "ping", guid: "g-3", body: ping, secret: secret2}); code != http.StatusNotFound {
		t.Fatalf("after off: %d", code)
	}
	if r := e.record(e.a, hw); r == nil || r.HookID != "" {
		t.Fatalf("record after off: %+v", r)
	}
}

func TestWebhookAndPollPushOnce(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	e.cmd(e.a, "sub "+hw)
	id, secret := e.hook(hw)
	// the webhook first (a few seconds after the event), then the poll
	e.clock.Set(time.Date(2022, 6, 9, 12, 47, 31, 0, time.UTC))
	e.addEvents(hw, 101, "push_full")
	if code, why := e.post(delivery{id: id, event: "push", guid: "w-1", body: pushBody(pushFullHead), secret: secret}); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	e.host.WaitSends(t, 1, bustest.WaitTimeout)
	e.idle()
	e.fire(e.a, hw)
	if n := len(e.sends()); n != 1 {
		t.Fatalf("the poll pushed the webhook's event again: %d sends", n)
	}
	// the poll first, then the webhook
	e.clock.Set(time.Date(2026, 1, 1, 0, 0, 4, 0, time.UTC))
	head := strings.Repeat("9", 40)
	e.fake.AddEvents(hw, fakegithub.RawEvent("PushEvent", 102, "octocat", map[string]any{
		"ref": "refs/heads/master", "head": head, "before": pushFullHead, "size": 1, "distinct_size": 1,
		"commits": []map[string]any{{"sha": head, "message": "Later", "distinct": true}}}))
	e.fire(e.a, hw)
	if n := len(e.sends()); n != 2 {
		t.Fatalf("the poll did not push the new event: %d sends", n)
	}
	if code, why := e.post(delivery{id: id, event: "push", guid: "w-2", body: pushBody(head), secret: secret}); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	e.idle()
	if n := len(e.sends()); n != 2 {
		t.Fatalf("the webhook pushed the poll's event again: %d sends", n)
	}
}

// watchRecordings keeps the first recording of each hook subject.
func (e *hookEnv) watchRecordings() {
	e.recorded = map[string][]byte{}
	sub, err := e.nc.Subscribe(e.subj.InternalAll(githubkit.Plugin, githubkit.KindHook), func(m *nats.Msg) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if _, ok := e.recorded[m.Subject]; !ok {
			e.recorded[m.Subject] = append([]byte(nil), m.Data...)
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = sub.Unsubscribe() })
}

func TestWebhookRetriesFailedSend(t *testing.T) {
	e := newHookEnv(t, githubkit.Config{})
	e.cmd(e.a, "sub "+hw)
	id, secret := e.hook(hw)
	var mu sync.Mutex
	failed := false
	e.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		mu.Lock()
		defer mu.Unlock()
		if !failed {
			failed = true
			return bustest.HostReply{Err: wire.Errorf(wire.ErrInternal, "down")}
		}
		return bustest.HostReply{}
	})
	if code, why := e.post(delivery{id: id, event: "push", guid: "r-1", body: pushBody(pushFullHead), secret: secret}); code != http.StatusAccepted {
		t.Fatalf("delivery: %d %s", code, why)
	}
	// the first send fails; the redelivery (the consumer's own retry)
	// pushes, with the same idempotency key
	sends := e.host.WaitSends(t, 2, bustest.WaitTimeout)
	if sends[0].IdempotencyKey != sends[1].IdempotencyKey {
		t.Fatalf("retry keys %q, %q", sends[0].IdempotencyKey, sends[1].IdempotencyKey)
	}
	e.idle()
	if n := len(e.sends()); n != 2 {
		t.Fatalf("%d sends, want the failed one and its retry", n)
	}
}
