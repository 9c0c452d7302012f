package githubkit_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// rssKB reads the process's resident set size.
func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc // live bytes after GC
}

// BenchmarkPollScale is the scale test: 1,000 installations x 3
// subscribed repositories, review reminders on in every chat, one 60 s interval of polls per iteration against
// the fake GitHub answering 304. The fires of an interval are published at
// once (the schedules themselves are at 3600 s so they stay out of the
// way), so the CPU figure is the work of one interval divided by 60 s.
// The process also hosts the embedded NATS server and the fake GitHub, so
// CPU and memory are upper bounds for the service alone.
func BenchmarkPollScale(b *testing.B) {
	const reposPer = 3
	installs := 1000
	if n, err := strconv.Atoi(os.Getenv("GITHUBKIT_BENCH_INSTALLS")); err == nil && n > 0 {
		installs = n // quicker runs while working on the service
	}
	srv := bustest.NewBenchServer(b)
	floor := bustest.MeasureFloor(b, srv, 300)
	h := newBenchHarness(b, srv)
	ctx := context.Background()

	h.regUsed = true // the setup instance's metrics are not read
	setup := h.start(githubkit.Config{PollWorkers: 16}, nil)

	var insts []*inst
	for i := range installs {
		in := newInst(b, fmt.Sprintf("n%04d", i), h.baseConfig("en_US", fmt.Sprintf("token-%d", i%50), 3600))
		insts = append(insts, in)
		if _, err := bus.PublishAttach(ctx, h.js, wire.Subjects{}, githubkit.Plugin, wire.Attach{Binding: in.b, Config: in.config(), Enabled: true}, ""); err != nil {
			b.Fatal(err)
		}
	}
	bustest.WaitLifecycle(h.t, h.js, wire.Subjects{}, githubkit.Plugin, 10*time.Second)
	repoName := func(i, j int) string { return fmt.Sprintf("org%d/repo%d", i%97, i*reposPer+j) }
	for i := range installs {
		for j := range reposPer {
			h.fake.AddRepo(repoName(i, j), 0)
			h.addEvents(repoName(i, j), 100, "watch")
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var failed sync.Once
	for i, in := range insts {
		for j := range reposPer {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				text, err := h.cmdID(in, h.newID(), "sub "+repoName(i, j))
				if err != nil || !strings.Contains(text, "Subscribed") {
					failed.Do(func() { b.Errorf("sub: %q %v", text, err) })
				}
			}()
		}
	}
	wg.Wait()
	// review reminders on for every chat (issue 30): they must not change
	// what an interval of polls costs
	for _, in := range insts {
		if text, err := h.cmdID(in, h.newID(), "reviews 09:30"); err != nil || !strings.Contains(text, "09:30") {
			b.Fatalf("reviews: %q %v", text, err)
		}
	}
	if b.Failed() {
		return
	}
	// one priming interval: the first poll of each repo fetches the feed
	// and stores its ETag; later intervals are 304s
	fireAll := func() {
		var last jetstream.PubAckFuture
		for i, in := range insts {
			for j := range reposPer {
				f, err := h.js.PublishAsync(h.pollSubject(in.sc, repoName(i, j)), []byte(`{"v":1}`))
				if err != nil {
					b.Fatal(err)
				}
				last = f
			}
		}
		select {
		case <-h.js.PublishAsyncComplete():
		case <-time.After(30 * time.Second):
			b.Fatal("publish stalled")
		}
		seq := (<-last.Ok()).Sequence
		deadline := time.Now().Add(5 * time.Minute)
		for {
			c, err := h.js.Consumer(ctx, githubkit.StreamName, githubkit.PollConsumer)
			if err == nil {
				if info, err := c.Info(ctx); err == nil && info.AckFloor.Stream >= seq && info.NumAckPending == 0 && info.NumPending == 0 {
					return
				}
			}
			if time.Now().After(deadline) {
				b.Fatal("polls did not finish")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	fireAll()
	// Memory: stop the instance that built the state, measure the process
	// (NATS server, fake GitHub, their data), then serve every interval with
	// a fresh instance; what the process gains is the service's own.
	h.stop(setup)
	h.fake.ResetRequests() // the fake's request log is not the service's memory
	rssBase, heapBase, gBase := rssKB(), heapInuse(), runtime.NumGoroutine()
	if path := os.Getenv("GITHUBKIT_BENCH_HEAPPROFILE"); path != "" {
		if f, err := os.Create(path + ".base"); err == nil {
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	h.regUsed = false
	h.start(githubkit.Config{PollWorkers: 16}, nil)
	rssSvc, heapSvc, gSvc := rssKB(), heapInuse(), runtime.NumGoroutine()
	fireAll() // warm: every installation's authority and records seen once
	h.fake.ResetRequests()
	rssLoaded, heapLoaded, gLoaded := rssKB(), heapInuse(), runtime.NumGoroutine()
	if path := os.Getenv("GITHUBKIT_BENCH_HEAPPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			runtime.GC()
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	if os.Getenv("GITHUBKIT_BENCH_GOROUTINES") != "" {
		buf := make([]byte, 1<<22)
		n := runtime.Stack(buf, true)
		_ = os.WriteFile(os.Getenv("GITHUBKIT_BENCH_GOROUTINES"), buf[:n], 0o644)
	}

	ghReqs := h.metric("githubkit_github_requests_total", nil)
	notModified := h.metric("githubkit_polls_total", map[string]string{"outcome": "not_modified"})
	b.ResetTimer()
	cpu0, wall0 := cpuTime(), time.Now()
	for range b.N {
		fireAll()
	}
	b.StopTimer()
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	repos := float64(installs * reposPer)
	reqs := h.metric("githubkit_github_requests_total", nil) - ghReqs
	if n := float64(len(h.fake.Requests())); n != reqs {
		b.Fatalf("the fake saw %v requests, the service counted %v", n, reqs)
	}
	nm := h.metric("githubkit_polls_total", map[string]string{"outcome": "not_modified"}) - notModified
	b.ReportMetric(reqs/repos/float64(b.N), "gh-req/repo/interval")
	b.ReportMetric(nm/repos/float64(b.N), "304-share")
	b.ReportMetric(100*cpu.Seconds()/float64(b.N)/60, "cpu-%-of-60s")
	b.ReportMetric(wall.Seconds()/float64(b.N), "wall-s/interval")
	b.ReportMetric(float64(rssLoaded-rssBase)/float64(installs), "rss-kB/installation")
	b.ReportMetric(float64(int64(heapLoaded)-int64(heapBase))/float64(installs), "heap-B/installation")
	b.ReportMetric(float64(gLoaded-gSvc), "goroutines-added-by-load")
	floor.Report(b)
	b.Logf("floor: %s", floor)
	b.Logf("rss: without service %d kB, service idle %d kB, after an interval %d kB; heap: %d, %d, %d; goroutines %d/%d/%d",
		rssBase, rssSvc, rssLoaded, heapBase, heapSvc, heapLoaded, gBase, gSvc, gLoaded)
}

func newBenchHarness(b *testing.B, srv *bustest.Server) *harness {
	// harness takes *testing.T; the bench uses the same helpers through a
	// T-shaped adapter.
	return newHarnessTB(b, srv, srv.Conn(b))
}
