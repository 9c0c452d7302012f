package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
)

// Targets of the invocation benchmark (issue 7), as ratios to the bus floor
// with one KV read measured in the same run.
const (
	benchTargetP50     = 1.5 // p50 at most 1.5x the KV-read floor's
	benchTargetRate32  = 0.5 // throughput at 32 in flight at least 0.5x the floor's
	benchFloorBucket   = "lbctl_bench_floor"
	benchFloorKey      = "k"
	benchDefaultScopes = "bench-instance.bench-workspace"
)

// benchCase is one cheap, read-only invocation of a plugin.
type benchCase struct {
	Plugin string
	Label  string
	Config string
	req    func(b binding.Binding, cfg json.RawMessage) (bus.Endpoint, *bus.Request)
}

func benchCases() []benchCase {
	sess := bus.Session{LauncherType: bus.LauncherPerson, LauncherID: "bench-user", SenderID: "bench-user", BotUUID: "bench-bot"}
	command := func(text string) func(binding.Binding, json.RawMessage) (bus.Endpoint, *bus.Request) {
		prefix, word, params, _ := parseCommandText(text)
		return func(b binding.Binding, cfg json.RawMessage) (bus.Endpoint, *bus.Request) {
			return bus.EndpointCommand, &bus.Request{Binding: b, Config: cfg, Command: &bus.Command{
				Name: word, Params: params, FullText: text, Prefix: prefix, Session: sess, Privilege: 1, QueryUUID: "bench"}}
		}
	}
	return []benchCase{
		{Plugin: "githubkit", Label: "command !gh help", Config: `{"language":"en_US"}`, req: command("!gh help")},
		{Plugin: "schenotify", Label: "command !sche (list)", Config: `{"language":"en_US","timezone":"UTC"}`, req: command("!sche")},
		{Plugin: "schenotify", Label: "tool get_current_time_str", Config: `{"language":"en_US","timezone":"UTC"}`,
			req: func(b binding.Binding, cfg json.RawMessage) (bus.Endpoint, *bus.Request) {
				return bus.EndpointTool, &bus.Request{Binding: b, Config: cfg, Tool: &bus.Tool{
					Name: "get_current_time_str", Parameters: json.RawMessage(`{}`), Session: sess, QueryUUID: "bench"}}
			}},
		{Plugin: "takeover", Label: "page GET /info", Config: `{}`,
			req: func(b binding.Binding, cfg json.RawMessage) (bus.Endpoint, *bus.Request) {
				return bus.EndpointPage, &bus.Request{Binding: b, Config: cfg, Page: &bus.Page{
					PageID: "console", Endpoint: "/info", Method: "GET", Body: json.RawMessage(`{}`)}}
			}},
		{Plugin: "takeover", Label: "page GET /sessions", Config: `{}`,
			req: func(b binding.Binding, cfg json.RawMessage) (bus.Endpoint, *bus.Request) {
				return bus.EndpointPage, &bus.Request{Binding: b, Config: cfg, Page: &bus.Page{
					PageID: "console", Endpoint: "/sessions", Method: "GET", Body: json.RawMessage(`{}`)}}
			}},
	}
}

// benchResult is what one row of the table measured.
type benchResult struct {
	P50, P99     time.Duration // one in flight
	Rate1        float64       // ops/s, one in flight
	P50x, P99x   time.Duration // `inflight` in flight
	RateN        float64       // ops/s, `inflight` in flight
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
	echo, kvEcho, err := benchFloor(ctx, nc, srv, *n, *inflight, *replicas)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}

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

// benchFloor measures the bus floor like pkg/bus/bustest's MeasureFloor: a
// bare request/reply echo, and an echo whose responder reads one KV key, on
// the same server and connections as the invocations.
func benchFloor(ctx context.Context, cli, srv *nats.Conn, n, inflight, replicas int) (echo, kvEcho benchResult, err error) {
	js, err := jetstream.New(srv)
	if err != nil {
		return echo, kvEcho, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: benchFloorBucket, Storage: jetstream.FileStorage, Replicas: replicas})
	if err != nil {
		return echo, kvEcho, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = js.DeleteKeyValue(dctx, benchFloorBucket)
	}()
	if _, err := kv.Put(ctx, benchFloorKey, []byte(`{"state":"active"}`)); err != nil {
		return echo, kvEcho, err
	}
	base := "lbctl.bench." + nats.NewInbox()[len(nats.InboxPrefix):]
	e, err := srv.Subscribe(base+".echo", func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		return echo, kvEcho, err
	}
	defer e.Unsubscribe()
	k, err := srv.Subscribe(base+".kv", func(m *nats.Msg) {
		v, err := kv.Get(ctx, benchFloorKey)
		if err != nil {
			_ = m.Respond(nil)
			return
		}
		_ = m.Respond(v.Value())
	})
	if err != nil {
		return echo, kvEcho, err
	}
	defer k.Unsubscribe()
	if err := srv.Flush(); err != nil {
		return echo, kvEcho, err
	}
	payload := []byte(`{"binding":{},"command":{"name":"x"}}`)
	req := func(subject string) func() error {
		return func() error {
			m, err := cli.Request(subject, payload, 5*time.Second)
			if err == nil && len(m.Data) == 0 {
				err = errors.New("empty reply")
			}
			return err
		}
	}
	echo = benchMeasure(n, inflight, req(base+".echo"))
	kvEcho = benchMeasure(n, inflight, req(base+".kv"))
	if echo.Failed != "" || kvEcho.Failed != "" {
		return echo, kvEcho, fmt.Errorf("%s%s", echo.Failed, kvEcho.Failed)
	}
	return echo, kvEcho, nil
}

// benchAttach attaches the bench installation of plugin and waits until
// the service serves it (the lifecycle consumer applied the attach).
func benchAttach(ctx context.Context, js jetstream.JetStream, subj bus.Subjects, plugin string, b binding.Binding, cfg json.RawMessage, op func() error) error {
	if _, err := bus.PublishAttach(ctx, js, subj, plugin, bus.Attach{Binding: b, Config: cfg, Enabled: true}, ""); err != nil {
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

// benchMeasure warms up, then measures op one at a time and `inflight` at
// a time, n operations each.
func benchMeasure(n, inflight int, op func() error) benchResult {
	var r benchResult
	for range max(n/10, 10) {
		if err := op(); err != nil {
			r.Failed = "warm-up: " + err.Error()
			return r
		}
	}
	lat, rate, err := benchRun(n, 1, op)
	if err != nil {
		r.Failed = err.Error()
		return r
	}
	r.P50, r.P99, r.Rate1 = benchPercentile(lat, 50), benchPercentile(lat, 99), rate
	if lat, rate, err = benchRun(n, inflight, op); err != nil {
		r.Failed = err.Error()
		return r
	}
	r.P50x, r.P99x, r.RateN = benchPercentile(lat, 50), benchPercentile(lat, 99), rate
	return r
}

// benchRun runs n operations with `inflight` at once; it returns every
// operation's latency and the operations per second.
func benchRun(n, inflight int, op func() error) ([]time.Duration, float64, error) {
	lat := make([]time.Duration, n)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := time.Now()
				err := op()
				lat[i] = time.Since(t)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return lat, float64(n) / time.Since(start).Seconds(), firstErr
}

// benchPercentile returns the p-th percentile (0-100) of d; it sorts d.
func benchPercentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[int(float64(len(d)-1)*p/100)]
}

func printBench(w io.Writer, inflight int, echo, kvEcho benchResult, rows []benchCase, results []benchResult, markdown bool) {
	us := func(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d.Nanoseconds())/1e3) }
	rate := func(f float64) string { return fmt.Sprintf("%.0f/s", f) }
	head := []string{"invocation", "p50@1", "p99@1", "rate@1", fmt.Sprintf("p50@%d", inflight), fmt.Sprintf("p99@%d", inflight),
		fmt.Sprintf("rate@%d", inflight), "p50/floor", fmt.Sprintf("rate@%d/floor", inflight), "targets"}
	var lines [][]string
	line := func(name string, r benchResult) []string {
		return []string{name, us(r.P50), us(r.P99), rate(r.Rate1), us(r.P50x), us(r.P99x), rate(r.RateN)}
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
