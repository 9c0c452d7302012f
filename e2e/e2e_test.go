//go:build e2e

// Package e2e runs the system the way it is deployed: nats-server,
// Jaeger and each plugin service as separate processes on loopback,
// driven by lbctl as the host, and checks the result through Jaeger's
// query API, the services' HTTP endpoints and NATS service discovery.
// e2e/run.sh builds everything and runs it (make e2e); the build tag keeps
// it out of make test.
package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/telemetry"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// hostService is the service name of the test's own spans: it plays the
// host (LangBot) publishing invocations.
const hostService = "e2e-host"

// markers are distinctive strings put into chat text and config values;
// none may appear in any span attribute or service log.
type markers struct {
	chat, reminder, reply, token, notice, prefix string
}

func (m markers) all() map[string]string {
	return map[string]string{"chat text": m.chat, "reminder text": m.reminder, "operator reply": m.reply,
		"github token": m.token, "takeover notice (config)": m.notice, "notify prefix (config)": m.prefix}
}

// host is the test acting as LangBot: a NATS connection as the host user
// and an invoker whose spans go to Jaeger.
type host struct {
	s      *stack
	nc     *nats.Conn
	iv     *bus.Invoker // traced
	plain  *bus.Invoker // untraced, for readiness polls
	tracer trace.Tracer
	flush  func()
}

func scopeOf(plugin string) string { return "e2e-instance.e2e-workspace.e2e-" + plugin }

func bindingOf(t *testing.T, plugin string) binding.Binding {
	sc, err := binding.ParseScope(scopeOf(plugin))
	if err != nil {
		t.Fatal(err)
	}
	return binding.Binding{InstanceUUID: sc.Instance(), WorkspaceUUID: sc.Workspace(), InstallationUUID: sc.Installation(),
		PlacementGeneration: 1, RuntimeRevision: 1, ArtifactDigest: "sha256:dev"}
}

// invoke sends one traced invocation under a root span of its own and
// returns the reply and the trace id.
func (h *host) invoke(t *testing.T, name, plugin string, ep wire.Endpoint, req *wire.Request) (json.RawMessage, string) {
	t.Helper()
	ctx, span := h.tracer.Start(context.Background(), "e2e "+name)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	raw, err := h.iv.Invoke(ctx, plugin, ep, bus.NewInvocationID(), req)
	cancel()
	span.End()
	h.flush()
	if err != nil {
		t.Fatalf("%s: %v (%s)", name, err, raw)
	}
	return raw, span.SpanContext().TraceID().String()
}

// waitServed polls a read-only invocation until the service serves the
// installation (its lifecycle consumer applied the attach).
func (h *host) waitServed(t *testing.T, plugin string, ep wire.Endpoint, req *wire.Request) {
	t.Helper()
	poll(t, 30*time.Second, plugin+" serves "+scopeOf(plugin), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		raw, err := h.plain.Invoke(ctx, plugin, ep, bus.NewInvocationID(), req)
		if err != nil {
			return false, fmt.Sprintf("%v %s", err, raw)
		}
		return true, ""
	})
}

func session(launcher string) wire.Session {
	typ, id, _ := strings.Cut(launcher, ":")
	return wire.Session{LauncherType: typ, LauncherID: wire.ID(id), SenderID: "e2e-user", BotUUID: "e2e-bot"}
}

func commandReq(b binding.Binding, cfg, text string, sess wire.Session) *wire.Request {
	fields := strings.Fields(text)
	return &wire.Request{Binding: b, Config: json.RawMessage(cfg), Command: &wire.Command{
		Name: strings.TrimPrefix(fields[0], "!"), Params: fields[1:], FullText: text, Prefix: "!",
		Session: sess, Privilege: 1, QueryUUID: wire.ID(bus.NewInvocationID())}}
}

// hostLine waits until lbctl host printed a send of plugin containing
// want, and returns the line.
func (s *stack) hostLine(t *testing.T, plugin, want string, timeout time.Duration) string {
	t.Helper()
	var line string
	poll(t, timeout, "lbctl host prints a "+plugin+" send containing "+want, func() (bool, string) {
		l, ok := s.host.out.Find(func(l string) bool {
			return strings.HasPrefix(l, "["+plugin+" → ") && strings.Contains(l, want)
		})
		line = l
		return ok, fmt.Sprintf("%d lines", len(s.host.out.Lines()))
	})
	return line
}

func TestEndToEnd(t *testing.T) {
	s := newStack(t)
	run := randToken(4)
	mk := markers{chat: "e2echat" + run, reminder: "e2eremind" + run, reply: "e2ereply" + run,
		token: "ghp_e2etoken" + run, notice: "e2enotice" + run, prefix: "e2epfx" + run}
	var err error
	if s.stateKey, err = bus.NewKeyString("e2e"); err != nil {
		t.Fatal(err)
	}
	consoleKey := base64.StdEncoding.EncodeToString([]byte(randToken(16))) // 32 bytes

	start := time.Now()
	s.startNATS()
	s.startJaeger()
	if out, err := s.lbctl("host", "setup"); err != nil {
		t.Fatal(err)
	} else {
		say(t, "lbctl setup: %s", strings.TrimSpace(out))
	}
	s.startHost()

	fake := fakegithub.New(fakegithub.Options{PollInterval: 60})
	defer fake.Close()

	configs := map[string]string{
		"githubkit":  fmt.Sprintf(`{"language":"en_US","github_token":%q,"poll_interval":60}`, mk.token),
		"takeover":   fmt.Sprintf(`{"takeover_timeout":600,"trigger_words":["human"],"auto_takeover_on_trigger":true,"user_notice_on_takeover":%q}`, mk.notice),
		"schenotify": fmt.Sprintf(`{"language":"en_US","timezone":"UTC","notify_prefix":%q}`, "["+mk.prefix+"] "),
	}
	var running []string
	for _, p := range plugins {
		if !hasBinary(p) {
			loud(t, "SKIP %s: no binary %s (services/%s/cmd/%s does not exist yet); its checks are skipped", p, filepath.Join(binDir, p), p, p)
			continue
		}
		extra := map[string]string{}
		switch p {
		case "githubkit":
			extra = map[string]string{"GITHUB_API_URL": fake.URL, "GITHUB_ALLOW_HTTP": "true", "GITHUB_ALLOW_PRIVATE_NETWORKS": "true"}
		case "takeover":
			extra = map[string]string{"LANGBOT_CONSOLE_KEY": consoleKey}
		}
		svc := s.startService(p, extra)
		say(t, "%s up, HTTP %s", p, svc.http)
		if out, err := s.lbctl("host", "attach", "--plugin", p, "--scope", scopeOf(p), "--config", configs[p]); err != nil {
			t.Fatal(err)
		} else {
			say(t, "lbctl attach %s: %s", p, strings.TrimSpace(out))
		}
		running = append(running, p)
	}
	say(t, "stack up in %v", time.Since(start).Round(time.Millisecond))

	// the test plays the host: a NATS connection as the host user and
	// spans exported to the same Jaeger
	ctx := context.Background()
	// the OTLP exporter reads its settings from the process environment
	for k, v := range s.otelEnv(hostService) {
		t.Setenv(k, v)
	}
	tp, err := telemetry.NewTracerProvider(ctx, hostService, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}()
	user := ""
	if s.auth {
		user = "host"
	}
	nc, err := bus.Connect(ctx, bus.ConnConfig{URL: s.natsURL, Name: "e2e-host", User: user, Password: s.passwords["host"]})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subj, _ := wire.NewSubjects(wire.DefaultPrefix)
	h := &host{s: s, nc: nc, iv: bus.NewInvoker(nc, subj, tp), plain: bus.NewInvoker(nc, subj, nil), tracer: tp.Tracer("e2e"),
		flush: func() { _ = tp.ForceFlush(ctx) }}

	has := func(p string) bool { return slices.Contains(running, p) }
	skipUnless := func(t *testing.T, p string) {
		if !has(p) {
			loud(t, "SKIP %s: service %s is not built", t.Name(), p)
			t.Skip()
		}
	}

	t.Run("discovery", func(t *testing.T) { checkDiscovery(t, nc, running) })

	// githubkit: start the subscription first, since its first poll comes
	// a full interval (60 s, the minimum) after the subscription
	var subTrace string
	var repoTrace string
	t.Run("githubkit/repo", func(t *testing.T) {
		skipUnless(t, "githubkit")
		b, cfg := bindingOf(t, "githubkit"), configs["githubkit"]
		h.waitServed(t, "githubkit", wire.EndpointCommand, commandReq(b, cfg, "!gh help", session("person:e2e-user")))
		raw, id := h.invoke(t, "gh repo", "githubkit", wire.EndpointCommand, commandReq(b, cfg, "!gh repo "+fakegithub.DefaultRepo, session("person:e2e-user")))
		if !strings.Contains(string(raw), fakegithub.DefaultRepo) {
			t.Fatalf("!gh repo reply %s does not name the repository", raw)
		}
		if n := fake.Count(func(r fakegithub.Request) bool { return r.Authorization == "Bearer "+mk.token }); n == 0 {
			t.Errorf("the fake GitHub saw no request with the installation's token (sealed config not opened?)")
		}
		repoTrace = id
		tr := s.waitTrace(t, id, func(tr *jTrace) string {
			if tr.span(func(sp *jSpan) bool { return sp.service == "githubkit" && isHTTPClient(sp) }) == nil {
				return "no GitHub HTTP client span yet"
			}
			if tr.span(func(sp *jSpan) bool { return sp.service == "githubkit" && sp.kind() == "server" }) == nil {
				return "no githubkit server span yet"
			}
			return ""
		})
		server := requestTrace(t, tr, "githubkit")
		gh := tr.span(func(sp *jSpan) bool { return sp.service == "githubkit" && isHTTPClient(sp) })
		if gh == nil || !tr.ancestorOf(server, gh) {
			t.Errorf("the GitHub call is not under the command's server span\n%s", dumpTrace(tr))
		}
		say(t, "githubkit !gh repo: trace %s, %d spans", id, len(tr.Spans))
	})
	var subAt time.Time
	t.Run("githubkit/sub", func(t *testing.T) {
		skipUnless(t, "githubkit")
		b, cfg := bindingOf(t, "githubkit"), configs["githubkit"]
		raw, id := h.invoke(t, "gh sub", "githubkit", wire.EndpointCommand, commandReq(b, cfg, "!gh sub "+fakegithub.DefaultRepo+" push", session("group:e2e-group")))
		subAt = time.Now()
		if !strings.Contains(string(raw), fakegithub.DefaultRepo) {
			t.Fatalf("!gh sub reply %s does not name the repository", raw)
		}
		// new activity after the subscription primed its cursor
		fake.AddEvents(fakegithub.DefaultRepo, fakegithub.Event("push_full", fake.NextEventID()))
		subTrace = id
		tr := s.waitTrace(t, id, func(tr *jTrace) string {
			if tr.span(func(sp *jSpan) bool { return sp.service == "githubkit" && sp.kind() == "server" }) == nil {
				return "no githubkit server span yet"
			}
			return ""
		})
		requestTrace(t, tr, "githubkit")
		say(t, "githubkit !gh sub: trace %s; the first poll is due about 60 s later", id)
	})

	// schenotify: schedule_notify, then the delivery at the due second
	var deliveryTrace, scheduleTrace, replyTrace, pollTrace string
	var consoleToken string
	t.Run("schenotify/reminder", func(t *testing.T) {
		skipUnless(t, "schenotify")
		b, cfg := bindingOf(t, "schenotify"), configs["schenotify"]
		sess := session("person:e2e-user")
		h.waitServed(t, "schenotify", wire.EndpointCommand, commandReq(b, cfg, "!sche", sess))
		params, _ := json.Marshal(map[string]string{"message": mk.reminder + " stretch", "delay": "2s"})
		raw, id := h.invoke(t, "schedule_notify", "schenotify", wire.EndpointTool, &wire.Request{Binding: b, Config: json.RawMessage(cfg),
			Tool: &wire.Tool{Name: "schedule_notify", Parameters: params, Session: sess, QueryUUID: "e2e-q"}})
		var res struct {
			Result struct {
				Status string `json:"status"`
				ID     string `json:"id"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &res); err != nil || res.Result.Status != "ok" {
			t.Fatalf("schedule_notify: %s (%v)", raw, err)
		}
		line := s.hostLine(t, "schenotify", mk.reminder, 30*time.Second)
		say(t, "lbctl host printed the reminder: %q", line)
		tr := s.waitTrace(t, id, func(tr *jTrace) string {
			if tr.span(func(sp *jSpan) bool { return sp.service == "schenotify" && sp.kind() == "server" }) == nil {
				return "no schenotify server span yet"
			}
			return ""
		})
		requestTrace(t, tr, "schenotify")
		del := s.findTrace(t, "schenotify", "the delivery trace linked to "+id, 45*time.Second, func(tr *jTrace) bool {
			return tr.TraceID != id && tr.span(func(sp *jSpan) bool { return sp.linksTo(id) }) != nil &&
				tr.span(func(sp *jSpan) bool {
					return strings.HasPrefix(sp.tag("messaging.destination.name"), "langbot.host.send_message.")
				}) != nil
		})
		checkConnected(t, del)
		consumer := del.root()
		if consumer.kind() != "consumer" || !consumer.linksTo(id) {
			t.Errorf("the delivery starts with %s, want a consumer span linked to trace %s", consumer, id)
		}
		checkMessaging(t, consumer, "langbot.schenotify.")
		hostSend(t, del, "schenotify", consumer)
		deliveryTrace, scheduleTrace = del.TraceID, id
		say(t, "schenotify: scheduled in trace %s, delivered in trace %s (linked)", id, del.TraceID)
	})

	// takeover: a user asks for a human (the event blocks the AI and sends
	// the notice), then the operator replies through the page endpoint
	t.Run("takeover/event-and-reply", func(t *testing.T) {
		skipUnless(t, "takeover")
		b, cfg := bindingOf(t, "takeover"), configs["takeover"]
		h.waitServed(t, "takeover", wire.EndpointPage, &wire.Request{Binding: b, Config: json.RawMessage(cfg),
			Page: &wire.Page{PageID: "console", Endpoint: "/info", Method: "GET", Body: json.RawMessage(`{}`)}})
		chain, _ := json.Marshal([]map[string]string{{"type": "Plain", "text": "please get me a human " + mk.chat}})
		data := fmt.Sprintf(`{"launcher_type":"person","launcher_id":"e2e-user","sender_id":"e2e-user","message_event":{"sender":{"nickname":"E2E"}},"message_chain":%s}`, chain)
		raw, id := h.invoke(t, "takeover event", "takeover", wire.EndpointEvent, &wire.Request{Binding: b, Config: json.RawMessage(cfg),
			Event: &wire.Event{Name: "PersonMessageReceived", BotUUID: "e2e-bot", Data: json.RawMessage(data), QueryUUID: "e2e-q"}})
		var er wire.EventReply
		if err := json.Unmarshal(raw, &er); err != nil || !er.PreventDefault {
			t.Fatalf("the trigger word did not block the AI: %s (%v)", raw, err)
		}
		s.hostLine(t, "takeover", mk.notice, 30*time.Second)
		tr := s.waitTrace(t, id, func(tr *jTrace) string {
			if tr.span(func(sp *jSpan) bool { return sp.service == "takeover" && sp.kind() == "server" }) == nil {
				return "no takeover server span yet"
			}
			return ""
		})
		server := requestTrace(t, tr, "takeover")
		// the takeover notice is sent in the background, under the event's
		// span: it must be part of the event's trace
		isSend := func(sp *jSpan) bool {
			return sp.service == "takeover" && strings.HasPrefix(sp.tag("messaging.destination.name"), "langbot.host.send_message.")
		}
		deadline := time.Now().Add(5 * time.Second)
		for tr.span(isSend) == nil && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond) // spans of a background send arrive a batch later
			if next, err := s.trace(id); err == nil && next != nil {
				tr = next
			}
		}
		if tr.span(isSend) != nil {
			hostSend(t, tr, "takeover", server)
		} else {
			t.Errorf("takeover: the takeover notice was delivered, but its send_message span is not in the event's trace %s", id)
		}

		// the operator reads the sessions with lbctl, then replies
		out, err := s.lbctl("host", "invoke", "page", "--plugin", "takeover", "--scope", scopeOf("takeover"), "--config", cfg,
			"--name", "/sessions", "--method", "GET")
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Data struct {
				Sessions []struct {
					SID string `json:"sid"`
				} `json:"sessions"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Data.Sessions) != 1 {
			t.Fatalf("lbctl invoke page /sessions: %s (%v)", out, err)
		}
		body, _ := json.Marshal(map[string]string{"sid": list.Data.Sessions[0].SID, "idempotency_key": "e2ekey" + run, "text": mk.reply})
		raw, id = h.invoke(t, "operator reply", "takeover", wire.EndpointPage, &wire.Request{Binding: b, Config: json.RawMessage(cfg),
			Page: &wire.Page{PageID: "console", Endpoint: "/reply", Method: "POST", Body: body}})
		var rr struct {
			Data struct {
				Delivered bool `json:"delivered"`
				Saved     bool `json:"saved"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &rr); err != nil || !rr.Data.Delivered || !rr.Data.Saved {
			t.Fatalf("operator reply: %s (%v)", raw, err)
		}
		s.hostLine(t, "takeover", mk.reply, 30*time.Second)
		tr = s.waitTrace(t, id, func(tr *jTrace) string {
			if tr.span(func(sp *jSpan) bool { return sp.service == "takeover" && sp.kind() == "server" }) == nil {
				return "no takeover server span yet"
			}
			if tr.span(func(sp *jSpan) bool {
				return sp.service == "takeover" && strings.HasPrefix(sp.tag("messaging.destination.name"), "langbot.host.send_message.")
			}) == nil {
				return "no reply send span yet"
			}
			return ""
		})
		server = requestTrace(t, tr, "takeover")
		hostSend(t, tr, "takeover", server)
		replyTrace = id
		say(t, "takeover: event trace and operator reply trace %s checked", id)

		// the same history over the HTTP console of the running binary,
		// with a token minted by lbctl console-token
		svc := s.services["takeover"]
		out, err = s.lbctlEnv("host", map[string]string{"LANGBOT_CONSOLE_KEY": consoleKey}, "console-token",
			"--scope", scopeOf("takeover"), "--operator", "e2e-operator", "--ttl", "10m", "--base", svc.http)
		if err != nil {
			t.Fatal(err)
		}
		tok := strings.TrimSpace(scanLines(out)[0])
		consoleToken = tok
		sid := list.Data.Sessions[0].SID
		req, _ := http.NewRequest("GET", svc.http+"/console/api/messages?sid="+url.QueryEscape(sid), nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := s.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		hist, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(hist), mk.reply) || !strings.Contains(string(hist), mk.chat) {
			t.Errorf("console GET /messages: %d, want the user's message and the operator's reply in the history:\n%s", resp.StatusCode, hist)
		}
		req, _ = http.NewRequest("GET", svc.http+"/console/api/messages?sid="+url.QueryEscape(sid), nil)
		if resp, err := s.http.Do(req); err != nil {
			t.Error(err)
		} else {
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Errorf("console without a token: %d, want 401", resp.StatusCode)
			}
		}
	})

	t.Run("githubkit/push", func(t *testing.T) {
		skipUnless(t, "githubkit")
		if subTrace == "" {
			t.Skip("the subscription failed")
		}
		line := s.hostLine(t, "githubkit", fakegithub.DefaultRepo, 150*time.Second)
		say(t, "push delivered %v after the subscription: %q", time.Since(subAt).Round(time.Second), line)
		pollTr := s.findTrace(t, "githubkit", "the poll trace linked to "+subTrace, 45*time.Second, func(tr *jTrace) bool {
			return tr.span(func(sp *jSpan) bool { return sp.linksTo(subTrace) }) != nil &&
				tr.span(func(sp *jSpan) bool {
					return strings.HasPrefix(sp.tag("messaging.destination.name"), "langbot.host.send_message.")
				}) != nil
		})
		checkConnected(t, pollTr)
		consumer := pollTr.root()
		if consumer.kind() != "consumer" || !consumer.linksTo(subTrace) {
			t.Errorf("the poll starts with %s, want a consumer span linked to trace %s", consumer, subTrace)
		}
		checkMessaging(t, consumer, "langbot.githubkit.")
		hostSend(t, pollTr, "githubkit", consumer)
		if pollTr.span(func(sp *jSpan) bool { return sp.service == "githubkit" && isHTTPClient(sp) }) == nil {
			t.Errorf("the poll trace has no GitHub HTTP client span\n%s", dumpTrace(pollTr))
		}
		pollTrace = pollTr.TraceID
		say(t, "githubkit push: poll trace %s linked to the subscription's trace %s", pollTr.TraceID, subTrace)
	})

	t.Run("endpoints", func(t *testing.T) {
		for _, p := range running {
			svc := s.services[p]
			if code, body := s.get(svc.http + "/healthz"); code != 200 {
				t.Errorf("%s /healthz: %d %s", p, code, body)
			}
			if code, body := s.get(svc.http + "/readyz"); code != 200 {
				t.Errorf("%s /readyz: %d %s", p, code, body)
			}
			code, body := s.get(svc.http + "/metrics")
			if code != 200 || !strings.Contains(body, "langbot_invocations_total") || !strings.Contains(body, "go_goroutines") {
				t.Errorf("%s /metrics: %d, want langbot_invocations_total and go_goroutines", p, code)
			}
			if !strings.Contains(body, `plugin="`+p+`"`) {
				t.Errorf("%s /metrics: no series labelled plugin=%q", p, p)
			}
		}
	})

	t.Run("no-secrets-in-spans-or-logs", func(t *testing.T) {
		secrets := mk.all()
		_, key, _ := strings.Cut(s.stateKey, "=")
		secrets["LANGBOT_STATE_KEY"] = key
		secrets["LANGBOT_CONSOLE_KEY"] = consoleKey
		if consoleToken != "" {
			secrets["console token"] = consoleToken
		}
		for u, pw := range s.passwords {
			secrets["NATS password of "+u] = pw
		}
		spans := 0
		for _, svc := range append([]string{hostService}, running...) {
			trs, err := s.serviceTraces(svc)
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range trs {
				for _, sp := range tr.Spans {
					spans++
					var texts []string
					texts = append(texts, sp.OperationName)
					for _, kv := range sp.Tags {
						texts = append(texts, kv.Key, fmt.Sprint(kv.Value))
					}
					for _, l := range sp.Logs {
						for _, kv := range l.Fields {
							texts = append(texts, kv.Key, fmt.Sprint(kv.Value))
						}
					}
					for _, kv := range tr.Processes[sp.ProcessID].Tags {
						texts = append(texts, kv.Key, fmt.Sprint(kv.Value))
					}
					for what, m := range secrets {
						for _, x := range texts {
							if strings.Contains(x, m) {
								t.Errorf("the %s appears in span %s of trace %s: %q", what, &sp, tr.TraceID, x)
							}
						}
					}
				}
			}
		}
		for _, p := range running {
			for _, l := range s.services[p].proc.out.Lines() {
				for what, m := range secrets {
					if strings.Contains(l, m) {
						t.Errorf("the %s appears in the %s log: %s", what, p, l)
					}
				}
			}
		}
		say(t, "no marker in %d spans (each service's recent traces) nor in the service logs", spans)
	})

	t.Run("log-trace-ids", func(t *testing.T) {
		// a log line written while handling a request names a trace that
		// Jaeger has, so a log line leads to its trace
		found := 0
		for _, p := range running {
			for _, l := range s.services[p].proc.out.Lines() {
				var rec struct {
					TraceID string `json:"trace_id"`
					Msg     string `json:"msg"`
				}
				if json.Unmarshal([]byte(l), &rec) != nil || rec.TraceID == "" {
					continue
				}
				found++
				if tr, err := s.trace(rec.TraceID); err != nil || tr == nil {
					t.Errorf("%s logged %q with trace_id %s, which Jaeger does not have (%v)", p, rec.Msg, rec.TraceID, err)
				}
			}
		}
		if found == 0 {
			t.Errorf("no service log line carries a trace_id")
		}
		say(t, "%d service log lines carry a trace id, each found in Jaeger", found)
	})

	t.Run("lbctl-trace", func(t *testing.T) {
		for _, c := range []struct{ name, id string }{
			{"githubkit-repo", repoTrace}, {"githubkit-sub", subTrace}, {"githubkit-poll", pollTrace},
			{"schenotify-schedule", scheduleTrace}, {"schenotify-delivery", deliveryTrace}, {"takeover-reply", replyTrace},
		} {
			name, id := c.name, c.id
			if id == "" {
				continue
			}
			out, err := s.lbctl("host", "trace", id, "--jaeger", s.jaegerURL)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "trace "+id) || !strings.Contains(out, "└─ ") {
				t.Errorf("lbctl trace %s printed no tree:\n%s", id, out)
			}
			// every span appears with its service, kind and operation
			if tr, err := s.trace(id); err != nil || tr == nil {
				t.Errorf("trace %s: %v", id, err)
			} else {
				for i := range tr.Spans {
					sp := &tr.Spans[i]
					if want := sp.service + " [" + sp.kind() + "] " + sp.OperationName; !strings.Contains(out, want) {
						t.Errorf("lbctl trace %s lacks %q:\n%s", id, want, out)
					}
				}
			}
			_ = os.WriteFile(filepath.Join(s.out, "trace-"+name+".txt"), []byte(out), 0o644)
			if code, raw := s.get(s.jaegerURL + "/api/traces/" + id); code == 200 {
				_ = os.WriteFile(filepath.Join(s.out, "trace-"+name+".json"), []byte(raw), 0o644)
			}
			fmt.Printf("e2e: lbctl trace %s (%s):\n%s\n", id, name, out)
		}
	})

	t.Run("bench", func(t *testing.T) {
		if len(running) == 0 {
			t.Skip("no service")
		}
		user := "host"
		if s.auth {
			user = "admin" // the floor creates a KV bucket
		}
		args := []string{"bench", "invoke", "--n", benchN, "--markdown", "--plugins", strings.Join(running, ",")}
		start := time.Now()
		out, err := s.lbctl(user, args...)
		if err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(s.out, "bench.txt"), []byte(out), 0o644)
		fmt.Printf("e2e: lbctl %s (as NATS user %s, %v):\n%s\n", strings.Join(args, " "), user, time.Since(start).Round(time.Second), out)
		if strings.Contains(out, "SKIP") || strings.Contains(out, "FAILED") {
			t.Errorf("bench rows were skipped or failed:\n%s", out)
		}
	})

	// every process must still be running: none crashed along the way
	for _, p := range append([]*proc{s.host}, func() []*proc {
		var ps []*proc
		for _, n := range running {
			ps = append(ps, s.services[n].proc)
		}
		return ps
	}()...) {
		if done, err := p.exited(); done {
			t.Errorf("%s exited during the run: %v", p.name, err)
		}
	}
	say(t, "run took %v", time.Since(start).Round(time.Second))
}

// checkDiscovery sends $SRV.PING and waits until every running plugin
// answered (nats micro ls).
func checkDiscovery(t *testing.T, nc *nats.Conn, running []string) {
	inbox := nc.NewInbox() // the deployment lets each user read only its own _INBOX_<user>.>
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest("$SRV.PING", inbox, nil); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < len(running) && time.Now().Before(deadline) {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			break
		}
		var ping struct {
			Name string `json:"name"`
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal(m.Data, &ping); err != nil {
			t.Errorf("malformed $SRV.PING reply %s", m.Data)
			continue
		}
		seen[ping.Name] = true
	}
	for _, p := range running {
		if !seen[p] {
			t.Errorf("$SRV.PING: no answer from %s (answers: %v)", p, seen)
		}
	}
	say(t, "$SRV.PING lists %v", keys(seen))
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
