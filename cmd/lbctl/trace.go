package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
)

// runTrace fetches one trace from Jaeger's HTTP query API and prints it as
// an indented tree: service, span kind, operation, start offset and
// duration of every span, and the links a span has to other traces (a
// scheduled delivery links to the invocation that scheduled it).
func runTrace(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	fs.SetOutput(io.err)
	def := io.getenv("JAEGER_URL")
	if def == "" {
		def = "http://localhost:16686"
	}
	jaeger := fs.String("jaeger", def, "Jaeger query URL (JAEGER_URL)")
	attrs := fs.Bool("attrs", false, "also print each span's attributes")
	timeout := fs.Duration("timeout", 10*time.Second, "HTTP timeout")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: lbctl trace <trace-id> [--jaeger URL] [--attrs]")
		fs.PrintDefaults()
	}
	// the trace id may come before or after the flags
	if err := fs.Parse(args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return errors.New("a trace id is required")
	}
	id := rest[0]
	if err := fs.Parse(rest[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if !traceIDRE.MatchString(id) {
		return fmt.Errorf("%q is not a trace id (16 or 32 hex digits)", id)
	}
	client := &http.Client{Timeout: *timeout}
	tr, err := fetchJaegerTrace(ctx, client, *jaeger, strings.ToLower(id))
	if err != nil {
		return err
	}
	printTraceTree(io.out, tr, *attrs)
	return nil
}

var traceIDRE = regexp.MustCompile(`^[0-9a-fA-F]{16}([0-9a-fA-F]{16})?$`)

// jaegerTrace is one trace as Jaeger's query API (/api/traces) returns it.
type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
}

type jaegerSpan struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []jaegerRef `json:"references"`
	StartTime     int64       `json:"startTime"` // microseconds since the epoch
	Duration      int64       `json:"duration"`  // microseconds
	Tags          []jaegerTag `json:"tags"`
	ProcessID     string      `json:"processID"`
}

type jaegerRef struct {
	RefType string `json:"refType"` // CHILD_OF or FOLLOWS_FROM
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerTag struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type jaegerProcess struct {
	ServiceName string      `json:"serviceName"`
	Tags        []jaegerTag `json:"tags"`
}

// fetchJaegerTrace reads base/api/traces/<id>.
func fetchJaegerTrace(ctx context.Context, client *http.Client, base, id string) (*jaegerTrace, error) {
	u, err := url.Parse(strings.TrimRight(base, "/") + "/api/traces/" + url.PathEscape(id))
	if err != nil {
		return nil, fmt.Errorf("--jaeger: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jaeger: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("jaeger: %w", err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("jaeger: trace %s not found", id)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jaeger: %s: %s", resp.Status, firstLine(string(body)))
	}
	var out struct {
		Data []jaegerTrace `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("jaeger: malformed reply: %w", err)
	}
	if len(out.Data) == 0 || len(out.Data[0].Spans) == 0 {
		return nil, fmt.Errorf("jaeger: trace %s not found", id)
	}
	return &out.Data[0], nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// tag returns the value of a span tag as text ("" when absent).
func (s *jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// parent returns the span id of s's parent in the same trace ("" for a
// root).
func (s *jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" && r.TraceID == s.TraceID {
			return r.SpanID
		}
	}
	return ""
}

// printTraceTree writes tr as a tree. Spans whose parent is not in the
// trace (it was not exported, or belongs to a process that does not trace)
// are printed as roots.
func printTraceTree(w io.Writer, tr *jaegerTrace, attrs bool) {
	byID := make(map[string]*jaegerSpan, len(tr.Spans))
	for i := range tr.Spans {
		byID[tr.Spans[i].SpanID] = &tr.Spans[i]
	}
	children := map[string][]*jaegerSpan{}
	var roots []*jaegerSpan
	start, end := int64(0), int64(0)
	services := map[string]bool{}
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if p := s.parent(); p != "" && byID[p] != nil && p != s.SpanID {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
		if start == 0 || s.StartTime < start {
			start = s.StartTime
		}
		end = max(end, s.StartTime+s.Duration)
		services[tr.Processes[s.ProcessID].ServiceName] = true
	}
	byStart := func(l []*jaegerSpan) {
		sort.SliceStable(l, func(i, j int) bool { return l[i].StartTime < l[j].StartTime })
	}
	byStart(roots)
	names := make([]string, 0, len(services))
	for n := range services {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "trace %s: %d spans, %s, %s\n", tr.TraceID, len(tr.Spans), strings.Join(names, ", "), micros(end-start))

	var walk func(s *jaegerSpan, prefix string, last bool)
	walk = func(s *jaegerSpan, prefix string, last bool) {
		branch, next := "├─ ", "│  "
		if last {
			branch, next = "└─ ", "   "
		}
		kind := s.tag("span.kind")
		if kind == "" {
			kind = "internal"
		}
		status := ""
		if s.tag("error") == "true" || s.tag("otel.status_code") == "ERROR" {
			status = " ERROR"
			if d := s.tag("otel.status_description"); d != "" {
				status += " (" + d + ")"
			}
		}
		fmt.Fprintf(w, "%s%s%s [%s] %s  +%s %s%s\n", prefix, branch, tr.Processes[s.ProcessID].ServiceName, kind,
			s.OperationName, micros(s.StartTime-start), micros(s.Duration), status)
		for _, r := range s.References {
			if r.RefType == "FOLLOWS_FROM" || r.TraceID != s.TraceID {
				fmt.Fprintf(w, "%s%s  ↪ linked to trace %s span %s\n", prefix, next, r.TraceID, r.SpanID)
			}
		}
		if attrs {
			tags := append([]jaegerTag(nil), s.Tags...)
			sort.Slice(tags, func(i, j int) bool { return tags[i].Key < tags[j].Key })
			for _, t := range tags {
				fmt.Fprintf(w, "%s%s  · %s=%v\n", prefix, next, t.Key, t.Value)
			}
		}
		kids := children[s.SpanID]
		byStart(kids)
		for i, c := range kids {
			walk(c, prefix+next, i == len(kids)-1)
		}
	}
	for i, r := range roots {
		walk(r, "", i == len(roots)-1)
	}
}

// micros formats a duration given in microseconds.
func micros(us int64) string {
	d := time.Duration(us) * time.Microsecond
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", us)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(us)/1e3)
	default:
		return fmt.Sprintf("%.3fs", d.Seconds())
	}
}
