package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/busbench"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Targets of the invocation benchmark, as ratios to the bus floor
// with one KV read measured in the same run.
const (
	benchTargetP50     = 1.5 // p50 at most 1.5x the KV-read floor's
	benchTargetRate32  = 0.5 // throughput at 32 in flight at least 0.5x the floor's
	benchFloorBucket   = "lbctl_bench_floor"
	benchDefaultScopes = "bench-instance.bench-workspace"
)

// benchCase is one cheap, read-only invocation of a plugin.
type benchCase struct {
	Plugin string
	Label  string
	Config string
	req    func(b binding.Binding, cfg json.RawMessage) (wire.Endpoint, *wire.Request)
}

func benchCases() []benchCase {
	sess := wire.Session{LauncherType: wire.LauncherPerson, LauncherID: "bench-user", SenderID: "bench-user", BotUUID: "bench-bot"}
	command := func(text string) func(binding.Binding, json.RawMessage) (wire.Endpoint, *wire.Request) {
		prefix, word, params, _ := parseCommandText(text)
		return func(b binding.Binding, cfg json.RawMessage) (wire.Endpoint, *wire.Request) {
			return wire.EndpointCommand, &wire.Request{Binding: b, Config: cfg, Command: &wire.Command{
				Name: word, Params: params, FullText: text, Prefix: prefix, Session: sess, Privilege: 1, QueryUUID: "bench"}}
		}
	}
	return []benchCase{
		{Plugin: "githubkit", Label: "command !gh help", Config: `{"language":"en_US"}`, req: command("!gh help")},
		{Plugin: "schenotify", Label: "command !sche (list)", Config: `{"language":"en_US","timezone":"UTC"}`, req: command("!sche")},
		{Plugin: "schenotify", Label: "tool get_current_time_str", Config: `{"language":"en_US","timezone":"UTC"}`,
			req: func(b binding.Binding, cfg json.RawMessage) (wire.Endpoint, *wire.Request) {
				return wire.EndpointTool, &wire.Request{Binding: b, Config: cfg, Tool: &wire.Tool{
					Name: "get_current_time_str", Parameters: json.RawMessage(`{}`), Session: sess, QueryUUID: "bench"}}
			}},
		{Plugin: "takeover", Label: "page GET /info", Config: `{}`,
			req: func(b binding.Binding, cfg json.RawMessage) (wire.Endpoint, *wire.Request) {
				return wire.EndpointPage, &wire.Request{Binding: b, Config: cfg, Page: &wire.Page{
					PageID: "console", Endpoint: "/info", Method: "GET", Body: json.RawMessage(`{}`)}}
			}},
		{Plugin: "takeover", Label: "page GET /sessions", Config: `{}`,
			req: func(b binding.Binding, cfg json.RawMessage) (wire.Endpoint, *wire.Request) {
				return wire.EndpointPage, &wire.Request{Binding: b, Config: cfg, Page: &wire.Page{
					PageID: "console", Endpoint: "/sessions", Method: "GET", Body: json.RawMessage(`{}`)}}
			}},
	}
}

// benchResult is what one row of the table measured.
type benchResult struct {
	busbench.Result
	Skip, Failed string
}

func runBenchInvoke(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("bench invoke", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	n := fs.Int("n", 2000, "operations per measurement")
	inflight := fs.Int("inflight", 32, "operations in flight for the throughput measurement")
	plugins := fs.String("plugins", "githubkit,takeover,schenotify", "plugins to measure (comma-separated)")
	scopes := fs.String("scope-prefix", benchDefaultScopes, "<instance>.<workspace> of the bench installations (installation bench-<plugin>)")
	replicas := fs.Int("replicas", 1, "replicas of the floor's KV bucket")
	markdown := fs.Bool("markdown", false, "print the table as Markdown")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: lbctl bench invoke [--nats URL] [--n N] [--inflight 32] [--plugins a,b] [--markdown]")
		fmt.Fprintln(io.err, "Attaches one installation per plugin, measures the bus floor and each plugin's cheapest read-only")
		fmt.Fprintln(io.err, "invocations against the same server, and prints latency and throughput with ratios to the floor.")
		fmt.Fprintln(io.err, "The user needs the JetStream API for the floor's KV bucket (in the deployment's accounts: admin).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 10 || *inflight < 1 {
		return errors.New("--n must be at least 10 and --inflight at least 1")
	}
	want := map[string]bool{}
	for _, p := range strings.Split(*plugins, ",") {
		if p = strings.TrimSpace(p); p != "" {
			want[p] = true
		}
	}
	nc, subj, err := conn.connect(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	// the floor's responders live on their own connection, as a service's do
	srv, _, err := conn.connect(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()

	fmt.Fprintf(io.out, "lbctl bench invoke: n=%d per measurement, %d in flight, GOMAXPROCS %d, server %s\n\n",
		*n, *inflight, runtime.GOMAXPROCS(0), nc.ConnectedUrlRedacted())
	// the floor pkg/bus/bustest measures for the benchmarks, on the same
	// server and connections as the invocations
	floor, err := busbench.MeasureFloor(ctx, nc, srv, busbench.FloorConfig{
		N: *n, Inflight: *inflight, Bucket: benchFloorBucket, Replicas: *replicas, Prefix: "lbctl.bench"})
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	echo, kvEcho := benchResult{Result: floor.Echo}, benchResult{Result: floor.KVEcho}

	iv := bus.NewInvoker(nc, subj, nil)
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	var rows []benchCase
	var results []benchResult
	attached := map[string]error{}
	for _, c := range benchCases() {
		if !want[c.Plugin] {
			continue
		}
		rows = append(rows, c)
		scope := *scopes + ".bench-" + c.Plugin
		bf := &bindingFlags{scope: scope, gen: 1, rev: 1, digest: "sha256:bench"}
		b, err := bf.binding()
		if err != nil {
			return fmt.Errorf("--scope-prefix: %w", err)
		}
		cfg := json.RawMessage(c.Config)
		op := func() error {
			ep, req := c.req(b, cfg)
			_, err := iv.Invoke(ctx, c.Plugin, ep, bus.NewInvocationID(), req)
			return err
		}
		if _, done := attached[c.Plugin]; !done {
			attached[c.Plugin] = benchAttach(ctx, js, subj, c.Plugin, b, cfg, op)
		}
		if err := attached[c.Plugin]; err != nil {
			results = append(results, benchResult{Skip: err.Error()})
			continue
		}
		results = append(results, benchMeasure(*n, *inflight, op))
	}
	printBench(io.out, *inflight, echo, kvEcho, rows, results, *markdown)
	for i, r := range results {
		if r.Failed != "" {
			return fmt.Errorf("%s %s: %s", rows[i].Plugin, rows[i].Label, r.Failed)
		}
	}
	return nil
}

// benchAttach attaches the bench installation of plugin and waits until
// the service serves it (the lifecycle consumer applied the attach).
func benchAttach(ctx context.Context, js jetstream.JetStream, subj wire.Subjects, plugin string, b binding.Binding, cfg json.RawMessage, op func() error) error {
	if _, err := bus.PublishAttach(ctx, js, subj, plugin, wire.Attach{Binding: b, Config: cfg, Enabled: true}, ""); err != nil {
		return fmt.Errorf("attach: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := op()
		if err == nil {
			return nil
		}
		if errors.Is(err, bus.ErrNoService) {
			return errors.New("not running (no responders)")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not served after attach: %v", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// benchMeasure measures op with busbench.Measure; a failure goes into the
// result, so that the table shows it beside the other rows.
func benchMeasure(n, inflight int, op func() error) benchResult {
	r, err := busbench.Measure(n, inflight, op)
	if err != nil {
		return benchResult{Result: r, Failed: err.Error()}
	}
	return benchResult{Result: r}
}

func printBench(w io.Writer, inflight int, echo, kvEcho benchResult, rows []benchCase, results []benchResult, markdown bool) {
	us := func(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d.Nanoseconds())/1e3) }
	rate := func(f float64) string { return fmt.Sprintf("%.0f/s", f) }
	head := []string{"invocation", "p50@1", "p99@1", "rate@1", fmt.Sprintf("p50@%d", inflight), fmt.Sprintf("p99@%d", inflight),
		fmt.Sprintf("rate@%d", inflight), "p50/floor", fmt.Sprintf("rate@%d/floor", inflight), "targets"}
	var lines [][]string
	line := func(name string, r benchResult) []string {
		return []string{name, us(r.P50), us(r.P99), rate(r.Rate1), us(r.P50N), us(r.P99N), rate(r.RateN)}
	}
	lines = append(lines, append(line("floor: echo", echo), "", "", ""))
	lines = append(lines, append(line("floor: echo + KV read", kvEcho), "1.00x", "1.00x", "(reference)"))
	for i, c := range rows {
		r := results[i]
		name := c.Plugin + " " + c.Label
		switch {
		case r.Skip != "":
			lines = append(lines, []string{name, "SKIP: " + r.Skip, "", "", "", "", "", "", "", ""})
			continue
		case r.Failed != "":
			lines = append(lines, []string{name, "FAILED: " + r.Failed, "", "", "", "", "", "", "", ""})
			continue
		}
		p50r := float64(r.P50) / float64(kvEcho.P50)
		rater := r.RateN / kvEcho.RateN
		verdict := "met"
		if p50r > benchTargetP50 || rater < benchTargetRate32 {
			verdict = "MISSED"
		}
		lines = append(lines, append(line(name, r), fmt.Sprintf("%.2fx", p50r), fmt.Sprintf("%.2fx", rater), verdict))
	}
	if markdown {
		fmt.Fprintln(w, "| "+strings.Join(head, " | ")+" |")
		fmt.Fprintln(w, "|"+strings.Repeat("---|", len(head)))
		for _, l := range lines {
			fmt.Fprintln(w, "| "+strings.Join(l, " | ")+" |")
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, l := range lines {
			fmt.Fprintln(tw, strings.Join(l, "\t"))
		}
		_ = tw.Flush()
	}
	fmt.Fprintf(w, "\ntargets: p50 <= %.1fx the echo+KV floor's p50; rate@%d >= %.1fx the echo+KV floor's rate@%d\n",
		benchTargetP50, inflight, benchTargetRate32, inflight)
}
