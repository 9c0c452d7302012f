//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"
)

// jTrace is a trace as Jaeger's query API (/api/traces) returns it.
type jTrace struct {
	TraceID   string              `json:"traceID"`
	Spans     []jSpan             `json:"spans"`
	Processes map[string]jProcess `json:"processes"`
}

type jSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64  `json:"startTime"`
	Duration  int64  `json:"duration"`
	Tags      []jKV  `json:"tags"`
	Logs      []jLog `json:"logs"`
	ProcessID string `json:"processID"`

	service string // filled from the trace's processes
}

type jKV struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type jLog struct {
	Fields []jKV `json:"fields"`
}

type jProcess struct {
	ServiceName string `json:"serviceName"`
	Tags        []jKV  `json:"tags"`
}

func (s *jSpan) tag(k string) string {
	for _, t := range s.Tags {
		if t.Key == k {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

func (s *jSpan) kind() string {
	if k := s.tag("span.kind"); k != "" {
		return k
	}
	return "internal"
}

// parent is the id of s's parent span in its own trace ("" for a root).
func (s *jSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" && r.TraceID == s.TraceID {
			return r.SpanID
		}
	}
	return ""
}

// linksTo reports whether s links to (FOLLOWS_FROM, or references) a span
// of trace id.
func (s *jSpan) linksTo(traceID string) bool {
	for _, r := range s.References {
		if r.TraceID == traceID && r.TraceID != s.TraceID {
			return true
		}
	}
	return false
}

func (s *jSpan) String() string {
	return fmt.Sprintf("%s[%s] %q (%s)", s.service, s.kind(), s.OperationName, s.SpanID)
}

// jaegerGet decodes a query API answer.
func (s *stack) jaegerGet(path string, q url.Values) ([]jTrace, error) {
	u := s.jaegerURL + path
	if q != nil {
		u += "?" + q.Encode()
	}
	resp, err := s.http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == 404 {
		return nil, nil
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %s", resp.Status, body)
	}
	var out struct {
		Data []jTrace `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	for i := range out.Data {
		tr := &out.Data[i]
		for j := range tr.Spans {
			tr.Spans[j].service = tr.Processes[tr.Spans[j].ProcessID].ServiceName
		}
	}
	return out.Data, nil
}

// trace fetches one trace by id (nil when Jaeger does not have it yet).
func (s *stack) trace(id string) (*jTrace, error) {
	trs, err := s.jaegerGet("/api/traces/"+id, nil)
	if err != nil || len(trs) == 0 {
		return nil, err
	}
	return &trs[0], nil
}

// serviceTraces returns the recent traces with spans of service.
func (s *stack) serviceTraces(service string) ([]jTrace, error) {
	return s.jaegerGet("/api/traces", url.Values{"service": {service}, "limit": {"5000"}, "lookback": {"2h"}})
}

// waitTrace polls Jaeger until trace id satisfies ready (spans arrive from
// several processes at different times).
func (s *stack) waitTrace(t *testing.T, id string, ready func(*jTrace) string) *jTrace {
	t.Helper()
	var tr *jTrace
	poll(t, 45*time.Second, "trace "+id, func() (bool, string) {
		var err error
		if tr, err = s.trace(id); err != nil {
			return false, err.Error()
		}
		if tr == nil {
			return false, "not in jaeger yet"
		}
		if why := ready(tr); why != "" {
			return false, why + "\n" + dumpTrace(tr)
		}
		return true, ""
	})
	return tr
}

// findTrace polls the traces of service until one satisfies match.
func (s *stack) findTrace(t *testing.T, service, what string, timeout time.Duration, match func(*jTrace) bool) *jTrace {
	t.Helper()
	var found *jTrace
	poll(t, timeout, what, func() (bool, string) {
		trs, err := s.serviceTraces(service)
		if err != nil {
			return false, err.Error()
		}
		for i := range trs {
			if match(&trs[i]) {
				found = &trs[i]
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d traces of %s, none matches", len(trs), service)
	})
	return found
}

func (tr *jTrace) span(match func(*jSpan) bool) *jSpan {
	for i := range tr.Spans {
		if match(&tr.Spans[i]) {
			return &tr.Spans[i]
		}
	}
	return nil
}

// root returns the trace's first span without a parent in the trace.
func (tr *jTrace) root() *jSpan {
	return tr.span(func(s *jSpan) bool { return s.parent() == "" })
}

func (tr *jTrace) byID(id string) *jSpan {
	return tr.span(func(s *jSpan) bool { return s.SpanID == id })
}

// ancestorOf reports whether a is b or one of b's ancestors.
func (tr *jTrace) ancestorOf(a, b *jSpan) bool {
	for cur, n := b, 0; cur != nil && n < 100; n++ {
		if cur.SpanID == a.SpanID {
			return true
		}
		cur = tr.byID(cur.parent())
	}
	return false
}

func dumpTrace(tr *jTrace) string {
	var b strings.Builder
	for i := range tr.Spans {
		s := &tr.Spans[i]
		fmt.Fprintf(&b, "  %s parent=%s refs=%v\n", s, s.parent(), s.References)
	}
	return b.String()
}

// checkConnected fails t unless the trace is one tree: exactly one root,
// and every other span's parent is in the trace.
func checkConnected(t *testing.T, tr *jTrace) {
	t.Helper()
	roots := 0
	for i := range tr.Spans {
		s := &tr.Spans[i]
		p := s.parent()
		if p == "" {
			roots++
			continue
		}
		if tr.byID(p) == nil {
			t.Errorf("trace %s: span %s has parent %s, which is not in the trace\n%s", tr.TraceID, s, p, dumpTrace(tr))
		}
	}
	if roots != 1 {
		t.Errorf("trace %s has %d roots, want 1\n%s", tr.TraceID, roots, dumpTrace(tr))
	}
}

// checkMessaging fails t unless s carries the messaging attributes of a
// NATS span whose destination starts with prefix.
func checkMessaging(t *testing.T, s *jSpan, prefix string) {
	t.Helper()
	if got := s.tag("messaging.system"); got != "nats" {
		t.Errorf("%s: messaging.system = %q, want nats", s, got)
	}
	if got := s.tag("messaging.destination.name"); !strings.HasPrefix(got, prefix) {
		t.Errorf("%s: messaging.destination.name = %q, want prefix %q", s, got, prefix)
	}
	if s.tag("messaging.operation.type") == "" {
		t.Errorf("%s: no messaging.operation.type", s)
	}
}

// requestTrace checks the trace of one host invocation: the e2e host's
// client span is the parent of the plugin's server span in another
// process, the whole trace is one tree, and the server span carries the
// messaging attributes. It returns the server span.
func requestTrace(t *testing.T, tr *jTrace, plugin string) *jSpan {
	t.Helper()
	checkConnected(t, tr)
	client := tr.span(func(s *jSpan) bool { return s.service == hostService && s.kind() == "client" })
	server := tr.span(func(s *jSpan) bool { return s.service == plugin && s.kind() == "server" })
	if client == nil || server == nil {
		t.Fatalf("trace %s: want a %s client span and a %s server span\n%s", tr.TraceID, hostService, plugin, dumpTrace(tr))
	}
	if server.parent() != client.SpanID {
		t.Errorf("%s: parent %s, want the host's client span %s (across the process boundary)", server, server.parent(), client)
	}
	if tr.Processes[server.ProcessID].ServiceName == tr.Processes[client.ProcessID].ServiceName {
		t.Errorf("client and server spans come from the same process")
	}
	checkMessaging(t, client, "langbot.plugin."+plugin+".")
	checkMessaging(t, server, "langbot.plugin."+plugin+".")
	return server
}

// hostSend returns the span of the plugin's send_message host action that
// descends from under, failing t when there is none.
func hostSend(t *testing.T, tr *jTrace, plugin string, under *jSpan) *jSpan {
	t.Helper()
	send := tr.span(func(s *jSpan) bool {
		return s.service == plugin && s.kind() == "client" &&
			strings.HasPrefix(s.tag("messaging.destination.name"), "langbot.host.send_message.") && tr.ancestorOf(under, s)
	})
	if send == nil {
		t.Fatalf("trace %s: no %s send_message client span under %s\n%s", tr.TraceID, plugin, under, dumpTrace(tr))
	}
	checkMessaging(t, send, "langbot.host.send_message.")
	return send
}

// isHTTPClient reports whether s is an outgoing HTTP call (the GitHub API).
func isHTTPClient(s *jSpan) bool {
	return s.kind() == "client" && (s.tag("http.request.method") != "" || s.tag("http.method") != "")
}
